/**
 * Turning a module's halves into the archives a person's `cargo publish` / `npm publish` would
 * upload, with the real tools, each in the project's sandbox (`runNativeBuild`: its network
 * namespace, uid, memory, process and time limits; DESIGN §6 "Every kind of run", decision 0500)
 * over a staging copy of the module with ops's rewritten manifest.
 *
 * Layers: `npm pack`, which runs the package's `prepack`/`prepare` scripts there, as it would for
 * `npm publish`.
 *
 * Crates: `cargo package --no-verify` with the cargo under the host's system trees, the one every
 * sandbox sees (Debian's; rustup's, under the home of ops's user, is not visible there). Older
 * than 1.68 it reads sparse registries only as the unstable `-Z sparse-registry`, so ops passes
 * that flag alone (with `RUSTC_BOOTSTRAP=1`, which lets a stable cargo take it; the plan refuses
 * `cargo-features`, so the manifest cannot use the licence). `--no-verify` compiles nothing and
 * runs no build script or proc macro, and the staging copy leaves out the module's `.cargo/`.
 * cargo gets a closed environment inside the sandbox's packaging folder (`/app`): its own
 * CARGO_HOME whose config names ops's registry `ops` and replaces it with a local registry holding
 * exactly the sibling crates this release depends on, read from ops's own registry storage, so the
 * packaged manifest and Cargo.lock name ops's sparse registry and no token reaches cargo. The
 * plan refuses dependencies from any other registry or git repository (manifests.ts); should one
 * slip through, the network namespace keeps cargo off the host's loopback and private ranges.
 * cargo copies a `readme` or `license-file` from any path it sees, so the plan refuses manifest
 * paths that leave the module (manifests.ts `pathsOutside`), and every file of the packaged crate
 * must be one of the module's own, byte for byte (`foreignCrateFiles`, decision 0207).
 */
import { copyFileSync, mkdirSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { PathRefused, readInside } from "../../core/inside";
import { runNativeBuild, SANDBOX_APP } from "../../adapters/builder/native";
import type { BuildVariable } from "../../adapters/builder/types";
import { projectIdentity, sandboxNetworkOf } from "../../adapters/sandbox";
import { HOST_TREES } from "../../adapters/sandbox/bwrap";
import { DEFAULT_PATH } from "../../adapters/runtime/process";
import { storedVersion } from "../registries/service";
import { CARGO_REGISTRY } from "./manifests";
import { SKIPPED_DIRS, type ModulePlan, type PlannedModule } from "./plan";
import { replaceTarMember, tarEntries, tarMember } from "./tar";

/** Largest archive `npm pack` or `cargo package` may leave for ops to publish. */
const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;

export type LogLine = (level: "info" | "warn" | "error", line: string) => void;

export interface PackContext {
  core: Core;
  /** The checked-out tree the plan read. */
  treeDir: string;
  /** Scratch directory of this publish (its parents must be reachable by the sandbox user). */
  workDir: string;
  log: LogLine;
  signal?: AbortSignal;
  /** Whose sandbox identity and network `npm pack` and `cargo package` run with. */
  project: { id: string };
}

/** A step that failed for a reason the log explains. */
export class PackFailure extends Error {
  constructor(message: string, readonly cancelled = false) {
    super(message);
    this.name = "PackFailure";
  }
}

/** Copy a module's regular files and directories (not build output, installs, VCS or .cargo/). */
function stageCopy(src: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const e of readdirSync(src, { withFileTypes: true })) {
    const from = path.join(src, e.name);
    const to = path.join(dest, e.name);
    if (e.isDirectory()) {
      if (!SKIPPED_DIRS.has(e.name)) stageCopy(from, to);
    } else if (e.isFile()) {
      copyFileSync(from, to);
    }
  }
}

/** Files cargo writes into a package itself, not copies of the module's. */
const CARGO_GENERATED = new Set(["Cargo.toml", "Cargo.toml.orig", "Cargo.lock", ".cargo_vcs_info.json"]);

