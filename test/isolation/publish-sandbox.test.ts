/**
 * The hostile repository, publish steps in the sandbox (DESIGN §6 "Every kind of run"; issue 32
 * finding 1): ops runs as root, as CI does, and a project claims its crate names, then pushes
 * tags whose `modules/*` trees try to make `cargo package` reach the host's loopback, where the
 * test listens with a canary on 127.0.0.1. A dependency on a loopback index (`registry-index`), a
 * git dependency and a named registry are refused by the plan, each named; a `[patch]` to a
 * loopback git repository, `[registries]` and `[source]` tables in the manifest, `.cargo/config.toml`
 * files in the module and at the repository's root and a `build.rs` that dials out publish without
 * effect. Below the plan (its rules bypassed), cargo runs in the project's sandbox: its network
 * namespace stops a loopback index, its limits are in the log and what it writes is the project's
 * uid's. Through all of it the canary sees nothing, and nothing it would answer reaches a log.
 */
import { describe, test, expect, beforeAll, afterAll, beforeEach } from "bun:test";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { TCPSocketListener } from "bun";
import { expectStatus, type TestApp } from "../harness";
import { buildsApp, buildWorld, drain, getBuild, logText, type BuildWorld } from "../builds-fixtures";
import { claimModuleNames } from "../support/modules";
import { projectIdentity } from "../../src/adapters/sandbox";
import { runsAsRoot } from "../../src/adapters/sandbox/users";
import { packageCrate, PackFailure, type PackContext } from "../../src/domains/modules/pack";
import { tarMember } from "../../src/domains/modules/tar";
import type { ModulePlan, PlannedModule } from "../../src/domains/modules/module-plan";
import type { BuildResponse } from "../../src/domains/builds/model";
import { pushTree } from "./files-support";

/** What the canary answers every connection with: a sparse index's config.json naming a marker. */
const MARKER = `canary-${crypto.randomUUID()}`;
let canary: TCPSocketListener<undefined>;
const seen: string[] = [];
let t: TestApp;
let w: BuildWorld;

const index = (p: string) => `sparse+http://127.0.0.1:${canary.port}/${p}/`;
const gitUrl = (p: string) => `http://127.0.0.1:${canary.port}/${p}.git`;

const pkg = (name: string, extra = "") => `[package]\nname = "${name}"\nversion = "0.0.0"\nedition = "2021"\ndescription = "${name}"\nlicense = "MIT"\n${extra}`;

/** A repository configuration that points every registry cargo knows at the canary. */
const hostileConfig = () =>
  [
    "[source.crates-io]",
    'replace-with = "canary"',
    "[source.canary]",
    `registry = "${index("config")}"`,
    "[registries.ops]",
    `index = "${index("config-ops")}"`,
    "[build]",
    'rustc-wrapper = "/bin/false"',
    "",
  ].join("\n");

async function publishBuilds(): Promise<BuildResponse[]> {
  return (await expectStatus<BuildResponse[]>(await w.ctx.req("GET", "/builds"), 200)).filter((b) => b.kind === "publish");
}

/** Push `tag` holding `files`, run the publish build it queues; returns the build. */
async function publish(tag: string, files: Record<string, string>): Promise<BuildResponse> {
  const before = new Set((await publishBuilds()).map((b) => b.id));
  await pushTree(w.local.remote, tag, files, {}, { tag: true });
  const queued = (await publishBuilds()).filter((b) => !before.has(b.id));
  expect(queued).toHaveLength(1);
  await drain(t);
  return getBuild(w, queued[0]!.id);
}

/** Every `.crate` file under `dir`. */
function crateFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile() && e.name.endsWith(".crate")) out.push(path.join(e.parentPath, e.name));
  return out;
}

beforeAll(async () => {
  canary = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: () => void seen.push("connection"),
      data(socket, data) {
        seen.push(new TextDecoder().decode(data).split("\r\n")[0] ?? "");
        const body = JSON.stringify({ dl: `http://127.0.0.1/${MARKER}`, api: null, marker: MARKER });
        socket.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      },
    },
  });
  t = await buildsApp({ OPS_BUILD_STEP_TIMEOUT_SECS: "300" });
  w = await buildWorld(t);
  await claimModuleNames(t, w.ctx.slug, w.ctx.owner, ["alpha", "beta"]);
}, 120_000);

