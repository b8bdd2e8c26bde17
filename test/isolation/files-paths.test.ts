/**
 * The hostile repository, paths (DESIGN §6 "Files"; issue 19 findings 1, 2 and 6): commits pushed
 * with the real `git` CLI to the built-in host, whose `ops.toml` names a `context`, `output` or
 * `dockerfile` that is a symbolic link to the data dir, to /etc, to /proc, or has a link in the
 * middle of the path. ops runs as root, as CI and a VM install run it. Each build must fail as
 * `build` at once, with a message naming the path and the link, having read, bound, handed over
 * and packed nothing: the data dir and a root-only folder keep their owner, the log holds none of
 * their contents, no image is pushed. A link that stays inside the checkout still builds.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { lstatSync } from "node:fs";
import path from "node:path";
import type { TestApp } from "../harness";
import { buildsApp, buildWorld, drain, getBuild, logText, manualBuild, SAMPLE_APP, type BuildWorld } from "../builds-fixtures";
import { pushTree, rootOnlyFolder, type RootOnly } from "./files-support";

let t: TestApp;
let w: BuildWorld;
let vault: RootOnly;
const ids: Record<string, number> = {};

const APP = { "server.js": SAMPLE_APP["server.js"], "build.js": SAMPLE_APP["build.js"] };
const native = (keys: string) => `[services.web]\n${keys}\nstart = "node server.js"\nport = 3000\n`;

/** Each branch: its ops.toml keys, files and links. */
function cases(dataDir: string): Record<string, { toml: string; files?: Record<string, string>; links: Record<string, string> }> {
  return {
    "ctx-data-dir": { toml: native('context = "lnk"\nbuild = ["ls -la /app /app/keys", "cat /app/keys/secrets.key"]'), links: { lnk: dataDir } },
    "ctx-middle": { toml: native('context = "lnk/x"\nbuild = ["cat /app/secret.txt"]'), links: { lnk: vault.dir } },
    "ctx-etc": { toml: native('context = "etc"\nbuild = []'), links: { etc: "/etc" } },
    "ctx-proc": { toml: native('context = "host"\nbuild = ["ls /app"]'), links: { host: "/proc" } },
    "ctx-up": { toml: native('context = "up/vault"\nbuild = []'), links: { up: "../../../../../../../../../../../.." + path.dirname(vault.dir) } },
    "out-etc": { toml: native('build = ["ln -s /etc site"]\noutput = "site"'), links: {} },
    "out-middle": { toml: native('build = []\noutput = "lnk/x"'), links: { lnk: vault.dir } },
    "out-proc": { toml: native('build = []\noutput = "p/self"'), links: { p: "/proc" } },
    "dockerfile-etc": { toml: '[services.web]\ndockerfile = "Dockerfile"\nport = 3000\n', links: { Dockerfile: "/etc/passwd" } },
    "dockerfile-middle": { toml: '[services.web]\ndockerfile = "conf/passwd"\nport = 3000\n', links: { conf: "/etc" } },
    "ctx-inside": { toml: native('context = "current"\nbuild = ["node build.js"]\noutput = "dist"'), files: { "app/server.js": APP["server.js"], "app/build.js": APP["build.js"] }, links: { current: "app" } },
  };
}

beforeAll(async () => {
  vault = rootOnlyFolder();
  t = await buildsApp();
  w = await buildWorld(t);
  for (const [branch, c] of Object.entries(cases(t.dataDir))) {
    await pushTree(w.local.remote, branch, { ...APP, ...c.files, "ops.toml": c.toml }, c.links);
    ids[branch] = (await manualBuild(w, branch)).id;
  }
  await drain(t);
}, 300_000);

afterAll(async () => {
  w?.local.remove();
  await t?.close();
  vault?.remove();
});

/** The build failed as `build` at clone (nothing ran), with exactly `error`; no image. */
async function refusedAtClone(branch: string, error: string): Promise<string> {
  const b = await getBuild(w, ids[branch]!);
  expect({ status: b.status, failure_kind: b.failure_kind, error: b.error }).toEqual({ status: "failed", failure_kind: "build", error });
  expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([["clone", false]]);
  expect(b.image_digest ?? null).toBeNull();
  return logText(w, b.id);
}