/**
 * Every file of a packaged crate is one of the module's own regular files in the checkout, byte
 * for byte, or one cargo generates. The manifest rules (manifests.ts `pathsOutside`) keep cargo
 * from reaching out of the module; this second check holds whatever way cargo might find to copy
 * another file it sees in (a system file of the sandbox, ops's own config beside the staging
 * copy). The module is read without following a link (src/core/inside.ts).
 */
export function foreignCrateFiles(crate: Uint8Array, root: string, moduleDir: string): string[] {
  const foreign: string[] = [];
  for (const e of tarEntries(crate)) {
    const rel = e.name.startsWith(`${root}/`) ? e.name.slice(root.length + 1) : null;
    if (rel === null || e.type !== "0") {
      foreign.push(e.name);
      continue;
    }
    if (CARGO_GENERATED.has(rel)) continue;
    let own: Buffer | null = null;
    try {
      own = path.isAbsolute(rel) || rel.split("/").includes("..") ? null : readInside(moduleDir, rel, { what: "the crate's file", tree: "the module", maxBytes: MAX_ARCHIVE_BYTES });
    } catch (e) {
      if (!(e instanceof PathRefused)) throw e;
    }
    if (!own || !own.equals(e.data)) foreign.push(rel);
  }
  return foreign;
}

/** cargo's index path of a crate name (`ab/cd/abcd…`, `3/a/abc`, `2/ab`, `1/a`), lower case. */
function indexPath(name: string): string {
  const n = name.toLowerCase();
  if (n.length === 1) return `1/${n}`;
  if (n.length === 2) return `2/${n}`;
  if (n.length === 3) return `3/${n[0]}/${n}`;
  return `${n.slice(0, 2)}/${n.slice(2, 4)}/${n}`;
}

/**
 * A cargo local registry holding the sibling crates `crate` needs at the release's version,
 * transitively, read from ops's registry (index line and `.crate` as stored).
 */
async function writeLocalRegistry(core: Core, dir: string, plan: ModulePlan, m: PlannedModule): Promise<void> {
  mkdirSync(path.join(dir, "index"), { recursive: true });
  const byModule = new Map(plan.modules.map((x) => [x.name, x]));
  const todo = [...(m.crate?.requires ?? [])];
  const done = new Set<string>();
  while (todo.length > 0) {
    const sib = byModule.get(todo.pop()!);
    if (!sib?.crate || done.has(sib.name)) continue;
    done.add(sib.name);
    const stored = await storedVersion(core, "cargo", sib.crate.name, plan.version);
    if (!stored) throw new PackFailure(`${sib.crate.name}@${plan.version} is not in ops's cargo registry; it must publish before ${m.crate!.name}`);
    const line = JSON.parse(stored.manifest) as Record<string, unknown>;
    line.yanked = false;
    const file = path.join(dir, "index", indexPath(stored.name));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(line)}\n`);
    writeFileSync(path.join(dir, `${stored.name}-${String(line.vers)}.crate`), stored.archive);
    todo.push(...sib.crate.requires);
  }
}

/** The cargo every sandbox sees, by its path on the host (the same inside), and its minor version. */
interface SandboxCargo {
  path: string;
  minor: number;
}

const cargoVersions = new Map<string, number>();

/** The cargo under the host's system trees (what a sandbox's PATH finds), or why there is none. */
function sandboxCargo(): SandboxCargo | string {
  const missing = "no cargo is installed where sandboxes see it (the host's /usr): install Debian's cargo (apt-get install cargo) to publish crates; rustup's, under a person's home, is not visible to sandboxes";
  const found = Bun.which("cargo", { PATH: DEFAULT_PATH });
  if (!found) return missing;
  const real = realpathSync(found);
  if (!HOST_TREES.some((t) => real.startsWith(`${t}/`))) return `${found} leads to ${real}, outside the host's system trees a sandbox sees: ${missing}`;
  const key = `${real}@${statSync(real).mtimeMs}`;
  let minor = cargoVersions.get(key);
  if (minor === undefined) {
    // The host's own binary asked its version, with no configuration of anyone's.
    const out = Bun.spawnSync([real, "--version"], { cwd: "/", env: { PATH: DEFAULT_PATH, HOME: "/nonexistent", CARGO_HOME: "/nonexistent" }, stdout: "pipe", stderr: "pipe" });
    const m = /^cargo 1\.(\d+)\./.exec(out.stdout.toString());
    if (out.exitCode !== 0 || !m) return `${found} --version did not say which cargo it is: ${out.stderr.toString().trim().slice(0, 200)}`;
    minor = Number(m[1]);
    cargoVersions.set(key, minor);
  }
  return { path: found, minor };
}

