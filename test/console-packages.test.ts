/**
 * The Packages section in a real browser (Debian's chromium through playwright-core): a package
 * published with the real npm CLI shows in the project's list with its latest version and
 * publisher; its page lists the versions and dist-tags; the set-up lines name this server's
 * registries. The Audit page then finds the publish refused to a viewer, with its reason.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { launchChromium, problemsOf, shot, signIn, watchedContext, WallClock } from "./chromium";
import { run, writeTree } from "./support/registries";

setDefaultTimeout(120_000);

const SLUG = "print-shop";
let t: TestApp;
let browser: Browser;
let dana: Person;
let vic: Person;
let home: string;

/** `npm publish` of `name@version` with `token` (the real client, its own HOME and .npmrc). */
async function npmPublish(name: string, version: string, token: string) {
  const dir = tempDir("ops-console-npm-pkg-");
  writeTree(dir, { "package.json": JSON.stringify({ name, version, main: "index.js", license: "MIT" }), "index.js": "module.exports = 1;\n" });
  const rc = path.join(home, `npmrc-${token.slice(-6)}`);
  writeFileSync(rc, `registry=${t.url}/npm/\n//${new URL(t.url).host}/npm/:_authToken=${token}\nupdate-notifier=false\nfund=false\naudit=false\n`);
  return run(["npm", "publish"], { cwd: dir, env: { HOME: home, npm_config_userconfig: rc, npm_config_cache: path.join(home, "cache"), npm_config_loglevel: "warn" } });
}

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, SLUG);
  home = tempDir("ops-console-npm-home-");
  dana = await makePerson(t, [{ role: "developer", project: SLUG }], { email: "dana@ops.test", password: "correct-horse-battery" });
  vic = await makePerson(t, [{ role: "viewer", project: SLUG }], { email: "vic@ops.test", password: "correct-horse-battery" });
  await expectStatus(await t.request("PUT", `/api/v1/projects/${SLUG}/packages/npm/${encodeURIComponent("@ops/labels")}`, { token: dana.session }), 201);
  const token = mintToken(t, dana.principal, { role: "developer", project: SLUG });
  for (const v of ["1.0.0", "1.1.0"]) {
    const pub = await npmPublish("@ops/labels", v, token);
    expect(pub.code).toBe(0);
  }
  // A viewer's publish is refused (and audited as denied).
  const refused = await npmPublish("@ops/labels", "2.0.0", mintToken(t, vic.principal, { role: "viewer", project: SLUG }));
  expect(refused.code).not.toBe(0);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("Packages and Audit in chromium", () => {
  test("browse a package published with npm: the list, its versions and dist-tags, the set-up lines", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/projects/${SLUG}/packages`);
    await signIn(page, dana);
    const row = page.locator("table.packages tr", { hasText: "@ops/labels" });
    await row.waitFor();
    expect(await row.innerText()).toMatch(/@ops\/labels\s+1\.1\.0\s+2\s+.*by dana@ops\.test/s);
    expect(await page.getByLabel("npm registry line").inputValue()).toBe(`@ops:registry=${t.url}/npm/`);
    expect(await page.getByLabel("cargo registry line").inputValue()).toBe(`[registries.ops] index = "sparse+${t.url}/cargo/"`);
    await shot(page, "packages");

    await row.getByRole("link", { name: "@ops/labels" }).click();
    await page.getByRole("heading", { name: /Packages \/ npm \/ @ops\/labels/ }).waitFor();
    const versions = await page.locator("table.versions tbody tr").allInnerTexts();
    expect(versions.map((v) => v.split("\t")[0])).toEqual(["1.1.0", "1.0.0"]);
    expect(await page.locator("dl.facts").innerText()).toMatch(/latest\s+1\.1\.0/);
    expect(await page.getByLabel("install command").inputValue()).toBe("npm install @ops/labels");
    await shot(page, "packages-detail");
    expect(problems).toEqual([]);
    await context.close();
  });

  test("the audit page finds the viewer's refused publish, with via, address and reason", async () => {
    const owner = await makePerson(t, [{ role: "maintainer", project: SLUG }], { email: "mo@ops.test", password: "correct-horse-battery" });
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SLUG}/audit`);
    await signIn(page, owner);
    await page.getByRole("heading", { name: "Audit log" }).waitFor();
    await page.getByLabel("Outcome").selectOption("denied");
    await page.getByLabel("Actor").fill("vic@ops.test");
    await page.getByRole("button", { name: "Filter" }).click();
    const denied = page.locator("table.audit tbody tr").first();
    await denied.locator("code", { hasText: "packages.publish" }).waitFor();
    expect(page.url()).toContain("outcome=denied");
    const text = await denied.innerText();
    expect(text).toContain("vic@ops.test");
    expect(text).toContain("via token from 127.0.0.1");
    expect(text).toContain("role lacks packages.publish");
    expect(await page.locator("table.audit tbody tr").count()).toBe(1);
    await shot(page, "audit-denied");
    await context.close();
  });
});
