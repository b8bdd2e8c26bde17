/**
 * The Packages section in a real browser (Debian's chromium through playwright-core): a package
 * published with the real npm CLI shows in the project's list with its latest version and
 * publisher; its page lists the versions and dist-tags; the set-up lines name this server's
 * registries. A crate name claimed on the page is published with the real cargo CLI; yanking and
 * unyanking a version on its page is what a fresh `cargo generate-lockfile` then follows; a claim
 * with nothing published is released; a viewer sees the actions disabled with the reason. The
 * Audit page then finds the publish refused to a viewer, with its reason.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** Real cargo with its own CARGO_HOME pointed at this server's sparse registry, `token` from the `cargo:token` provider. */
async function cargo(args: string[], cwd: string, token: string) {
  const cargoHome = path.join(home, "cargo");
  writeTree(cargoHome, { "config.toml": `[registries.ops]\nindex = "sparse+${t.url}/cargo/"\n\n[registry]\nglobal-credential-providers = ["cargo:token"]\n\n[net]\nretry = 0\n` });
  return run(["cargo", ...args], {
    cwd,
    timeoutMs: 240_000,
    env: { HOME: home, CARGO_HOME: cargoHome, CARGO_REGISTRIES_OPS_TOKEN: token, CARGO_TERM_COLOR: "never", CARGO_NET_RETRY: "0", RUSTUP_HOME: process.env.RUSTUP_HOME ?? path.join(process.env.HOME ?? "/root", ".rustup") },
  });
}

/** A crate directory for `name@version` (publishing only to ops), with `deps`. */
function crateDir(name: string, version: string, deps = ""): string {
  const dir = tempDir(`ops-console-crate-${name}-`);
  writeTree(dir, { "Cargo.toml": `[package]\nname = "${name}"\nversion = "${version}"\nedition = "2021"\ndescription = "a label printer"\nlicense = "MIT"\npublish = ["ops"]\n\n[dependencies]\n${deps}`, "src/lib.rs": "pub fn width() -> u32 { 62 }\n" });
  return dir;
}

/** The version of `name` a fresh lockfile of a crate wanting `^0.1` chooses. */
async function lockedVersion(app: string, name: string, token: string): Promise<string> {
  rmSync(path.join(app, "Cargo.lock"), { force: true });
  const r = await cargo(["generate-lockfile"], app, token);
  expect([r.code, r.stderr]).toEqual([0, expect.any(String)]);
  const lock = readFileSync(path.join(app, "Cargo.lock"), "utf8");
  return new RegExp(`name = "${name}"\nversion = "([^"]+)"`).exec(lock)?.[1] ?? "none";
}

/** The real npm client in `cwd` with `token` (its own HOME and .npmrc pointed at this server). */
function npm(args: string[], cwd: string, token: string) {
  const rc = path.join(home, `npmrc-${token.slice(-6)}`);
  writeFileSync(rc, `registry=${t.url}/npm/\n//${new URL(t.url).host}/npm/:_authToken=${token}\nupdate-notifier=false\nfund=false\naudit=false\n`);
  return run(["npm", ...args], { cwd, env: { HOME: home, npm_config_userconfig: rc, npm_config_cache: path.join(home, "cache"), npm_config_loglevel: "warn" } });
}