/** cargo learned sparse registries without `-Z sparse-registry` in 1.68. */
const SPARSE_STABLE_MINOR = 68;

/** The CARGO_HOME config of a packaging: ops's registry `ops`, replaced by the release's local registry (inside the sandbox). */
function cargoConfig(sparse: string): string {
  return [
    `[registries.${CARGO_REGISTRY}]`,
    `index = ${JSON.stringify(sparse)}`,
    "",
    "[source.ops-remote]",
    `registry = ${JSON.stringify(sparse)}`,
    'replace-with = "ops-release"',
    "",
    "[source.ops-release]",
    `local-registry = ${JSON.stringify(path.posix.join(SANDBOX_APP, "registry"))}`,
    "",
    "[net]",
    "retry = 0",
    "",
  ].join("\n");
}

const variable = (name: string, value: string): BuildVariable => ({ name, value, secret: false });

/**
 * Run `command` in the project's sandbox over `contextDir` (mounted at /app), as a build step
 * with the build limits; a failure is a PackFailure naming `what`.
 */
async function runPacker(ctx: PackContext, what: string, contextDir: string, workDir: string, command: string, variables: BuildVariable[]): Promise<void> {
  const { core } = ctx;
  const res = await runNativeBuild(
    {
      contextDir,
      workDir,
      cacheDir: null,
      checks: [],
      build: [command],
      variables,
      memoryMb: core.config.buildMemoryMb,
      stepTimeoutSecs: core.config.buildStepTimeoutSecs,
      pids: core.config.sandboxPids,
      tmpMb: core.config.sandboxTmpMb,
      output: ".",
      hide: [core.config.dataDir],
      identity: projectIdentity(core, ctx.project.id),
      network: sandboxNetworkOf(core),
    },
    { onLine: (l) => ctx.log(l.level, l.line), signal: ctx.signal, now: () => core.clock.now() },
  );
  if (res.status === "cancelled") throw new PackFailure(`cancelled during ${what}`, true);
  if (res.status !== "succeeded") throw new PackFailure(`${what}: ${res.error ?? "failed"}`);
}

/**
 * A file the packer left in the staging folder, read without following a link it may have
 * become: the folder belongs to the sandbox user (src/core/inside.ts).
 */
function packed(dir: string, rel: string, what: string, step: string): Uint8Array {
  let bytes: Buffer | null;
  try {
    bytes = readInside(dir, rel, { what, tree: "the staging copy of the module", maxBytes: MAX_ARCHIVE_BYTES });
  } catch (e) {
    if (e instanceof PathRefused) throw new PackFailure(`${step}: ${e.message}`);
    throw e;
  }
  if (!bytes) throw new PackFailure(`${step} wrote no ${path.basename(rel)}`);
  return new Uint8Array(bytes);
}

