/**
 * The Secrets section in a real browser (Debian's chromium through playwright-core): a maintainer
 * sets a secret variable through the write-only field and sees its name, kind, "set" and version —
 * and its value nowhere in the page's DOM (markup, attributes or any field's value), though the
 * store holds it; imports a dotenv file whose values never reach the page; rotates after a
 * confirmation naming the service it restarts; sets a per-service secret. A developer sees the
 * same names with rotation and the dotenv download withheld, each saying why.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { launchChromium, problemsOf, shot, signIn, watchedContext, WallClock } from "./chromium";

setDefaultTimeout(120_000);

const SLUG = "tea-room";
const STRIPE = "sk_live_51Hc0nsoleNeverShowsThis9x";
const FROM_FILE = { SMTP_PASSWORD: "dotenv-pass-4f1e8a", WEBHOOK_SECRET: "whsec two words" };
const UNIT_VALUE = "unit-secret-7c2d91aa";

let t: TestApp;
let browser: Browser;
let sam: Person;
let dev: Person;

/** Everything a page holds: its markup and every form field's current value. */
async function everything(page: Page): Promise<string> {
  const values = await page.evaluate(() => [...document.querySelectorAll("input, textarea, select")].map((e) => (e as HTMLInputElement).value).join("\n"));
  return `${await page.content()}\n${values}`;
}

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, SLUG);
  sam = await makePerson(t, [{ role: "maintainer", project: SLUG }], { email: "sam@ops.test", displayName: "Sam", password: "correct-horse-battery" });
  dev = await makePerson(t, [{ role: "developer", project: SLUG }], { email: "dev@ops.test", displayName: "Dev", password: "correct-horse-battery" });
  const base = `/api/v1/projects/${SLUG}/resources`;
  await expectStatus(await t.request("POST", `${base}/secret-group`, { token: sam.session, body: { name: "web-env", spec: { variables: [] } } }), 201);
  await expectStatus(await t.request("POST", `${base}/service`, { token: sam.session, body: { name: "web", spec: { image: `${SLUG}/web:1`, env_group: "web-env", replicas: 0 } } }), 201);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the Secrets section in chromium", () => {
  test("set a secret: its name shows, its value is nowhere in the DOM; import a dotenv file; rotate", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/projects/${SLUG}/secrets`);
    await signIn(page, sam);
    await page.getByRole("heading", { name: "Variables of web-env" }).waitFor();
    await page.getByText("No variables yet.").waitFor();

    await page.getByLabel("Name", { exact: true }).fill("STRIPE_KEY");
    await page.getByLabel("Value").fill(STRIPE);
    await page.getByRole("button", { name: "Set variable" }).click();
    await page.getByText("STRIPE_KEY is set (version 1).").waitFor();
    const row = page.locator("table.variables tr", { hasText: "STRIPE_KEY" });
    expect(await row.innerText()).toMatch(/STRIPE_KEY\s+secret\s+set\s*not yet rendered\s+1/);
    expect(await everything(page)).not.toContain(STRIPE);
    await shot(page, "secrets-set");

    // A text variable is readable by those allowed to reveal values.
    await page.getByLabel("Name", { exact: true }).fill("REGION");
    await page.getByLabel("Kind").selectOption("text");
    await page.getByLabel("Value").fill("eu-west");
    await page.getByRole("button", { name: "Set variable" }).click();
    await page.locator("table.variables code.text-value", { hasText: "eu-west" }).waitFor();

    // A dotenv file: names listed before the import, values never shown.
    await page.getByLabel("Dotenv file", { exact: true }).setInputFiles({ name: "prod.env", mimeType: "text/plain", buffer: Buffer.from(`# mail\nexport SMTP_PASSWORD=${FROM_FILE.SMTP_PASSWORD}\nWEBHOOK_SECRET="${FROM_FILE.WEBHOOK_SECRET}"\n`) });
    await page.getByText("2 to import as secrets: SMTP_PASSWORD, WEBHOOK_SECRET.").waitFor();
    await page.getByRole("button", { name: "Import" }).click();
    await page.getByText("Imported 2 variables as secrets.").waitFor();
    await page.locator("table.variables tr", { hasText: "WEBHOOK_SECRET" }).waitFor();
    const all = await everything(page);
    for (const v of [STRIPE, ...Object.values(FROM_FILE)]) expect(all).not.toContain(v);

    // Rotation names what it restarts.
    await page.getByRole("button", { name: "Rotate…" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Rotate web-env?" });
    expect(await dialog.innerText()).toContain("restart onto it: web.");
    await shot(page, "secrets-rotate-confirm");
    await dialog.getByRole("button", { name: "Yes, rotate" }).click();
    await page.getByText(/Rendered web-env\.env\.v1\./).waitFor();
    await page.locator("table.versions tr", { hasText: "mounted now" }).waitFor();
    expect(await page.locator("table.variables .tag-warn").count()).toBe(0);
    await shot(page, "secrets-rotated");

    // The values did reach the store.
    const { groupEnv } = await import("../src/domains/secrets/service");
    const group = t.core.access.findProject(SLUG)!;
    const g = await expectStatus(await t.request("GET", `/api/v1/projects/${group.slug}/resources/secret-group/web-env`, { token: sam.session }), 200);
    expect(groupEnv(t.core, t.core.db, g.id).env).toMatchObject({ STRIPE_KEY: STRIPE, ...FROM_FILE, REGION: "eu-west" });

    // A per-service secret, then the dotenv download this maintainer may take.
    await page.getByRole("link", { name: "Per-service secrets" }).click();
    await page.getByText("No per-service secrets yet.").waitFor();
    await page.getByLabel("Name", { exact: true }).fill("DB_PASSWORD");
    await page.getByLabel("Value").fill(UNIT_VALUE);
    await page.getByRole("button", { name: "Set secret" }).click();
    await page.locator("table.unit-secrets tr", { hasText: "DB_PASSWORD" }).waitFor();
    expect(await everything(page)).not.toContain(UNIT_VALUE);
    expect(await page.getByRole("link", { name: "web.env" }).getAttribute("href")).toBe(`/api/v1/projects/${SLUG}/secrets/web/env`);
    const env = await t.request("GET", `/api/v1/projects/${SLUG}/secrets/web/env`, { token: sam.session });
    expect(await env.text()).toContain(`DB_PASSWORD=${UNIT_VALUE}`);
    await shot(page, "secrets-per-service");
    expect(problems).toEqual([]);
    await context.close();
  });

  test("a developer sees the names; rotation and the dotenv download are withheld, saying why", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SLUG}/secrets`);
    await signIn(page, dev);
    await page.locator("table.variables tr", { hasText: "STRIPE_KEY" }).waitFor();
    // Without secrets.reveal the text variable's value is not sent either.
    expect(await page.locator("table.variables tr", { hasText: "REGION" }).innerText()).toContain("set");
    const rotate = page.getByRole("button", { name: "Rotate…" });
    expect(await rotate.getAttribute("aria-disabled")).toBe("true");
    expect(await rotate.getAttribute("title")).toBe("Needs “Rotate secrets” (secrets.rotate): role lacks secrets.rotate in tea-room (production).");
    // It stays focusable, so a keyboard reaches the reason; pressing it does nothing.
    await rotate.focus();
    await page.keyboard.press("Enter");
    expect(await page.getByRole("alertdialog").count()).toBe(0);
    await shot(page, "secrets-developer");
    await page.getByRole("link", { name: "Per-service secrets" }).click();
    await page.locator("table.unit-secrets tr", { hasText: "DB_PASSWORD" }).waitFor();
    expect(await page.getByRole("link", { name: "web.env" }).count()).toBe(0);
    expect(await page.getByText("web.env").getAttribute("title")).toContain("secrets.reveal");
    await context.close();
  });
});