/** `npm publish` of `name@version` with `token`. */
async function npmPublish(name: string, version: string, token: string) {
  const dir = tempDir("ops-console-npm-pkg-");
  writeTree(dir, { "package.json": JSON.stringify({ name, version, main: "index.js", license: "MIT" }), "index.js": "module.exports = 1;\n" });
  return npm(["publish"], dir, token);
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
    // The heading shows while the versions load: wait for them before reading the table.
    await page.locator("table.versions tbody tr").first().waitFor();
    const versions = await page.locator("table.versions tbody tr").allInnerTexts();
    expect(versions.map((v) => v.split("\t")[0])).toEqual(["1.1.0", "1.0.0"]);
    expect(await page.locator("table.dist-tags").innerText()).toMatch(/latest\s+1\.1\.0/);
    expect(await page.getByLabel("install command").inputValue()).toBe("npm install @ops/labels");
    expect(await page.getByRole("button", { name: "Remove the tag latest" }).getAttribute("aria-disabled")).toBe("true");
    // A tag set on the page is what the npm client reads, and removing it there removes it here.
    await page.getByLabel("Tag", { exact: true }).fill("beta");
    await page.getByLabel("Version", { exact: true }).selectOption("1.0.0");
    await page.getByRole("button", { name: "Set tag" }).click();
    await page.getByText("beta now names 1.0.0.").waitFor();
    await shot(page, "packages-detail");
    const token = mintToken(t, dana.principal, { role: "developer", project: SLUG });
    expect((await npm(["dist-tag", "ls", "@ops/labels"], home, token)).stdout).toContain("beta: 1.0.0");
    await page.getByRole("button", { name: "Remove the tag beta" }).click();
    await page.getByText("The tag beta is removed.").waitFor();
    const after = await npm(["dist-tag", "ls", "@ops/labels"], home, token);
    expect(after.stdout).toContain("latest: 1.1.0");
    expect(after.stdout).not.toContain("beta");
    expect(problems).toEqual([]);
    await context.close();
  });

  test("claim a crate name, publish it with cargo, yank and unyank a version, release an empty claim", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/projects/${SLUG}/packages`);
    await signIn(page, dana);
    await page.getByRole("heading", { name: "Claim a name" }).waitFor();
    // A name the registry cannot hold is refused with the server's reason.
    await page.getByLabel("Registry", { exact: true }).selectOption("cargo");
    await page.getByLabel("Package name").fill("Label Printer!");
    await page.getByRole("button", { name: "Claim" }).click();
    await page.locator(".claim-form .alert-error").waitFor();
    expect(await page.locator(".claim-form .alert-error").innerText()).toMatch(/name/i);
    for (const name of ["label-printer", "spare-name"]) {
      await page.getByLabel("Package name").fill(name);
      await page.getByRole("button", { name: "Claim" }).click();
      await page.getByText(`The cargo name ${name} is this project's`).waitFor();
    }
    expect(await page.locator("table.packages tr", { hasText: "spare-name" }).innerText()).toContain("nothing published");
    await shot(page, "packages-claimed");

    // Publish two versions with the real cargo client, under the claim made on the page.
    const token = mintToken(t, dana.principal, { role: "developer", project: SLUG });
    for (const v of ["0.1.0", "0.1.1"]) {
      const r = await cargo(["publish", "--registry", "ops", "--no-verify", "--allow-dirty"], crateDir("label-printer", v), token);
      expect([r.code, r.stderr]).toEqual([0, expect.stringContaining(`Published label-printer v${v}`)]);
    }
    const app = crateDir("shop-app", "0.1.0", `label-printer = { version = "0.1", registry = "ops" }\n`);
    expect(await lockedVersion(app, "label-printer", token)).toBe("0.1.1");

    await page.goto(`${t.url}/projects/${SLUG}/packages/cargo/label-printer`);
    await page.getByRole("button", { name: "Yank 0.1.1" }).click();
    await page.getByText("0.1.1 is yanked").waitFor();
    expect(await page.locator("table.versions tr", { hasText: "0.1.1" }).innerText()).toContain("yanked");
    await shot(page, "packages-crate-yanked");
    expect(await lockedVersion(app, "label-printer", token)).toBe("0.1.0");
    await page.getByRole("button", { name: "Unyank 0.1.1" }).click();
    await page.getByText("0.1.1 is published again.").waitFor();
    expect(await lockedVersion(app, "label-printer", token)).toBe("0.1.1");

    // A claim with nothing published is released (a published one offers no release).
    expect(await page.getByRole("button", { name: /Release the claim/ }).count()).toBe(0);
    await page.goto(`${t.url}/projects/${SLUG}/packages/cargo/spare-name`);
    await page.getByRole("button", { name: "Release the claim…" }).click();
    await page.getByRole("alertdialog", { name: "Release the claim on spare-name?" }).getByRole("button", { name: "Yes, release" }).click();
    await page.getByRole("heading", { name: "Packages", exact: true }).waitFor();
    await page.locator("table.packages tr", { hasText: "label-printer" }).waitFor();
    expect(await page.locator("table.packages tr", { hasText: "spare-name" }).count()).toBe(0);
    await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/packages/cargo/spare-name`, { token: dana.session }), 404);
    expect(problems).toEqual([]);
    await context.close();

    // A viewer sees the versions; yanking and claiming are withheld, saying why.
    const viewer = await (await watchedContext(browser)).newPage();
    await viewer.goto(`${t.url}/projects/${SLUG}/packages/cargo/label-printer`);
    await signIn(viewer, vic);
    const yank = viewer.getByRole("button", { name: "Yank 0.1.1" });
    await yank.waitFor();
    expect(await yank.getAttribute("aria-disabled")).toBe("true");
    expect(await yank.getAttribute("title")).toContain("packages.publish");
    await viewer.goto(`${t.url}/projects/${SLUG}/packages`);
    await viewer.getByText(/Claiming a package name: Needs/).waitFor();
    await shot(viewer, "packages-viewer");
    await viewer.context().close();
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
    // The filtered rows replace the unfiltered ones after the URL changes: wait for them.
    await page.waitForFunction(() => (document.querySelector("table.audit tbody tr")?.textContent ?? "").includes("denied"));
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