/** Package a module's crate half with `cargo package` in the sandbox (see the file comment): the `.crate` bytes and its normalised Cargo.toml. */
export async function packageCrate(ctx: PackContext, plan: ModulePlan, m: PlannedModule): Promise<{ crate: Uint8Array; manifest: string }> {
  const { core } = ctx;
  const half = m.crate!;
  const cargo = sandboxCargo();
  if (typeof cargo === "string") throw new PackFailure(cargo);
  const base = path.join(ctx.workDir, "crates", m.name);
  rmSync(base, { recursive: true, force: true });
  // What the sandbox sees at /app: the staged module, the release's local registry, cargo's home.
  const app = path.join(base, "app");
  const src = path.join(app, "src");
  stageCopy(path.join(ctx.treeDir, m.dir), src);
  writeFileSync(path.join(src, "Cargo.toml"), half.manifest);
  rmSync(path.join(src, "Cargo.lock"), { force: true });
  await writeLocalRegistry(core, path.join(app, "registry"), plan, m);
  mkdirSync(path.join(app, "cargo-home"), { recursive: true });
  writeFileSync(path.join(app, "cargo-home", "config.toml"), cargoConfig(`sparse+${core.config.publicUrl}/cargo/`));
  const old = cargo.minor < SPARSE_STABLE_MINOR;
  const command = `${cargo.path}${old ? " -Z sparse-registry" : ""} package --no-verify --allow-dirty --manifest-path src/Cargo.toml`;
  const variables = [
    variable("CARGO_HOME", path.posix.join(SANDBOX_APP, "cargo-home")),
    variable("CARGO_TARGET_DIR", path.posix.join(SANDBOX_APP, "target")),
    variable("CARGO_TERM_COLOR", "never"),
    ...(old ? [variable("RUSTC_BOOTSTRAP", "1")] : []),
  ];
  const step = `cargo package of ${half.name}`;
  ctx.log("info", `packaging ${half.name} ${plan.version} with cargo 1.${cargo.minor} in the project's sandbox`);
  await runPacker(ctx, step, app, path.join(base, "work"), command, variables);
  const root = `${half.name}-${plan.version}`;
  let crate = packed(app, `target/package/${root}.crate`, "cargo package's crate", step);
  const foreign = foreignCrateFiles(crate, root, path.join(ctx.treeDir, m.dir));
  if (foreign.length > 0) throw new PackFailure(`the packaged crate holds ${foreign.slice(0, 3).map((f) => `"${f}"`).join(", ")}${foreign.length > 3 ? ` and ${foreign.length - 3} more` : ""}, not files of ${m.dir}: refused (readme, license-file and targets must name files inside the module)`);
  const toml = tarMember(crate, `${root}/Cargo.toml`);
  if (!toml) throw new PackFailure(`the packaged crate has no ${root}/Cargo.toml`);
  const lock = old ? tarMember(crate, `${root}/Cargo.lock`) : null;
  if (lock) crate = replaceTarMember(crate, `${root}/Cargo.lock`, modernLock(lock));
  return { crate, manifest: new TextDecoder().decode(toml) };
}

/**
 * A Cargo.lock as cargo ≥ 1.68 writes it: cargo's unstable sparse registries spelled a sparse
 * source `registry+sparse+…`, which a later cargo takes for another source (`cargo install
 * --locked` then refuses the lockfile as out of date).
 */
function modernLock(lock: Uint8Array): Uint8Array {
  return new TextEncoder().encode(new TextDecoder().decode(lock).replaceAll('source = "registry+sparse+', 'source = "sparse+'));
}

/** The file name `npm pack` gives `name@version`. */
export function npmPackName(name: string, version: string): string {
  return `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`;
}

/** Pack a module's layer with `npm pack` in the sandbox (see the file comment): the tarball's bytes. */
export async function packLayer(ctx: PackContext, plan: ModulePlan, m: PlannedModule): Promise<Uint8Array> {
  const half = m.layer!;
  const base = path.join(ctx.workDir, "layers", m.name);
  rmSync(base, { recursive: true, force: true });
  const src = path.join(base, "src");
  stageCopy(path.join(ctx.treeDir, m.dir), src);
  writeFileSync(path.join(src, "package.json"), half.manifest);
  const tgz = npmPackName(half.name, plan.version);
  rmSync(path.join(src, tgz), { force: true });
  const step = `npm pack of ${half.name}`;
  const quiet = ["update_notifier", "fund", "audit"].map((k) => variable(`npm_config_${k}`, "false"));
  await runPacker(ctx, step, src, path.join(base, "work"), "npm pack", quiet);
  // The package's own scripts (`postpack`) ran in the staging copy: the tarball may be a link now.
  return packed(src, tgz, "npm pack's tarball", step);
}