describe("a symlinked build context", () => {
  test("to the data dir: refused naming the link; the data dir keeps its owner and nothing of it reaches the log", async () => {
    const log = await refusedAtClone("ctx-data-dir", `the build context "lnk" leads outside the repository: the symbolic link "lnk" points to the absolute path ${JSON.stringify(t.dataDir)}`);
    for (const p of [t.dataDir, path.join(t.dataDir, "keys"), path.join(t.dataDir, "keys", "secrets.key"), path.join(t.dataDir, "ops.db")]) expect(lstatSync(p).uid).toBe(0);
    expect(log).not.toContain("secrets.key");
    expect(log).not.toContain("ops.db");
  });

  test("with a link in the middle (lnk/x): refused; the root-only folder is not handed to the sandbox user", async () => {
    const log = await refusedAtClone("ctx-middle", `the build context "lnk/x" leads outside the repository: the symbolic link "lnk" points to the absolute path ${JSON.stringify(vault.dir)}`);
    for (const p of [vault.dir, path.join(vault.dir, "x"), path.join(vault.dir, "x", "secret.txt")]) expect(lstatSync(p).uid).toBe(0);
    expect(log).not.toContain(vault.secret);
  });

  test("to /etc with no build command: refused before the root-run scan and packer see a file", async () => {
    const log = await refusedAtClone("ctx-etc", 'the build context "etc" leads outside the repository: the symbolic link "etc" points to the absolute path "/etc"');
    expect(log).not.toContain("passwd");
  });

  test("to /proc: refused, the host's processes are never listed and the scan never walks it", async () => {
    const log = await refusedAtClone("ctx-proc", 'the build context "host" leads outside the repository: the symbolic link "host" points to the absolute path "/proc"');
    expect(log).not.toMatch(/^\d+$/m);
  });

  test("through a relative link that climbs out of the checkout: refused", async () => {
    const b = await getBuild(w, ids["ctx-up"]!);
    expect(b).toMatchObject({ status: "failed", failure_kind: "build" });
    expect(b.error).toStartWith('the build context "up/vault" leads outside the repository: the symbolic link "up" points to "../../');
  });

  test("a link that stays inside the checkout is followed: the build runs in the folder it names", async () => {
    const b = await getBuild(w, ids["ctx-inside"]!);
    expect(b.status).toBe("healthy");
    expect(b.image_digest).toMatch(/^sha256:/);
    expect(await logText(w, b.id)).toContain("context current");
  });
});

describe("a symlinked output directory", () => {
  test("made by the build, to /etc: refused after the build, naming it; nothing is scanned or packed", async () => {
    const b = await getBuild(w, ids["out-etc"]!);
    expect({ status: b.status, failure_kind: b.failure_kind, error: b.error }).toEqual({ status: "failed", failure_kind: "build", error: 'the output directory "site" leads outside the build context: the symbolic link "site" points to the absolute path "/etc"' });
    expect(b.step_timings.map((s) => s.step)).toEqual(["clone", "checks", "build"]);
    expect(b.image_digest ?? null).toBeNull();
  });

  test("committed with a link in the middle (lnk/x) to a root-only folder: refused naming the link", async () => {
    const b = await getBuild(w, ids["out-middle"]!);
    expect({ status: b.status, failure_kind: b.failure_kind, error: b.error }).toEqual({
      status: "failed",
      failure_kind: "build",
      error: `the output directory "lnk/x" leads outside the build context: the symbolic link "lnk" points to the absolute path ${JSON.stringify(vault.dir)}`,
    });
    expect(await logText(w, b.id)).not.toContain(vault.secret);
  });

  test("through /proc: refused naming the link", async () => {
    const b = await getBuild(w, ids["out-proc"]!);
    expect(b).toMatchObject({ status: "failed", failure_kind: "build", error: 'the output directory "p/self" leads outside the build context: the symbolic link "p" points to the absolute path "/proc"' });
  });
});

describe("a symlinked Dockerfile", () => {
  test("to /etc/passwd: refused at clone, before buildah reads it and prints its lines", async () => {
    const log = await refusedAtClone("dockerfile-etc", 'the Dockerfile "Dockerfile" leads outside the build context: the symbolic link "Dockerfile" points to the absolute path "/etc/passwd"');
    expect(log.toLowerCase()).not.toContain("root:x:0:0");
  });

  test("through a linked folder (conf/passwd, conf -> /etc): refused naming the link", async () => {
    const log = await refusedAtClone("dockerfile-middle", 'the Dockerfile "conf/passwd" leads outside the build context: the symbolic link "conf" points to the absolute path "/etc"');
    expect(log.toLowerCase()).not.toContain("root:x:0:0");
  });
});
