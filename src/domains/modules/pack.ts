/**
 * Turning a module's halves into the archives a person's `cargo publish` / `npm publish` would
 * upload, with the real tools.
 *
 * Layers: `npm pack` runs in the native builder's bubblewrap sandbox (runNativeBuild), over a
 * staging copy of the module with ops's rewritten package.json: npm runs the package's
 * `prepack`/`prepare` scripts there, as it would for `npm publish`.
 *
 * Crates: `cargo package --no-verify` over a staging copy with ops's rewritten Cargo.toml. It
 * does not run in the sandbox: the toolchain cargo needs is rustup's, under the home of the user
 * ops runs as (`/root/.rustup` here, 0700), which the sandbox user cannot reach, and Debian's cargo
 * is too old for sparse registries. `--no-verify` compiles nothing and runs no build script or
 * proc macro, the staging copy leaves out the module's `.cargo/` (so no repository config can name
 * a `rustc` or a runner) and symbolic links were refused by the plan, so no repository code runs.
 * cargo copies a `readme` or `license-file` from any path into the crate, so the plan refuses
 * manifest paths that leave the module (manifests.ts `pathsOutside`), and every file of the
 * packaged crate must be one of the staged module's own, byte for byte (`foreignCrateFiles`):
 * no host file is read into a crate (decision 0207). cargo gets a closed environment: its own CARGO_HOME whose
 * config names ops's registry `ops` and replaces it with a local registry holding exactly the
 * sibling crates this release depends on, read from ops's own registry storage, so the packaged
 * manifest and Cargo.lock name ops's sparse registry and no token reaches cargo.
 */
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import type { Core } from "../../core/core";
import { PathRefused, readInside } from "../../core/inside";
import { runNativeBuild } from "../../adapters/builder/native";
import { projectIdentity, sandboxNetworkOf } from "../../adapters/sandbox";
import { runLimited } from "../../adapters/builder/limits";
import { DEFAULT_PATH } from "../../adapters/runtime/process";
import { storedVersion } from "../registries/service";
import { CARGO_REGISTRY } from "./manifests";
import { SKIPPED_DIRS, type ModulePlan, type PlannedModule } from "./plan";

/** Largest tarball `npm pack` may leave for ops to publish. */
const MAX_LAYER_BYTES = 256 * 1024 * 1024;

export type LogLine = (level: "info" | "warn" | "error", line: string) => void;

export interface PackContext {
  core: Core;
  /** The checked-out tree the plan read. */
  treeDir: string;
  /** Scratch directory of this publish (its parents must be reachable by the sandbox user). */
  workDir: string;
  log: LogLine;
  signal?: AbortSignal;
  /** Whose sandbox identity and network `npm pack` (and the package's own scripts) run with. */
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

/** The entries of a gzip'd tar: name, type flag and bytes. Reads ustar and GNU long names. */
export function* tarEntries(gz: Uint8Array): Generator<{ name: string; type: string; data: Uint8Array }> {
  const tar = Bun.gunzipSync(gz as Uint8Array<ArrayBuffer>);
  const dec = new TextDecoder();
  const cstr = (b: Uint8Array) => dec.decode(b.subarray(0, b.indexOf(0) === -1 ? b.length : b.indexOf(0)));
  let off = 0;
  let longName: string | null = null;
  while (off + 512 <= tar.length) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) return;
    const size = parseInt(cstr(h.subarray(124, 136)).trim() || "0", 8);
    const type = String.fromCharCode(h[156] || 48);
    const prefix = cstr(h.subarray(345, 500));
    const name = longName ?? (prefix ? `${prefix}/${cstr(h.subarray(0, 100))}` : cstr(h.subarray(0, 100)));
    const data = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === "L") {
      longName = cstr(data);
      continue;
    }
    longName = null;
    yield { name, type: type === "\0" ? "0" : type, data };
  }
}