// Each test's canary record is its own.
beforeEach(() => void (seen.length = 0));

afterAll(async () => {
  canary?.stop(true);
  w?.local.remove();
  await t?.close();
});

describe("a publish build of a modules/ tree that names the host's loopback", () => {
  test("the red team's repro: a dependency on a loopback index (and one on a loopback git repository) is refused at plan, each named; the canary sees nothing", async () => {
    const b = await publish("v1.0.0", {
      "modules/alpha/Cargo.toml": pkg("alpha", `\n[dependencies]\nleak = { version = "1", registry-index = "${index("index")}" }\n\n[target.'cfg(unix)'.dependencies]\nfetched = { version = "1", git = "${gitUrl("dep")}" }\n`),
      "modules/alpha/src/lib.rs": "pub fn value() -> u32 { 41 }\n",
    });
    const log = await logText(w, b.id);
    expect(seen).toEqual([]);
    expect(log).not.toContain(MARKER);
    expect({ status: b.status, failure_kind: b.failure_kind }).toEqual({ status: "failed", failure_kind: "publish" });
    expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([
      ["clone", true],
      ["plan", false],
    ]);
    expect(log).toContain(`modules/alpha/Cargo.toml [dependencies] leak names the registry index "${index("index")}"; a module's crate depends on crates.io and its sibling modules only`);
    expect(log).toContain(`modules/alpha/Cargo.toml [target.cfg(unix).dependencies] fetched is a git dependency ("${gitUrl("dep")}"); a module's crate depends on crates.io and its sibling modules only`);
  }, 300_000);

  test("a dependency on a registry the repository names: refused at plan, naming it", async () => {
    const b = await publish("v1.0.1", {
      "modules/alpha/Cargo.toml": pkg("alpha", `\n[dev-dependencies]\nnamed = { version = "1", registry = "canary" }\n`),
      "modules/alpha/src/lib.rs": "pub fn value() -> u32 { 41 }\n",
    });
    expect({ status: b.status, failure_kind: b.failure_kind }).toEqual({ status: "failed", failure_kind: "publish" });
    expect(await logText(w, b.id)).toContain(`modules/alpha/Cargo.toml [dev-dependencies] named names the registry "canary"; a module's crate depends on crates.io and its sibling modules only`);
    expect(seen).toEqual([]);
  }, 300_000);

  test("a [patch] to a loopback git repository, [registries] and [source] in the manifest, .cargo/config.toml files and a build.rs: published, and the canary sees nothing", async () => {
    const dial = `fn main() { let _ = std::net::TcpStream::connect("127.0.0.1:${canary.port}"); }\n`;
    const b = await publish("v1.1.0", {
      ".cargo/config.toml": hostileConfig(),
      "modules/alpha/.cargo/config.toml": hostileConfig(),
      "modules/alpha/Cargo.toml": pkg(
        "alpha",
        `build = "build.rs"\n\n[dependencies]\n\n[patch.crates-io]\nitoa = { git = "${gitUrl("patch")}" }\n\n[registries.canary]\nindex = "${index("manifest")}"\n\n[source.crates-io]\nreplace-with = "canary"\n`,
      ),
      "modules/alpha/build.rs": dial,
      "modules/alpha/src/lib.rs": "pub fn value() -> u32 { 41 }\n",
      // A binary makes every cargo resolve the crate's dependencies for its Cargo.lock, so beta's
      // sibling dependency is fetched from ops's registry (through the release's local copy).
      "modules/beta/Cargo.toml": pkg("beta", `\n[dependencies]\nalpha = { path = "../alpha" }\n\n[patch.ops]\n${w.ctx.slug}-alpha = { git = "${gitUrl("patch-ops")}" }\n`),
      "modules/beta/src/lib.rs": "pub fn value() -> u32 { alpha::value() + 1 }\n",
      "modules/beta/src/main.rs": 'fn main() { println!("{}", beta::value()); }\n',
    });
    const log = await logText(w, b.id);
    expect(seen).toEqual([]);
    expect(log).not.toContain(MARKER);
    expect({ status: b.status, failure_kind: b.failure_kind, error: b.error }).toEqual({ status: "published", failure_kind: null, error: null });
    expect(log).toContain("modules/alpha/Cargo.toml: [patch] left out");
    expect(log).toContain("modules/beta/Cargo.toml: [patch] left out");
    expect(log).toContain(`${w.ctx.slug}-beta@1.1.0: published to the cargo registry`);
    // beta's binary made cargo resolve its sibling in the sandbox: the lockfile names ops's registry.
    const crate = await t.request("GET", `/cargo/api/v1/crates/${w.ctx.slug}-beta/1.1.0/download`, { token: w.token });
    expect(crate.status).toBe(200);
    const lock = tarMember(new Uint8Array(await crate.arrayBuffer()), `${w.ctx.slug}-beta-1.1.0/Cargo.lock`);
    expect(new TextDecoder().decode(lock!)).toContain(`name = "${w.ctx.slug}-alpha"\nversion = "1.1.0"\nsource = "sparse+${t.url}/cargo/"`);
  }, 300_000);
});

