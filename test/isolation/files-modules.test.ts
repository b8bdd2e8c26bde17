/**
 * The hostile repository, publish builds (DESIGN §5 "Publish builds and modules", §6 "Files"):
 * tags pushed with the real `git` CLI whose `modules/` tree tries to make ops, running as root,
 * publish or read what is not the project's: a module's `postpack` script that swaps the tarball
 * `npm pack` wrote for a link to a root-only tarball (ops then read the link and published the
 * host's file as the project's package), a locale file linked to the data dir's key, and a module
 * folder linked to /etc. Each publish build fails as `publish` naming the path; nothing of the
 * host reaches the registry or the log.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expectStatus, type TestApp } from "../harness";
import { buildsApp, buildWorld, drain, getBuild, logText, type BuildWorld } from "../builds-fixtures";
import { claimModuleNames } from "../support/modules";
import { run } from "../support/registries";
import type { BuildResponse } from "../../src/domains/builds/model";
import { pushTree, rootOnlyFolder, type RootOnly } from "./files-support";

let t: TestApp;
let w: BuildWorld;
let vault: RootOnly;
let stolen: string;

const layer = (scripts: Record<string, string> = {}) => JSON.stringify({ name: "alpha", version: "0.0.0", main: "index.js", license: "MIT", scripts });

async function publishBuilds(): Promise<BuildResponse[]> {
  return (await expectStatus<BuildResponse[]>(await w.ctx.req("GET", "/builds"), 200)).filter((b) => b.kind === "publish");
}

/** Push `tag` with `files` and `links`, run the publish build it queues; returns the build. */
async function publish(tag: string, files: Record<string, string>, links: Record<string, string> = {}): Promise<BuildResponse> {
  const before = new Set((await publishBuilds()).map((b) => b.id));
  await pushTree(w.local.remote, tag, files, links, { tag: true });
  const queued = (await publishBuilds()).filter((b) => !before.has(b.id));
  expect(queued).toHaveLength(1);
  await drain(t);
  return getBuild(w, queued[0]!.id);
}

beforeAll(async () => {
  vault = rootOnlyFolder();
  // A tarball npm would accept as @ops/alpha, in a folder only root may enter.
  const pkg = path.join(vault.dir, "pkg");
  mkdirSync(path.join(pkg, "package"), { recursive: true });
  writeFileSync(path.join(pkg, "package", "package.json"), JSON.stringify({ name: "@ops/alpha", version: "1.0.0", main: "stolen.txt" }));
  writeFileSync(path.join(pkg, "package", "stolen.txt"), `${vault.secret}\n`);
  stolen = path.join(vault.dir, "stolen.tgz");
  expect((await run(["tar", "-czf", stolen, "-C", pkg, "package"], { cwd: vault.dir })).code).toBe(0);
  t = await buildsApp();
  w = await buildWorld(t);
  await claimModuleNames(t, w.ctx.slug, w.ctx.owner, ["alpha", "beta"]);
}, 120_000);

afterAll(async () => {
  w?.local.remove();
  await t?.close();
  vault?.remove();
});

describe("a publish build of a hostile modules/ tree", () => {
  test("npm pack's tarball swapped for a link by the package's postpack script: refused, nothing published", async () => {
    const swap = `rm -f ops-alpha-1.0.0.tgz && ln -s ${stolen} ops-alpha-1.0.0.tgz`;
    const b = await publish("v1.0.0", { "modules/alpha/package.json": layer({ postpack: swap }), "modules/alpha/index.js": "exports.value = 41;\n" });
    expect({ status: b.status, failure_kind: b.failure_kind }).toEqual({ status: "failed", failure_kind: "publish" });
    expect(b.error).toBe(`npm pack of @ops/alpha: npm pack's tarball "ops-alpha-1.0.0.tgz" leads outside the staging copy of the module: the symbolic link "ops-alpha-1.0.0.tgz" points to the absolute path ${JSON.stringify(stolen)}`);
    expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([
      ["clone", true],
      ["plan", true],
      ["crates", true],
      ["layers", false],
    ]);
    const npm = await t.request("GET", `/npm/${encodeURIComponent("@ops/alpha")}`, { token: w.token });
    expect(npm.status).toBe(404);
    expect(await logText(w, b.id)).not.toContain(vault.secret);
  });

  test("a locale file linked to the data dir's key and a module folder linked to /etc: the plan refuses both, naming them", async () => {
    const key = path.join(t.dataDir, "keys", "secrets.key");
    const b = await publish("v1.1.0", { "modules/alpha/package.json": layer(), "modules/alpha/index.js": "exports.value = 41;\n" }, { "modules/alpha/locales/en.json": key, "modules/beta": "/etc" });
    expect({ status: b.status, failure_kind: b.failure_kind }).toEqual({ status: "failed", failure_kind: "publish" });
    expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([
      ["clone", true],
      ["plan", false],
    ]);
    const log = await logText(w, b.id);
    expect(log).toContain("modules/beta is a symbolic link, not a directory");
    expect(log).toContain(`the file "modules/alpha/locales/en.json" leads outside the repository: the symbolic link "modules/alpha/locales/en.json" points to the absolute path ${JSON.stringify(key)}`);
    expect(log).not.toContain("root:x:0:0");
  });
});
