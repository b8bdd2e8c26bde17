/**
 * A newcomer's first hour in the console (issue 27), in Chromium: the estate owner mints a push
 * token for a project (every project offered, the least role that can push preselected), makes
 * the CLI's install command on the Account page and a project's overview and runs it in sh, and
 * changes the password the first start printed.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import path from "node:path";
import { type Browser, type Page } from "playwright-core";
import { launchChromium, shot, signIn, WallClock } from "./chromium";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, type Person } from "./fixtures";
import { publishRelease, hostTarget } from "../src/domains/cli/service";
import { SYSTEM_ACTOR } from "../src/core/audit";

let t: TestApp;
let browser: Browser;
let owner: Person;
const home = tempDir("ops-newcomer-home-");

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  owner = await makeOwner(t, { email: "owner@ops.test" });
  makeProject(t, "shop");
  makeProject(t, "blog");
  await publishRelease(t.core, { version: "1.0.0", target: hostTarget(), body: "#!/bin/sh\necho ops 1.0.0\n" }, SYSTEM_ACTOR);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  rmSync(home, { recursive: true, force: true });
});

async function signedIn(person: { email: string; password: string }, at: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
  await page.goto(`${t.url}${at}`);
  await signIn(page, person);
  return page;
}

async function sh(line: string) {
  const p = Bun.spawn(["sh", "-c", line], { env: { HOME: home, PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

describe("a newcomer in the console", () => {
  test("Account → Tokens: the owner sees every project; pinned to one, the least role that can push comes first and the token carries sources.save, what a push needs", async () => {
    const page = await signedIn(owner, "/account");
    await page.getByRole("heading", { name: "Tokens" }).waitFor();
    const projectSelect = page.locator("#token-project");
    await page.waitForFunction(() => document.querySelectorAll("#token-project option").length === 3);
    expect(await projectSelect.locator("option").allTextContents()).toEqual(["Any (not pinned)", "blog", "shop"]);
    await projectSelect.selectOption("shop");
    await page.waitForFunction(() => document.querySelectorAll("#token-role option").length >= 4);
    expect(await page.locator("#token-role option").allTextContents()).toEqual(expect.arrayContaining(["Owner", "Maintainer", "Developer", "Viewer"]));
    expect(await page.locator("#token-role option:checked").textContent()).toBe("Developer");
    await page.getByLabel("Name", { exact: true }).fill("push from laptop");
    await page.getByRole("button", { name: "Mint token" }).click();
    const secret = (await page.locator(".alert-ok code.secret").textContent())!.trim();
    const row = t.core.sqlite.query("SELECT r.slug AS role, p.slug AS project FROM tokens t JOIN roles r ON r.id = t.role_id JOIN projects p ON p.id = t.project_id WHERE t.name = 'push from laptop'").get();
    expect(row).toEqual({ role: "developer", project: "shop" });
    const perms = await expectStatus(await t.request("GET", "/api/v1/permissions?project=shop", { token: secret }), 200);
    expect(JSON.stringify(perms)).toContain("sources.save");
    await shot(page, "newcomer-token");
  }, 60_000);

  test("Account → Install the CLI: the command shown installs the CLI in sh", async () => {
    const page = await signedIn(owner, "/account");
    await page.getByRole("heading", { name: "Install the CLI" }).waitFor();
    await page.locator("#install-project").selectOption("shop");
    await page.getByRole("button", { name: "Make an install command" }).click();
    const line = await page.getByLabel("Install command").inputValue();
    expect(line).toStartWith("curl -sSL --fail-with-body -H 'Authorization: Bearer opsi_");
    await shot(page, "newcomer-install");
    expect(await page.getByText("No CLI release is published").count()).toBe(0);
    const r = await sh(line);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`installed ops 1.0.0 (${hostTarget()})`);
    expect(await Bun.file(path.join(home, ".config", "ops", "config.json")).json()).toMatchObject({ server: t.url, project: "shop" });
    const again = await sh(line);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("ops installer: error:");
  }, 60_000);

  test("a project's overview offers the install command for that project", async () => {
    const dev = await makePerson(t, [{ role: "developer", project: "blog" }]);
    const page = await signedIn(dev, "/projects/blog");
    await page.getByRole("heading", { name: "Install the CLI" }).waitFor();
    await page.getByRole("button", { name: "Make an install command" }).click();
    const line = await page.getByLabel("Install command").inputValue();
    const code = /Bearer (opsi_\w+)/.exec(line)![1];
    const script = await expectStatus<string>(await t.request("GET", "/api/v1/cli/install.sh", { token: code }), 200);
    expect(script).toContain("OPS_PROJECT='blog'");
    expect(await page.getByText("your Developer role").isVisible()).toBe(true);
  }, 60_000);

  test("with no CLI release published (a server run from source), the card says so beside the command, which then stops with the way to publish one", async () => {
    const empty = await createTestApp({ clock: new WallClock() });
    try {
      const person = await makeOwner(empty, { email: "first@ops.test" });
      makeProject(empty, "first");
      const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
      await page.goto(`${empty.url}/projects/first`);
      await signIn(page, person);
      await page.getByRole("heading", { name: "Install the CLI" }).waitFor();
      await page.getByRole("button", { name: "Make an install command" }).click();
      const line = await page.getByLabel("Install command").inputValue();
      await page.getByText("No CLI release is published on this server yet").waitFor();
      expect(await page.getByRole("link", { name: "CLI page" }).getAttribute("href")).toBe("/cli");
      await shot(page, "newcomer-install-unpublished");
      const r = await sh(line);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("No ops CLI release is published yet");
      // The CLI page, which lists the releases, tells the card what it found.
      await page.getByRole("link", { name: "CLI page" }).click();
      await page.getByRole("heading", { name: "The ops CLI" }).waitFor();
      await page.getByRole("button", { name: "Make an install command" }).click();
      await page.getByText("No CLI release is published on this server yet").waitFor();
      await page.close();
    } finally {
      await empty.close();
    }
  }, 60_000);

  test("Account → Password: the owner changes the password; the old one stops working", async () => {
    const person = await makePerson(t, [{ role: "viewer", project: "blog" }], { password: "first password of twelve" });
    const page = await signedIn(person, "/account");
    await page.getByRole("heading", { name: "Password" }).waitFor();
    await page.getByLabel("Current password").fill("wrong password entirely");
    await page.getByLabel("New password", { exact: true }).fill("a fresh passphrase 2026");
    await page.getByLabel("New password again").fill("a fresh passphrase 2026");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.locator(".alert").first().waitFor();
    expect(await page.getByText("Password changed").count()).toBe(0);
    await page.getByLabel("Current password").fill("first password of twelve");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Password changed").waitFor();
    await shot(page, "newcomer-password");
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: person.email, password: "first password of twelve" } }), 401);
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: person.email, password: "a fresh passphrase 2026" } }), 200);
  }, 60_000);
});