describe("cargo package below the plan: the project's sandbox", () => {
  /** packageCrate of module alpha with `manifest` as if the plan had passed it. */
  function belowThePlan(n: string, manifest: string, files: Record<string, string>): { ctx: PackContext; plan: ModulePlan; m: PlannedModule; log: string[]; workDir: string } {
    const slug = w.ctx.slug;
    const project = t.core.access.findProject(slug)!;
    const treeDir = path.join(t.dataDir, "run", "publish-sandbox", n, "tree");
    const workDir = path.join(t.dataDir, "run", "publish-sandbox", n, "work");
    for (const [p, text] of Object.entries({ ...files, "modules/alpha/Cargo.toml": manifest })) {
      const file = path.join(treeDir, p);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
    const m: PlannedModule = { name: "alpha", dir: "modules/alpha", description: "", crate: { name: `${slug}-alpha`, manifest, requires: [], skip: false }, layer: null, requires: [], locales: [], notes: [] };
    const plan: ModulePlan = { tag: "v9.0.0", version: "9.0.0", commit: "0".repeat(40), modules: [m], log: [] };
    const log: string[] = [];
    const ctx: PackContext = { core: t.core, treeDir, workDir, log: (_l, line) => void log.push(line), project };
    return { ctx, plan, m, log, workDir };
  }

  test("a loopback index the plan would refuse: cargo, in the project's network namespace, cannot reach it", async () => {
    const slug = w.ctx.slug;
    const manifest = pkg(`${slug}-alpha`, `\n[dependencies]\nleak = { version = "1", registry-index = "${index("below")}" }\n`).replace('version = "0.0.0"', 'version = "9.0.0"');
    const { ctx, plan, m, log } = belowThePlan("loopback", manifest, { "modules/alpha/src/lib.rs": "pub fn v() {}\n", "modules/alpha/src/main.rs": "fn main() {}\n" });
    const err = await packageCrate(ctx, plan, m).then(
      () => null,
      (e) => e,
    );
    expect(err).toBeInstanceOf(PackFailure);
    expect((err as Error).message).toContain(`cargo package of ${slug}-alpha`);
    expect(seen).toEqual([]);
    const text = log.join("\n");
    // cargo tried, and its connection went nowhere: the namespace's loopback is its own.
    expect(text).toContain(`127.0.0.1:${canary.port}`);
    expect(text).toContain("Couldn't connect to server");
    expect(text).not.toContain(MARKER);
  }, 300_000);

  test("a plain crate packs in the sandbox: the log names its limits, and cargo wrote as the project's user", async () => {
    const slug = w.ctx.slug;
    const manifest = pkg(`${slug}-alpha`).replace('version = "0.0.0"', 'version = "9.0.0"');
    const { ctx, plan, m, log, workDir } = belowThePlan("plain", manifest, { "modules/alpha/src/lib.rs": "pub fn v() {}\n" });
    const out = await packageCrate(ctx, plan, m);
    expect(out.manifest).toContain(`name = "${slug}-alpha"`);
    const text = log.join("\n");
    expect(text).toMatch(/memory limit \d+ MiB|memory limit .* NOT enforced/);
    expect(text).toMatch(/process limit \d+|process limit .* NOT enforced/);
    const crates = crateFiles(workDir);
    expect(crates).toHaveLength(1);
    const owner = statSync(crates[0]!).uid;
    if (runsAsRoot()) expect(owner).toBe(projectIdentity(t.core, t.core.access.findProject(slug)!.id).uid);
    else expect(owner).toBe(process.getuid!());
    expect(seen).toEqual([]);
  }, 300_000);
});
