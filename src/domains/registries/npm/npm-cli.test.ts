/**
 * The real npm CLI against the registry: publish of a scoped package, install into a fresh
 * project, dist-tags, whoami and ping, and the refusals (republish 409, unclaimed 403, a token
 * without packages.publish 403, a name out of scope 403). Only loopback is used.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "../../../../test/harness";
import { registryCast, claim, run, writeTree, type RegistryCast } from "../../../../test/support/registries";

let t: TestApp;
let cast: RegistryCast;
let home: string;

/** Run npm with its own HOME, cache and .npmrc holding `token` for the registry. */
async function npm(args: string[], cwd: string, token: string) {
  const rc = path.join(home, `npmrc-${token.slice(-6)}`);
  const host = new URL(t.url).host;
  writeFileSync(rc, `registry=${t.url}/npm/\n//${host}/npm/:_authToken=${token}\nupdate-notifier=false\nfund=false\naudit=false\n`);
  return run(["npm", ...args], {
    cwd,
    env: { HOME: home, npm_config_userconfig: rc, npm_config_cache: path.join(home, "cache"), npm_config_loglevel: "warn", npm_config_prefer_online: "true" },
  });
}

function makePackage(name: string, version: string, extra: Record<string, unknown> = {}): string {
  const dir = tempDir("ops-npm-pkg-");
  writeTree(dir, {
    "package.json": JSON.stringify({ name, version, main: "index.js", license: "MIT", ...extra }, null, 2),
    "index.js": `module.exports = ${JSON.stringify(`${name}@${version}`)};\n`,
    "README.md": `# ${name}\n`,
  });
  return dir;
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  home = tempDir("ops-npm-home-");
  await claim(t, cast, "npm", "@ops/lib");
  await claim(t, cast, "npm", "@ops/app-kit");
});
afterAll(() => t.close());

describe("npm CLI", () => {
  test("npm ping and npm whoami", async () => {
    const ping = await npm(["ping"], home, cast.publisherToken);
    expect(ping.code).toBe(0);
    const who = await npm(["whoami"], home, cast.publisherToken);
    expect(who.code).toBe(0);
    expect(who.stdout.trim()).toBe(cast.publisher.email);
  });

  test("npm publish of a scoped package, then npm install of it into a fresh project", async () => {
    const pub = await npm(["publish"], makePackage("@ops/lib", "1.0.0"), cast.publisherToken);
    expect(pub.stderr + pub.stdout).toContain("+ @ops/lib@1.0.0");
    expect(pub.code).toBe(0);
    // A second package that depends on the first: install resolves the tree from this registry.
    const kit = await npm(["publish"], makePackage("@ops/app-kit", "2.0.0", { dependencies: { "@ops/lib": "^1.0.0" } }), cast.publisherToken);
    expect(kit.code).toBe(0);

    const app = tempDir("ops-npm-app-");
    writeTree(app, { "package.json": JSON.stringify({ name: "app", version: "0.0.0", private: true }) });
    const inst = await npm(["install", "@ops/app-kit"], app, cast.readerToken);
    expect(inst.stderr).not.toContain("ERR");
    expect(inst.code).toBe(0);
    expect(JSON.parse(readFileSync(path.join(app, "node_modules/@ops/lib/package.json"), "utf8")).version).toBe("1.0.0");
    expect(readFileSync(path.join(app, "node_modules/@ops/app-kit/index.js"), "utf8")).toContain("@ops/app-kit@2.0.0");
    const lock = JSON.parse(readFileSync(path.join(app, "package-lock.json"), "utf8"));
    expect(lock.packages["node_modules/@ops/lib"].integrity).toMatch(/^sha512-/);
    expect(lock.packages["node_modules/@ops/lib"].resolved).toStartWith(`${t.url}/npm/`);
  });

  test("npm dist-tag add, ls and rm", async () => {
    expect((await npm(["publish", "--tag", "next"], makePackage("@ops/lib", "1.1.0-rc.1"), cast.publisherToken)).code).toBe(0);
    const add = await npm(["dist-tag", "add", "@ops/lib@1.0.0", "stable"], home, cast.publisherToken);
    expect(add.code).toBe(0);
    const ls = await npm(["dist-tag", "ls", "@ops/lib"], home, cast.readerToken);
    expect(ls.code).toBe(0);
    expect(ls.stdout).toContain("latest: 1.0.0");
    expect(ls.stdout).toContain("next: 1.1.0-rc.1");
    expect(ls.stdout).toContain("stable: 1.0.0");
    expect((await npm(["dist-tag", "rm", "@ops/lib", "stable"], home, cast.publisherToken)).code).toBe(0);
    const after = await npm(["dist-tag", "ls", "@ops/lib"], home, cast.readerToken);
    expect(after.stdout).not.toContain("stable");
    // A reader may list tags but not change them.
    const denied = await npm(["dist-tag", "add", "@ops/lib@1.0.0", "beta"], home, cast.readerToken);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain("403");
  });

  test("a republish is refused by the server with 409 (--force skips npm's own pre-check)", async () => {
    const again = await npm(["publish", "--force"], makePackage("@ops/lib", "1.0.0"), cast.publisherToken);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("409");
    expect(again.stderr).toContain("already published");
  });

  test("an unclaimed name is 403", async () => {
    const res = await npm(["publish"], makePackage("@ops/unclaimed", "1.0.0"), cast.publisherToken);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("403");
    expect(res.stderr).toContain("not claimed");
  });

  test("a name outside the estate scope is 403", async () => {
    const res = await npm(["publish"], makePackage("@elsewhere/lib", "1.0.0"), cast.publisherToken);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("403");
    expect(res.stderr).toContain("out of scope");
  });

  test("a token without packages.publish is 403", async () => {
    const res = await npm(["publish"], makePackage("@ops/lib", "1.2.0"), cast.readerToken);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("403");
    expect(existsSync(path.join(t.dataDir, "blobs"))).toBe(true);
  });

  test("a caller from another project cannot install (403)", async () => {
    const app = tempDir("ops-npm-app-");
    writeTree(app, { "package.json": JSON.stringify({ name: "app2", version: "0.0.0", private: true }) });
    const res = await npm(["install", "@ops/lib"], app, cast.outsiderToken);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("403");
  });
});
