/**
 * The console's Translations section in a real browser (Debian's chromium driven by
 * playwright-core): a translator of `web-shop` signs in, sees the project's bundles with counts,
 * the estate-shared `common` and the attached package bundle `@ops/ui-kit`; edits in the grid
 * (search, missing only, fill a missing text, approve a pre-translated one); overrides a shared
 * key beside its shared value; moves the attachment to 1.1.0 and sees the dropped key flagged
 * removed with its override kept. Screenshots go to test/artifacts/ (gitignored).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { type Browser, type BrowserContext } from "playwright-core";
import { launchChromium, shot } from "./chromium";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { tr, putEntry, createBundle, claimNpm, publishNpm } from "./support/translations";

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let dana: Person;
let kit = 0;
const SHOP = "web-shop";

beforeAll(async () => {
  t = await createTestApp();
  makeProject(t, SHOP);
  makeProject(t, "platform");
  dana = await makePerson(t, [{ role: "developer", project: SHOP }], { email: "dana@ops.test", displayName: "Dana", password: "correct-horse-battery" });
  const pat = await makePerson(t, [{ role: "developer", project: "platform" }]);
  // web-shop's own bundle: English source, French partly translated, one text awaiting review.
  await createBundle(t, SHOP, dana, { name: SHOP });
  const own = (namespace: string, key: string, locale: string, value: string, status?: "review") => putEntry(t, SHOP, dana, { bundle: SHOP, namespace, key, locale, value, status });
  await own("shop", "cart.title", "en", "Your cart");
  await own("shop", "cart.title", "fr", "Votre panier");
  await own("shop", "cart.items", "en", "{count, plural, one {# item} other {# items}}");
  await own("shop", "cart.items", "fr", "{count, plural, one {# article} other {# articles}}", "review");
  await own("shop", "checkout.pay", "en", "Pay {amount}");
  await own("shop", "checkout.done", "en", "Thank you, {name}!");
  await own("shop", "checkout.done", "fr", "Merci, {name} !");
  // platform's estate-shared common and its package bundle @ops/ui-kit (1.1.0 drops dialog.close).
  await createBundle(t, "platform", pat, { name: "common", estate: true });
  await putEntry(t, "platform", pat, { bundle: "common", namespace: "common", key: "save", locale: "en", value: "Save" });
  await putEntry(t, "platform", pat, { bundle: "common", namespace: "common", key: "save", locale: "fr", value: "Enregistrer" });
  await claimNpm(t, "platform", pat, "@ops/ui-kit");
  kit = await createBundle(t, "platform", pat, { name: "", package: "npm:@ops/ui-kit" });
  const trees = {
    "1.0.0": { en: { "ui-kit": { button: { ok: "OK" }, dialog: { close: "Close" } } }, fr: { "ui-kit": { button: { ok: "Valider" }, dialog: { close: "Fermer" } } } },
    "1.1.0": { en: { "ui-kit": { button: { ok: "OK", retry: "Retry" } } }, fr: { "ui-kit": { button: { ok: "Valider", retry: "Réessayer" } } } },
  } as const;
  for (const version of ["1.0.0", "1.1.0"] as const) {
    await publishNpm(t, pat, "@ops/ui-kit", version);
    for (const locale of ["en", "fr"] as const) {
      await expectStatus(await t.request("POST", tr("platform", `/bundles/${kit}/versions`), { token: pat.session, body: { locale, version, tree: trees[version][locale] } }), 200);
    }
  }
  await expectStatus(await t.request("POST", tr(SHOP, "/attachments"), { token: dana.session, body: { bundle: kit, version: "1.0.0" } }), 200);
  await expectStatus(await t.request("PUT", tr(SHOP, `/shared/${kit}/overrides`), { token: dana.session, body: { namespace: "ui-kit", key: "dialog.close", locale: "fr", value: "Quitter" } }), 200);

  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB" });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const entries = async () => expectStatus<Array<{ key: string; values: Record<string, string>; review?: string[] }>>(await t.request("GET", tr(SHOP, `/entries?bundle=${SHOP}`), { token: dana.session }), 200);

describe("the Translations section in chromium", () => {
  test("sign in on the section and see the bundles with counts, the shared bundle and the attachment", async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    await page.goto(`${t.url}/projects/${SHOP}/translations`);
    await page.getByLabel("Email").fill(dana.email);
    await page.getByLabel("Password").fill(dana.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Translations", exact: true }).waitFor();
    const own = page.getByRole("table", { name: "Bundles of this project" });
    await expect(own.getByRole("row", { name: /web-shop own en 4 2 1/ }).count()).resolves.toBe(1);
    await page.getByRole("table", { name: "Estate-shared bundles" }).getByRole("link", { name: "common" }).waitFor();
    const attached = page.getByRole("table", { name: "Attached package bundles" });
    expect(await attached.getByRole("row", { name: /@ops\/ui-kit platform 1\.0\.0 2 1/ }).count()).toBe(1);
    expect(await page.getByLabel("Version of @ops/ui-kit to move to").inputValue()).toBe("1.1.0");
    await shot(page, "translations-overview");
    // The section's styles come through the CSSOM (the page's CSP allows no inline style attributes).
    expect(problems.filter((p) => /Content Security Policy/i.test(p))).toEqual([]);
    await page.close();
  }, 60_000);

  test("the editor grid: search, missing only, fill a missing text, approve a review", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SHOP}/translations`);
    await page.getByRole("link", { name: SHOP, exact: true }).click();
    const grid = page.getByRole("table", { name: `Texts of ${SHOP}` });
    await grid.waitFor();
    expect(await grid.getByRole("columnheader").allInnerTexts()).toEqual(["Key", "ensource", "fr", "Actions"]);
    expect(await grid.locator("tbody tr").count()).toBe(4);
    await expect(page.getByLabel("fr text of shop:cart.items").inputValue()).resolves.toContain("# article");
    await page.getByText("review", { exact: true }).first().waitFor();
    await shot(page, "translations-editor");

    await page.getByLabel("Search keys and texts").fill("merci");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, `table[aria-label="Texts of ${SHOP}"] tbody tr`);
    expect(await grid.locator("tbody tr th").innerText()).toContain("checkout.done");
    await page.getByLabel("Search keys and texts").fill("");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByLabel("Missing only").check();
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, `table[aria-label="Texts of ${SHOP}"] tbody tr`);
    expect(await grid.locator("tbody tr th").innerText()).toContain("checkout.pay");
    await shot(page, "translations-missing-only");

    await page.getByLabel("fr text of shop:checkout.pay").fill("Payer {amount}");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved shop:checkout.pay in fr.").waitFor();
    expect((await entries()).find((e) => e.key === "checkout.pay")?.values.fr).toBe("Payer {amount}");

    // A translation that drops the source's placeholder is refused with the reason.
    await page.getByLabel("Missing only").uncheck();
    await page.getByLabel("fr text of shop:checkout.done").fill("Merci !");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("shop:checkout.done (fr): value: placeholders differ from the source locale (en): it lacks {name}").waitFor();
    await shot(page, "translations-editor-refused");

    await page.getByRole("button", { name: "Approve shop:cart.items in fr" }).click();
    await page.getByText("Approved shop:cart.items in fr.").waitFor();
    expect((await entries()).find((e) => e.key === "cart.items")?.review).toEqual([]);
    await page.close();
  }, 60_000);

  test("a shared key's override beside the shared value; moving the attachment flags the dropped key", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SHOP}/translations/shared/${kit}?locale=fr`);
    const table = page.getByRole("table", { name: "Keys of @ops/ui-kit in fr" });
    await table.waitFor();
    expect(await table.getByRole("row", { name: /dialog\.close/ }).innerText()).toContain("Fermer");
    expect(await page.getByLabel("Override of ui-kit:dialog.close in fr").inputValue()).toBe("Quitter");
    await page.getByLabel("Override of ui-kit:button.ok in fr").fill("D'accord");
    await page.getByRole("button", { name: "Save override" }).click();
    await page.getByText("Override of ui-kit:button.ok saved.").waitFor();
    await shot(page, "translations-shared-overrides");
    expect((await expectStatus(await t.request("GET", tr(SHOP, "/export/fr"), { token: dana.session }), 200))["ui-kit"]).toEqual({ button: { ok: "D'accord" }, dialog: { close: "Quitter" } });

    await page.getByRole("link", { name: "Translations", exact: true }).first().click();
    await page.getByRole("button", { name: "Move" }).click();
    await page.getByText("@ops/ui-kit now follows 1.1.0.").waitFor();
    await page.getByText("1 removed").waitFor();
    await shot(page, "translations-moved");
    await page.getByRole("table", { name: "Attached package bundles" }).getByRole("link", { name: "@ops/ui-kit" }).click();
    const row = page.getByRole("row", { name: /dialog\.close/ });
    await row.getByText("removed").waitFor();
    expect(await page.getByLabel("Override of ui-kit:dialog.close in en").inputValue()).toBe("");
    await page.getByRole("link", { name: "fr", exact: true }).click();
    await page.getByRole("table", { name: "Keys of @ops/ui-kit in fr" }).waitFor();
    expect(await page.getByLabel("Override of ui-kit:dialog.close in fr").inputValue()).toBe("Quitter");
    await shot(page, "translations-shared-removed");
    await page.close();
  }, 60_000);
});
