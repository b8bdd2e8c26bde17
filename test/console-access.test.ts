/**
 * The Access and Settings pages in a real browser (Debian's chromium through playwright-core): an
 * estate owner builds a custom role from the permission catalog, narrows it in staging with an
 * environment policy, adds a person with it, renames the project, archives it (a change is then
 * refused) and unarchives it; that person's console then
 * offers only the sections and actions the role holds, and says why for the rest.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { launchChromium, pressEverything, problemsOf, shot, signIn, watchedContext, WallClock } from "./chromium";

setDefaultTimeout(120_000);

const SLUG = "harbour";
let t: TestApp;
let browser: Browser;
let olga: Person;
let pat: Person;

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, SLUG);
  olga = await makeOwner(t, { email: "olga@ops.test" });
  pat = await makePerson(t, [], { email: "pat@ops.test", displayName: "Pat Shipper", password: "correct-horse-battery" });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("Access in chromium", () => {
  test("a custom role from the catalog, a policy, a member added with it, the project renamed", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/projects/${SLUG}/access/roles`);
    await signIn(page, olga);
    await page.getByRole("heading", { name: "Roles", exact: true }).waitFor();
    // The fixed roles are read only.
    const owner = page.locator("li.role", { hasText: "Owner" }).first();
    expect(await owner.getByText("fixed").isVisible()).toBe(true);
    expect(await owner.getByRole("button").count()).toBe(0);

    await page.getByRole("button", { name: "New role" }).click();
    await page.getByLabel("Display name").fill("Deployer");
    await page.getByLabel("Slug").fill("deployer");
    await page.getByLabel("Description").fill("Ships builds, nothing else.");
    const form = page.locator("form.role-form");
    // Each permission comes with its description from the catalog.
    expect(await form.getByText("Deploy and roll back services.").isVisible()).toBe(true);
    for (const label of ["See resources", "See builds", "See deployments", "Deploy"]) await form.getByLabel(new RegExp(`^${label} `)).check();
    await shot(page, "access-new-role");
    await page.getByRole("button", { name: "Create role" }).click();
    await page.getByText("The role Deployer is created.").waitFor();
    const role = (await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/roles`, { token: olga.session }), 200)).find((r: { slug: string }) => r.slug === "deployer");
    expect(role.permissions.sort()).toEqual(["builds.read", "deployments.deploy", "deployments.read", "project.read", "resources.read"]);

    // In staging the role may look, not deploy.
    await page.getByLabel("Environment", { exact: true }).selectOption("staging");
    await page.locator("form.policy-form").getByLabel(/^Deploy /).uncheck();
    await page.getByRole("button", { name: "Set policy" }).click();
    await page.locator("table.policies tr", { hasText: "staging" }).getByText("Deploy", { exact: true }).waitFor();

    await page.getByRole("link", { name: "Members and tokens" }).click();
    await page.getByLabel("Operator").selectOption({ label: "Pat Shipper (pat@ops.test)" });
    await page.getByLabel("Role", { exact: true }).selectOption({ label: "Deployer (this project's)" });
    await page.getByRole("button", { name: "Add member" }).click();
    await page.getByText("Pat Shipper is now a member as Deployer.").waitFor();
    expect(await page.getByLabel("Role of Pat Shipper").inputValue()).toBe(role.id);
    await shot(page, "access-members");

    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Harbour front");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("The project's settings are saved.").waitFor();
    await page.getByRole("heading", { name: /Harbour front/ }).waitFor();
    await shot(page, "settings");

    // Archived, the project takes no change; unarchived, it does again.
    const write = () => t.request("POST", `/api/v1/projects/${SLUG}/resources/job`, { token: olga.session, body: { name: `tidy-${Date.now()}`, spec: { command: "true" } } });
    await page.getByRole("button", { name: "Archive…" }).click();
    await page.getByRole("alertdialog", { name: "Archive Harbour front?" }).getByRole("button", { name: "Yes, archive" }).click();
    await page.getByText("The project is archived.").waitFor();
    await page.getByRole("heading", { name: "Archived", exact: true }).waitFor();
    await shot(page, "settings-archived");
    expect((await write()).status).toBe(409);
    // Its pages withhold every change, saying why: pressing all they offer draws no refusal.
    const refused: string[] = [];
    page.on("response", (r) => {
      if (r.status() === 409 || r.status() === 403) refused.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    for (const section of ["resources", "secrets", "builds", "sources", "translations", "packages"]) {
      await page.goto(`${t.url}/projects/${SLUG}/${section}`);
      await page.getByRole("navigation", { name: "Project" }).waitFor();
      await page.waitForTimeout(300);
      await page.locator("[aria-busy='true']").first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
      await pressEverything(page);
    }
    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await page.getByText("Creating resources: The project is archived").waitFor();
    expect(refused).toEqual([]);
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("button", { name: "Unarchive" }).click();
    await page.getByText("The project is unarchived.").waitFor();
    await expectStatus(await write(), 201);
    expect(problems).toEqual([]);
    await context.close();
  });

  test("the member's console hides what the role lacks and says why", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SLUG}/deployments`);
    await signIn(page, pat);
    await page.getByRole("heading", { name: "Timeline" }).or(page.getByText("No services in production yet.")).first().waitFor();
    const tabs = await page.getByRole("navigation", { name: "Project" }).getByRole("link").allInnerTexts();
    expect(tabs).toEqual(["Overview", "Resources", "Builds", "Deployments", "Access", "Settings"]);

    await page.getByRole("link", { name: "Access" }).click();
    await page.getByRole("heading", { name: "Members", exact: true }).waitFor();
    expect(await page.getByRole("button", { name: "Add member" }).count()).toBe(0);
    expect(await page.getByText(/^Adding members: Needs “Manage members and roles”/).isVisible()).toBe(true);
    expect(await page.getByLabel("Role of Pat Shipper").count()).toBe(0);
    const remove = page.getByRole("button", { name: "Remove Pat Shipper" });
    expect(await remove.getAttribute("aria-disabled")).toBe("true");
    expect(await remove.getAttribute("title")).toContain("project.members");

    await page.getByRole("link", { name: "Roles and environment policies" }).click();
    expect(await page.getByRole("button", { name: "New role" }).getAttribute("aria-disabled")).toBe("true");
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByText(/^Changing the settings: Needs “Change project settings”/).waitFor();
    expect(await page.getByRole("button", { name: "Archive…" }).getAttribute("aria-disabled")).toBe("true");
    await shot(page, "access-member-view");

    // Estate pages are not offered either.
    expect(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Operators" }).count()).toBe(0);
    await context.close();
  });

  test("tokens pinned to the project: a maintainer revokes their own; another member's Revoke says why not and does nothing", async () => {
    const mia = await makePerson(t, [{ role: "maintainer", project: SLUG }], { email: "mia@ops.test", displayName: "Mia Keeper", password: "another-horse-battery" });
    const dev = await makePerson(t, [{ role: "developer", project: SLUG }], { email: "dev@ops.test" });
    mintToken(t, mia.principal, { role: "developer", project: SLUG, name: "mia laptop" });
    mintToken(t, dev.principal, { role: "developer", project: SLUG, name: "dev laptop" });
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/projects/${SLUG}/access`);
    await signIn(page, mia);
    await page.getByRole("heading", { name: `Tokens pinned to ${SLUG}` }).waitFor();
    const tokens = page.locator("table.tokens");
    await tokens.getByText("dev laptop").waitFor();
    expect(await tokens.locator("tr", { hasText: "dev laptop" }).innerText()).toContain("dev@ops.test");
    const theirs = page.getByRole("button", { name: "Revoke token dev laptop" });
    expect(await theirs.getAttribute("aria-disabled")).toBe("true");
    expect(await theirs.getAttribute("title")).toBe("Only the token's owner, or someone who manages operators, can revoke it.");
    const deletes: string[] = [];
    page.on("request", (r) => void (r.method() === "DELETE" && deletes.push(new URL(r.url()).pathname)));
    await theirs.click({ force: true });
    await page.getByRole("button", { name: "Revoke token mia laptop" }).click();
    await page.getByText('The token "mia laptop" is revoked.').waitFor();
    expect(deletes).toHaveLength(1);
    await tokens.locator("tr.revoked", { hasText: "mia laptop" }).getByText("revoked", { exact: true }).waitFor();
    expect(await tokens.locator("tr.revoked").count()).toBe(1);
    expect(problems).toEqual([]);
    await context.close();
  });
});
