/**
 * The console's Modules section in a real browser (Debian's chromium driven by playwright-core):
 * a developer of `acme` signs in on the section, sees the modules published at v1.0.0 with their
 * crate, layer, requirements and consumers, opens `alpha` and sees its halves, the versions each
 * registry holds, its consumers and its release notes rendered from Markdown — with the
 * changelog's raw HTML shown as text and its `javascript:` link left as text. A project that
 * published nothing says how to start. Screenshots go to test/artifacts/ (gitignored).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { type Browser, type BrowserContext } from "playwright-core";
import { launchChromium, shot } from "./chromium";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { publishNpm } from "./support/translations";
import { cargoMetadata, cargoPublishBody, crateArchive } from "./support/registries";
import { claimModuleNames, recordPlanForReads } from "./support/modules";
import { recordConsumers } from "../src/domains/modules/service";

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let dana: Person;
const SLUG = "acme";

beforeAll(async () => {
  t = await createTestApp();
  makeProject(t, SLUG);
  makeProject(t, "shop");
  makeProject(t, "quiet");
  dana = await makePerson(t, [{ role: "developer", project: SLUG }, { role: "viewer", project: "quiet" }], { email: "dana@ops.test", displayName: "Dana", password: "correct-horse-battery" });
  await claimModuleNames(t, SLUG, dana);
  await publishNpm(t, dana, "@ops/alpha", "0.9.0");
  await publishNpm(t, dana, "@ops/alpha", "1.0.0");
  const crate = await crateArchive("acme-alpha", "1.0.0");
  await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: dana.session }, raw: cargoPublishBody(cargoMetadata("acme-alpha", "1.0.0"), crate) }), 200);
  recordPlanForReads(t, t.core.access.findProject(SLUG)!, "1.0.0");
  recordConsumers(t.core, t.core.access.findProject("shop")!.id, 3, [
    { registry: "npm", name: "@ops/alpha", version: "1.0.0" },
    { registry: "cargo", name: "acme-alpha", version: "1.0.0" },
  ]);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB" });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the Modules section in chromium", () => {
  test("the list, then one module with its versions, consumers and notes rendered safely", async () => {
    const page = await context.newPage();
    // Content Security Policy violations, and API answers ≥ 400 once signed in (the favicon's 404 is not an API answer).
    const problems: string[] = [];
    let signedIn = false;
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy/i.test(m.text())) problems.push(m.text());
    });
    let dialogs = 0;
    page.on("response", (r) => {
      if (signedIn && r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on("dialog", (d) => {
      dialogs++;
      void d.dismiss();
    });
    await page.goto(`${t.url}/projects/${SLUG}/modules`);
    await page.getByLabel("Email").fill(dana.email);
    await page.getByLabel("Password").fill(dana.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Modules", exact: true }).waitFor();
    signedIn = true;
    await page.getByText("Published at v1.0.0.").waitFor();
    const table = page.getByRole("table", { name: "Modules of this project" });
    expect(await table.getByRole("row", { name: /alpha The alpha module acme-alpha @ops\/alpha none shop/ }).count()).toBe(1);
    expect(await table.getByRole("row", { name: /beta The beta module acme-beta — alpha none yet/ }).count()).toBe(1);
    await shot(page, "modules-list");

    await table.getByRole("link", { name: "alpha" }).click();
    await page.getByRole("heading", { name: "alpha", exact: true }).waitFor();
    await page.getByText('acme-alpha = { version = "1.0.0", registry = "ops" }').waitFor();
    await page.getByText("npm install @ops/alpha@1.0.0").waitFor();
    const versions = page.getByRole("table", { name: "Versions of alpha" });
    await versions.getByRole("row", { name: /@ops\/alpha 0\.9\.0/ }).waitFor();
    expect(await versions.locator("tbody tr").count()).toBe(3);
    expect(await page.getByRole("table", { name: "Consumers of alpha" }).locator("tbody tr").allInnerTexts()).toEqual(["shop\t@ops/alpha\t1.0.0", "shop\tacme-alpha\t1.0.0"]);
    const newest = page.getByRole("article", { name: "Notes of 1.0.0" });
    await newest.waitFor();
    expect(await page.getByRole("article").allInnerTexts()).toEqual([expect.stringMatching(/^1\.0\.0/), expect.stringMatching(/^0\.9\.0/)]);
    // Markdown rendered: a heading, bold, code; raw HTML shown as text; a javascript: link is no link.
    await newest.getByRole("heading", { name: "Added" }).waitFor();
    expect(await newest.locator("strong").innerText()).toBe("41");
    expect(await newest.locator("code").innerText()).toBe("value()");
    expect(await newest.innerText()).toContain('<script>alert("x")</script> is text, not a script.');
    expect(await newest.locator("script").count()).toBe(0);
    expect(await newest.getByRole("link").count()).toBe(1);
    expect(await newest.getByRole("link", { name: "the site" }).getAttribute("href")).toBe("https://example.com/alpha");
    expect(await newest.innerText()).toContain("a trap and the site");
    await shot(page, "modules-detail");
    expect(dialogs).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  test("a module without notes, and a project that published nothing", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SLUG}/modules/beta`);
    await page.getByRole("heading", { name: "beta", exact: true }).waitFor();
    await page.getByText("No CHANGELOG.md sections for this module.").waitFor();
    await page.getByText("No project's newest default-branch build resolved this module yet.").waitFor();
    await shot(page, "modules-no-notes");
    await page.goto(`${t.url}/projects/quiet/modules`);
    await page.getByText("Nothing published yet.").waitFor();
    await shot(page, "modules-empty");
    await page.close();
  }, 60_000);
});