/** The bytes of regular file `member` in a gzip'd tar, or null. */
export function tarMember(gz: Uint8Array, member: string): Uint8Array | null {
  for (const e of tarEntries(gz)) if (e.type === "0" && e.name === member) return e.data;
  return null;
}

/** Files cargo writes into a package itself, not copies of the module's. */
const CARGO_GENERATED = new Set(["Cargo.toml", "Cargo.toml.orig", "Cargo.lock", ".cargo_vcs_info.json"]);

/**
 * Every file of a packaged crate is one of the staged module's own regular files, byte for byte,
 * or one cargo generates. The manifest rules (manifests.ts `pathsOutside`) keep cargo from
 * reaching out of the module; this second check holds whatever way cargo might find to copy a
 * host file in (cargo runs as ops's user here, outside the sandbox).
 */
export function foreignCrateFiles(crate: Uint8Array, root: string, srcDir: string): string[] {
  const foreign: string[] = [];
  for (const e of tarEntries(crate)) {
    const rel = e.name.startsWith(`${root}/`) ? e.name.slice(root.length + 1) : null;
    if (rel === null || e.type !== "0") {
      foreign.push(e.name);
      continue;
    }
    if (CARGO_GENERATED.has(rel)) continue;
    const file = path.join(srcDir, rel);
    const st = path.relative(srcDir, file).startsWith("..") ? null : lstatSync(file, { throwIfNoEntry: false });
    if (!st?.isFile() || !Buffer.from(e.data).equals(readFileSync(file))) foreign.push(rel);
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

function findCargo(): string {
  const cargo = Bun.which("cargo", { PATH: `${process.env.PATH ?? ""}:${path.join(homedir(), ".cargo", "bin")}:${DEFAULT_PATH}` });
  if (!cargo) throw new PackFailure("cargo is not installed on the ops host: install a cargo ≥ 1.68 (rustup) to publish crates");
  return cargo;
}

/** Package a module's crate half with `cargo package` (see the file comment): the `.crate` bytes and its normalised Cargo.toml. */
export async function packageCrate(ctx: PackContext, plan: ModulePlan, m: PlannedModule): Promise<{ crate: Uint8Array; manifest: string }> {
  const { core } = ctx;
  const half = m.crate!;
  const base = path.join(ctx.workDir, "crates", m.name);
  rmSync(base, { recursive: true, force: true });
  const src = path.join(base, "src");
  stageCopy(path.join(ctx.treeDir, m.dir), src);
  writeFileSync(path.join(src, "Cargo.toml"), half.manifest);
  rmSync(path.join(src, "Cargo.lock"), { force: true });
  const registry = path.join(base, "registry");
  await writeLocalRegistry(core, registry, plan, m);
  const sparse = `sparse+${core.config.publicUrl}/cargo/`;
  const home = path.join(base, "home");
  mkdirSync(home, { recursive: true });
  writeFileSync(
    path.join(home, "config.toml"),
    [
      `[registries.${CARGO_REGISTRY}]`,
      `index = ${JSON.stringify(sparse)}`,
      "",
      "[source.ops-remote]",
      `registry = ${JSON.stringify(sparse)}`,
      'replace-with = "ops-release"',
      "",
      "[source.ops-release]",
      `local-registry = ${JSON.stringify(registry)}`,
      "",
      "[net]",
      "retry = 0",
      "",
    ].join("\n"),
  );
  const cargo = findCargo();
  const target = path.join(base, "target");
  const argv = [cargo, "package", "--no-verify", "--allow-dirty", "--manifest-path", path.join(src, "Cargo.toml")];
  ctx.log("info", `$ cargo package --no-verify --allow-dirty   (${half.name} ${plan.version})`);
  const rustupHome = process.env.RUSTUP_HOME ?? path.join(homedir(), ".rustup");
  const verdict = await runLimited({
    argv,
    env: {
      PATH: `${path.dirname(cargo)}:${DEFAULT_PATH}`,
      HOME: home,
      CARGO_HOME: home,
      CARGO_TARGET_DIR: target,
      CARGO_TERM_COLOR: "never",
      ...(existsSync(rustupHome) ? { RUSTUP_HOME: rustupHome } : {}),
      ...(process.env.RUSTUP_TOOLCHAIN ? { RUSTUP_TOOLCHAIN: process.env.RUSTUP_TOOLCHAIN } : {}),
    },
    cwd: src,
    deadline: Date.now() + core.config.buildStepTimeoutSecs * 1000,
    cgroup: null,
    signal: ctx.signal,
    onLine: (stream, line) => ctx.log(stream === "stderr" && /^error/.test(line) ? "error" : "info", line),
  });
  if (verdict.kind === "cancelled") throw new PackFailure("cancelled while cargo packaged the crate", true);
  if (verdict.kind !== "ok") throw new PackFailure(`cargo package of ${half.name} ${verdict.why}`);
  const file = path.join(target, "package", `${half.name}-${plan.version}.crate`);
  if (!existsSync(file)) throw new PackFailure(`cargo package wrote no ${path.basename(file)}`);
  const crate = new Uint8Array(readFileSync(file));
  const foreign = foreignCrateFiles(crate, `${half.name}-${plan.version}`, src);
  if (foreign.length > 0) throw new PackFailure(`the packaged crate holds ${foreign.slice(0, 3).map((f) => `"${f}"`).join(", ")}${foreign.length > 3 ? ` and ${foreign.length - 3} more` : ""}, not files of ${m.dir}: refused (readme, license-file and targets must name files inside the module)`);
  const toml = tarMember(crate, `${half.name}-${plan.version}/Cargo.toml`);
  if (!toml) throw new PackFailure(`the packaged crate has no ${half.name}-${plan.version}/Cargo.toml`);
  return { crate, manifest: new TextDecoder().decode(toml) };
}

/** The file name `npm pack` gives `name@version`. */
export function npmPackName(name: string, version: string): string {
  return `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`;
}

/** Pack a module's layer with `npm pack` in the sandbox (see the file comment): the tarball's bytes. */
export async function packLayer(ctx: PackContext, plan: ModulePlan, m: PlannedModule): Promise<Uint8Array> {
  const { core } = ctx;
  const half = m.layer!;
  const base = path.join(ctx.workDir, "layers", m.name);
  rmSync(base, { recursive: true, force: true });
  const src = path.join(base, "src");
  stageCopy(path.join(ctx.treeDir, m.dir), src);
  writeFileSync(path.join(src, "package.json"), half.manifest);
  const tgz = npmPackName(half.name, plan.version);
  rmSync(path.join(src, tgz), { force: true });
  const res = await runNativeBuild(
    {
      contextDir: src,
      workDir: path.join(base, "work"),
      cacheDir: null,
      checks: [],
      build: ["npm pack"],
      variables: [
        { name: "npm_config_update_notifier", value: "false", secret: false },
        { name: "npm_config_fund", value: "false", secret: false },
        { name: "npm_config_audit", value: "false", secret: false },
      ],
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
  if (res.status === "cancelled") throw new PackFailure("cancelled while npm packed the layer", true);
  if (res.status !== "succeeded") throw new PackFailure(`npm pack of ${half.name}: ${res.error ?? "failed"}`);
  // The staging copy belongs to the sandbox user, and the package's own scripts (`postpack`) ran
  // there: the tarball is read without following a link it may have become (src/core/inside.ts).
  let bytes: Buffer | null;
  try {
    bytes = readInside(src, tgz, { what: "npm pack's tarball", tree: "the staging copy of the module", maxBytes: MAX_LAYER_BYTES });
  } catch (e) {
    if (e instanceof PathRefused) throw new PackFailure(`npm pack of ${half.name}: ${e.message}`);
    throw e;
  }
  if (!bytes) throw new PackFailure(`npm pack wrote no ${tgz}`);
  return new Uint8Array(bytes);
}
