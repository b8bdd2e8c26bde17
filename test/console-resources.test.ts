/**
 * The Resources section in a real browser (Debian's chromium through playwright-core), against
 * the real PostgreSQL plane on 127.0.0.1:5432: a maintainer creates a secret group, a service
 * and then a database from the forms the catalog's schemas generate, and the database exists on
 * the plane; its page shows where the connection string went, rotates the password (the new one
 * opens a connection), shows the restore runbook, refuses a stale edit and offers a reload, and
 * deletes only after the name is typed (the plane drops it). A job runs by hand and its output
 * shows; a domain shows its hosts and routed service; a bucket is checked. Screenshots go to
 * test/artifacts/.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { eq } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { launchChromium, layoutShift, problemsOf, runUntil, shot, signIn, watchedContext, WallClock } from "./chromium";
import { secretVariables } from "../src/domains/secrets/tables";

setDefaultTimeout(120_000);

const PLANE = "postgres://postgres@127.0.0.1:5432/postgres";
const admin = new SQL(PLANE, { max: 1 });
const SLUG = `bakery-${Math.random().toString(36).slice(2, 7)}`;
const PREFIX = `ops_${SLUG.replace(/-/g, "_")}_`;
const DB = `${PREFIX}production_orders`;

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let mia: Person;

async function planeHas(name: string): Promise<boolean> {
  return (await admin`select 1 from pg_database where datname = ${name}`).length === 1;
}

async function dropAll(): Promise<void> {
  for (const r of await admin`select datname from pg_database where datname like ${PREFIX + "%"}`) await admin.unsafe(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  for (const r of await admin`select rolname from pg_roles where rolname like ${PREFIX + "%"}`) await admin.unsafe(`DROP ROLE IF EXISTS "${r.rolname}"`);
}

/** The connection string ops stored for the service (read from the store, never from the page). */
async function storedConnectionString(): Promise<string> {
  const group = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/resources/secret-group/web-env`, { token: mia.session }), 200);
  const row = t.core.db.select().from(secretVariables).where(eq(secretVariables.groupId, group.id)).all().find((v) => v.name === "DATABASE_URL")!;
  return t.core.secrets.get(t.core.db, row.valueId);
}

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock(), env: { OPS_DB_PLANE_URL: PLANE, OPS_DB_PLANE_STANZA: "ops-plane" } });
  makeProject(t, SLUG);
  mia = await makePerson(t, [{ role: "maintainer", project: SLUG }], { email: "mia@ops.test", displayName: "Mia", password: "correct-horse-battery" });
  browser = await launchChromium();
  context = await watchedContext(browser);
  page = await context.newPage();
  problems = problemsOf(page);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await dropAll();
  await admin.close();
});

/** Fill the New resource form for `type` and create it. */
async function create(type: string, name: string, fill: () => Promise<void>): Promise<void> {
  await page.getByLabel("Type", { exact: true }).last().selectOption(type);
  await page.getByLabel(/^Name/).first().fill(name);
  await fill();
  await page.getByRole("button", { name: `Create ${type}` }).click();
  try {
    await page.getByRole("heading", { name: new RegExp(`Resources / ${type} / ${name}`) }).waitFor({ timeout: 10_000 });
  } catch (e) {
    await shot(page, `resources-failed-${type}`);
    throw e;
  }
}

describe("the Resources section in chromium", () => {
  test("a database created from the generated form is provisioned on the PostgreSQL plane", async () => {
    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await signIn(page, mia);
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
    await page.getByText("No resources in production yet.").waitFor();
    expect(await layoutShift(page)).toBeLessThan(0.05);

    // A secret group from its generated form: one variable row added.
    await page.getByRole("link", { name: "Resources" }).first().click();
    await page.getByLabel("Type", { exact: true }).last().selectOption("secret-group");
    await page.getByRole("button", { name: "Add variable" }).click();
    await page.locator("fieldset").getByLabel(/^Name/).fill("FEATURE_FLAGS");
    await page.locator("fieldset").getByLabel(/^Kind/).selectOption("text");
    await page.getByLabel(/^Name/).first().fill("web-env");
    await page.getByRole("button", { name: "Create secret-group" }).click();
    await page.getByRole("heading", { name: /Resources \/ secret-group \/ web-env/ }).waitFor();

    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await create("service", "web", async () => {
      await page.getByLabel("Image").fill(`${SLUG}/web:1`);
      await page.getByLabel("Env group").fill("web-env");
      // A bad value is caught in the form, with the field named.
      await page.getByLabel("Port").fill("99999");
      await page.getByRole("button", { name: "Create service" }).click();
      await page.getByText("must be at most 65535").first().waitFor();
      await page.getByLabel("Port").fill("8080");
    });

    await page.goto(`${t.url}/projects/${SLUG}/resources?type=database`);
    await page.getByLabel("Type", { exact: true }).last().selectOption("database");
    // Required fields come first; the engine is the schema's constant.
    expect(await page.getByLabel(/^Engine/).inputValue()).toBe("postgres");
    await create("database", "orders", async () => {
      await page.getByLabel(/^Service/).fill("web");
      await page.getByLabel("Size").selectOption("medium");
      await shot(page, "resources-new-database");
    });
    expect(await page.getByLabel("Size").inputValue()).toBe("medium");
    expect(await planeHas(DB)).toBe(true);
    await page.getByText(`DATABASE_URL`).first().waitFor();
    await page.getByText(/in env group web-env of service web: set \(version 1/).waitFor();

    await page.getByRole("button", { name: "Refresh status" }).click();
    await page.getByText(/\d+ bytes, \d+ connections?/).waitFor();
    expect(await page.locator("dl.facts").first().innerText()).toContain(DB);
    await shot(page, "resources-database");

    // The list shows it, filtered by type.
    await page.getByRole("link", { name: "Resources" }).nth(1).click();
    await page.getByLabel("Type", { exact: true }).first().selectOption("database");
    await page.locator("table.resources tbody tr").first().getByText("orders").waitFor();
    expect(await page.locator("table.resources tbody tr").count()).toBe(1);
    await shot(page, "resources-list");
  });

  test("rotate the password, read the runbook, a stale edit, delete with the typed name", async () => {
    await page.goto(`${t.url}/projects/${SLUG}/resources/database/orders?environment=production`);
    const before = await storedConnectionString();
    await page.getByRole("button", { name: "Rotate password…" }).click();
    await page.getByRole("alertdialog", { name: "Rotate the password?" }).getByRole("button", { name: "Yes, rotate" }).click();
    await page.getByText("The role has a new password on the plane").waitFor();
    const after = await storedConnectionString();
    expect(after).not.toBe(before);
    const conn = new SQL(after, { max: 1 });
    expect((await conn`select current_database() as db`)[0].db).toBe(DB);
    await conn.close();
    expect(await page.content()).not.toContain(new URL(after).password);

    await page.getByRole("button", { name: "Show restore runbook" }).click();
    expect(await page.getByLabel("Restore runbook").innerText()).toContain(`pgbackrest --stanza=ops-plane`);

    // Someone else writes between the read and the save: the page says so and reloads on request.
    await expectStatus(await t.request("PUT", `/api/v1/projects/${SLUG}/resources/database/orders`, { token: mia.session, body: { spec: { engine: "postgres", service: "web", size: "large" } } }), 200);
    await page.getByLabel("Size").selectOption("small");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText(/changed since you opened it: the server has version \d+/).waitFor();
    await shot(page, "resources-stale-edit");
    await page.getByRole("button", { name: "Reload the current version" }).click();
    await page.getByText(/Showing version \d+ as the server has it/).waitFor();
    expect(await page.getByLabel("Size").inputValue()).toBe("large");

    await page.getByRole("button", { name: "Delete database…" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Delete database orders?" });
    expect(await dialog.getByRole("button", { name: "Yes, delete" }).isDisabled()).toBe(true);
    await dialog.getByLabel(/Type orders to confirm/).fill("orders");
    await shot(page, "resources-delete-confirm");
    await dialog.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
    expect(await planeHas(DB)).toBe(false);
  });

  test("a job run by hand, its runs and output; a domain's hosts and service; a bucket checked", async () => {
    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await create("job", "nightly", async () => {
      await page.getByLabel(/^Command/).fill("echo baking; echo oven hot >&2");
    });
    await page.getByText("by hand only").waitFor();
    await page.getByRole("button", { name: "Run now" }).click();
    await page.getByText(/Run \d+ is queued\./).waitFor();
    await runUntil(t, async () => (await page.locator("table.runs .badge", { hasText: "succeeded" }).count()) > 0);
    await page.locator("table.runs").getByRole("link").first().click();
    await page.locator("pre.log").getByText("baking").waitFor();
    expect(await page.locator("pre.log .level-warn").innerText()).toBe("oven hot");
    await shot(page, "resources-job");

    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await create("domain", "shop", async () => {
      await page.getByLabel(/^Hosts/).fill("shop.example.com\nwww.shop.example.com");
      await page.getByLabel(/^Service/).fill("web");
    });
    await page.getByRole("link", { name: "www.shop.example.com" }).waitFor();
    await page.getByRole("link", { name: "service web" }).waitFor();
    await shot(page, "resources-domain");

    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await create("bucket", "uploads", async () => {});
    await page.getByRole("button", { name: "Check now" }).click();
    await page.getByText(/objects?/).first().waitFor();
    await shot(page, "resources-bucket");

    // The project's overview lists them as the Resources page does: each name opens its page.
    await page.goto(`${t.url}/projects/${SLUG}`);
    const bucket = page.locator("table.resources tbody tr", { hasText: "uploads" });
    await bucket.getByText("project-wide").waitFor({ timeout: 5_000 });
    await bucket.getByRole("link", { name: "uploads" }).click();
    await page.getByRole("button", { name: "Check now" }).waitFor();
    expect(problems).toEqual([]);
  });
});
