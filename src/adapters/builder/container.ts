/**
 * The container builder: a service with a `dockerfile` is built by `buildah` (Debian package
 * `buildah`), daemonless and rootless — when ops runs as root, buildah runs as the host's
 * `nobody` like the native sandbox, with `chroot` isolation and `vfs` storage, so it needs neither
 * a daemon nor privileges. Without buildah on the PATH the build fails with `failure_kind: build`
 * and "install buildah to build Dockerfiles".
 *
 * buildah writes the image as an OCI layout into the build's work dir; the builds domain pushes
 * that layout into the embedded registry in-process, through the same path as a native image, so
 * no registry credential is ever handed to a child process. The image carries the commit and
 * repository labels, its timestamps are the commit's (`--timestamp`), non-secret build variables
 * are build args and secret ones are `--secret id=NAME` files (for `RUN --mount=type=secret`),
 * never build args, which images record. With a cache dir, buildah's storage lives there and
 * `--layers` reuses unchanged layers on the next build of the service.
 *
 * RUN instructions of a rootless buildah need a subordinate uid range for its user in
 * /etc/subuid; without one they fail, and the build log says so before the build starts.
 */
import { chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PathRefused, resolveInsideOrNull } from "../../core/inside";
import { secretMasker, DEFAULT_PATH } from "../runtime/process";
import { memoryLimit, pidsLimit, releaseLimit, releasePids, runLimited } from "./limits";
import { openCache } from "./cache";
import { NetnsError, type Netns, type SandboxNetwork } from "../sandbox";
import { defaultIdentity, dropPrivilegesArgv, handOver, runsAsRoot, sandboxDir, type SandboxIdentity } from "../sandbox/users";
import { PRIVATE_MOUNT, stagingArgv } from "../sandbox/bwrap";
import type { BuildLine, BuildOutcome, BuildRunOptions, BuildVariable, CacheCap, StepTiming } from "./types";

export const INSTALL_BUILDAH = "install buildah to build Dockerfiles";

export interface ContainerBuildSpec {
  /** The build context (absolute). */
  contextDir: string;
  /** The Dockerfile, relative to the context. */
  dockerfile: string;
  /** This build's scratch directory (absolute). */
  workDir: string;
  /** The service's layer cache (buildah's storage), or null. */
  cacheDir: string | null;
  /** The cap the service's caches share with the rest of its project's (cache.ts); omitted: none. */
  cacheCap?: CacheCap | null;
  variables: readonly BuildVariable[];
  memoryMb: number;
  stepTimeoutSecs: number;
  /** Most processes at once (`OPS_SANDBOX_PIDS`); 0 or omitted = none. */
  pids?: number;
  commit: string;
  /** Epoch ms: the image's timestamps. */
  commitTime: number;
  /** The repository (`org.opencontainers.image.source`). */
  source: string;
  /** PATH to find buildah (and setpriv) on; default the standard system PATH. */
  toolPath?: string;
  /** The project's host user when ops is root (sandbox/identity.ts); default nobody. */
  identity?: SandboxIdentity;
  /** The build's network namespace maker; omitted: the host's network. */
  network?: SandboxNetwork;
}

export interface LayoutBlob {
  digest: string;
  size: number;
  file: string;
}

export interface ContainerImage {
  manifest: { bytes: Uint8Array; digest: string; mediaType: string };
  /** Config and layers, files in the OCI layout. */
  blobs: LayoutBlob[];
}

export interface ContainerBuildOutcome extends BuildOutcome {
  image: ContainerImage | null;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The user buildah runs as has a subordinate uid range (needed by RUN steps), as far as /etc/subuid says. */
function hasSubordinateIds(uid: number): boolean {
  let name = String(uid);
  try {
    const line = readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((l) => l.split(":")[2] === String(uid));
    if (line) name = line.split(":")[0];
  } catch {
    // No passwd: match by number only.
  }
  try {
    return readFileSync("/etc/subuid", "utf8")
      .split("\n")
      .some((l) => l.split(":")[0] === name || l.split(":")[0] === String(uid));
  } catch {
    return false;
  }
}

/** Read the image buildah wrote as an OCI layout (one manifest). */
export function readLayout(layout: string): ContainerImage {
  const index = JSON.parse(readFileSync(path.join(layout, "index.json"), "utf8")) as { manifests?: Array<{ digest: string; mediaType?: string }> };
  const desc = index.manifests?.[0];
  if (!desc || !/^sha256:[0-9a-f]{64}$/.test(desc.digest)) throw new Error("the OCI layout has no manifest");
  const blobFile = (digest: string) => {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`bad digest ${digest} in the OCI layout`);
    const file = path.join(layout, "blobs", "sha256", digest.slice(7));
    if (!existsSync(file)) throw new Error(`blob ${digest} is missing from the OCI layout`);
    return file;
  };
  const bytes = new Uint8Array(readFileSync(blobFile(desc.digest)));
  const doc = JSON.parse(new TextDecoder().decode(bytes)) as { mediaType?: string; config: { digest: string; size: number }; layers: Array<{ digest: string; size: number }> };
  const blobs = [doc.config, ...doc.layers].map((d) => {
    const file = blobFile(d.digest);
    const size = statSync(file).size;
    if (size !== d.size) throw new Error(`blob ${d.digest} is ${size} bytes, the manifest says ${d.size}`);
    return { digest: d.digest, size, file };
  });
  return { manifest: { bytes, digest: desc.digest, mediaType: doc.mediaType ?? desc.mediaType ?? "application/vnd.oci.image.manifest.v1+json" }, blobs };
}

/** Build `spec.dockerfile` with buildah (see the file comment). Never throws for a failing build. */
export async function runContainerBuild(spec: ContainerBuildSpec, opts: BuildRunOptions): Promise<ContainerBuildOutcome> {
  const now = opts.now ?? Date.now;
  const mask = secretMasker(spec.variables.filter((v) => v.secret).map((v) => v.value));
  const emit = (stream: BuildLine["stream"], level: BuildLine["level"], line: string) => opts.onLine({ step: "building", stream, level, line: mask(line) });
  const timings: StepTiming[] = [];
  const startedAt = now();
  let memory: BuildOutcome["memory"] = "none";
  const done = (status: BuildOutcome["status"], fields: Partial<ContainerBuildOutcome> = {}): ContainerBuildOutcome => {
    timings.push({ step: "building", startedAt, finishedAt: now(), ok: status === "succeeded", ...(status === "succeeded" ? {} : { note: fields.failureKind ?? status }) });
    if (fields.error) emit("ops", "error", fields.error);
    return { status, failureKind: null, error: null, failedStep: status === "succeeded" ? null : "building", failedCommand: null, timedOut: false, timings, cacheHit: null, memory, image: null, ...fields };
  };
  opts.onStep?.("building");
  if (opts.signal?.aborted) return done("cancelled", { error: "the build was cancelled" });
  const searchPath = spec.toolPath ?? DEFAULT_PATH;
  const buildah = Bun.which("buildah", { PATH: searchPath });
  if (!buildah) return done("failed", { failureKind: "build", error: INSTALL_BUILDAH });
  const setpriv = runsAsRoot() ? Bun.which("setpriv", { PATH: searchPath }) : null;
  if (runsAsRoot() && !setpriv) return done("failed", { failureKind: "internal", error: "setpriv (util-linux) is not installed: a root ops drops to an unprivileged user before it starts buildah" });
  // Resolved inside the context (src/core/inside.ts): a Dockerfile that is a link out of it (to
  // /etc/passwd, the data dir) is refused before buildah, which would print its lines, reads it.
  let dockerfile: string;
  try {
    const found = resolveInsideOrNull(spec.contextDir, spec.dockerfile, { what: "the Dockerfile", tree: "the build context", want: "file" });
    if (!found) return done("failed", { failureKind: "build", error: `the Dockerfile "${spec.dockerfile}" is not a file in the build context` });
    dockerfile = found.abs;
  } catch (e) {
    if (!(e instanceof PathRefused)) throw e;
    return done("failed", { failureKind: "build", error: e.message });
  }

  const ids = spec.identity ?? defaultIdentity();
  if (spec.network?.refusal) return done("failed", { failureKind: "internal", error: spec.network.refusal });
  const cache = spec.cacheDir ? await openCache(spec.cacheDir, spec.cacheCap ?? null) : null;
  if (cache?.line) emit("ops", cache.line.level, cache.line.text);
  const { sandboxed: hostEnv, root } = prepare(spec, ids);
  const stage = staging(spec);
  const sandboxed = { ...hostEnv, HOME: stage.at(hostEnv.HOME), XDG_RUNTIME_DIR: stage.at(hostEnv.XDG_RUNTIME_DIR), TMPDIR: stage.at(hostEnv.TMPDIR) };
  if (spec.network?.note) emit("ops", "warn", spec.network.note);
  if (!hasSubordinateIds(ids.uid)) {
    emit("ops", "warn", `no subordinate uid range for uid ${ids.uid} in /etc/subuid: RUN instructions will fail (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 <user>)`);
  }
  const limit = memoryLimit(spec.memoryMb, `ops-build-${path.basename(spec.workDir)}-${process.pid}-${Date.now().toString(36)}`);
  memory = limit.memory;
  emit("ops", limit.line.level, limit.line.text);
  const pids = pidsLimit(spec.pids ?? 0, `ops-build-${path.basename(spec.workDir)}-${process.pid}-${Date.now().toString(36)}`, limit.cgroup);
  emit("ops", pids.line.level, pids.line.text);
  // With a cache the image keeps one tag from build to build, so its layers stay in the cache's
  // storage for `--layers` (removing the image would remove them with it); the tag moves to the
  // new image and `rmi --prune` drops the previous one's unshared layers. Without, storage is the
  // build's own and goes with its work dir.
  const tag = spec.cacheDir ? "localhost/ops-build-cache:latest" : `localhost/ops-build-${path.basename(spec.workDir).replace(/[^a-z0-9_.-]/g, "-")}:latest`;
  const global = [buildah, "--root", stage.at(root), "--runroot", stage.at(path.join(spec.workDir, "runroot")), "--storage-driver", "vfs"];
  const bud = [...global, "bud", "--isolation", "chroot", "--format", "oci", "--timestamp", String(Math.floor(spec.commitTime / 1000))];
  if (spec.cacheDir) bud.push("--layers");
  bud.push("--label", `org.opencontainers.image.revision=${spec.commit}`, "--label", `org.opencontainers.image.source=${spec.source}`, "--label", "dev.ops.runtime=container");
  for (const v of spec.variables) {
    if (!ENV_NAME.test(v.name)) continue;
    if (v.secret) bud.push("--secret", `id=${v.name},src=${stage.at(writeSecret(spec.workDir, v, ids))}`);
    else bud.push("--build-arg", `${v.name}=${v.value}`);
  }
  bud.push("-f", stage.at(dockerfile), "-t", tag, stage.at(spec.contextDir));
  const layout = sandboxDir(path.join(spec.workDir, "layout"), ids);
  const steps: Array<{ label: string; argv: string[]; optional?: boolean }> = [
    { label: `buildah bud -f ${spec.dockerfile}`, argv: bud },
    { label: "buildah push (OCI layout)", argv: [...global, "push", "--format", "oci", tag, `oci:${stage.at(layout)}:latest`] },
    spec.cacheDir ? { label: "buildah rmi --prune", argv: [...global, "rmi", "--prune"], optional: true } : { label: "buildah rmi", argv: [...global, "rmi", tag], optional: true },
  ];
  const deadline = Date.now() + spec.stepTimeoutSecs * 1000;
  let netns: Netns | null = null;
  try {
    // buildah and the RUN instructions it chroots into run in the build's own network namespace.
    netns = spec.network ? await spec.network.open(false) : null;
    const enter = netns ? netns.enterArgv() : [];
    const accounts = accountsArgv(spec.workDir, ids);
    for (const s of steps) {
      emit("ops", "info", `$ ${s.label}`);
      const verdict = await runLimited({
        argv: [...enter, ...stage.prefix, ...accounts, ...(setpriv ? [...dropPrivilegesArgv(setpriv, ids), ...s.argv] : s.argv)],
        env: sandboxed,
        cwd: spec.workDir,
        deadline,
        cgroup: limit.cgroup,
        pids: pids.group,
        signal: opts.signal,
        onLine: (stream, line) => emit(stream, stream === "stdout" ? "info" : "warn", line),
        mask,
      });
      if (verdict.kind === "ok" || s.optional) continue;
      if (verdict.kind === "cancelled") return done("cancelled", { error: "the build was cancelled" });
      if (verdict.kind === "memory") return done("failed", { failureKind: "memory", failedCommand: s.label, error: `${s.label} ran out of memory (limit ${spec.memoryMb} MiB)` });
      if (verdict.kind === "pids") return done("failed", { failureKind: "build", failedCommand: s.label, error: `${s.label} ${verdict.why}` });
      if (verdict.kind === "timeout") return done("failed", { failureKind: "build", failedCommand: s.label, timedOut: true, error: `the build step timed out after ${spec.stepTimeoutSecs}s (in ${s.label})` });
      return done("failed", { failureKind: "build", failedCommand: s.label, error: `${s.label} ${verdict.why}` });
    }
    let image: ContainerImage;
    try {
      image = readLayout(layout);
    } catch (e) {
      return done("failed", { failureKind: "internal", error: `buildah's output could not be read: ${(e as Error).message}` });
    }
    return done("succeeded", { image });
  } catch (e) {
    if (e instanceof NetnsError) return done("failed", { failureKind: "internal", error: e.message });
    throw e;
  } finally {
    await releaseLimit(limit.cgroup);
    await releasePids(pids.group);
    await netns?.close();
    await cache?.close();
  }
}

const ACCOUNTS = [
  'mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/group || { echo "ops: could not name the build user for buildah" >&2; exit 125; }',
  'shift 2; exec "$@"',
].join("\n");

/**
 * Where buildah sees its folders. A root ops starts buildah through the sandbox's root wrapper
 * (decision 0204, sandbox/bwrap.ts `stagingArgv`): in a private mount namespace the build's work
 * dir, its context (read-only) and the service's cache are bound under a fixed empty directory
 * the project's user can walk into, so a data dir kept 0700 (`ops install`'s /var/lib/ops, or a
 * checkout under /root) works without loosening its mode. `at` turns a host path into the path
 * buildah is given; the cache keeps one staged path from build to build, so `--layers` reuses it.
 * Not root: buildah runs as ops's own user on the host paths.
 */
function staging(spec: ContainerBuildSpec): { at(p: string): string; prefix: string[] } {
  if (!runsAsRoot()) return { at: (p) => p, prefix: [] };
  const staged: Array<[string, boolean]> = [
    [path.resolve(spec.workDir), false],
    [path.resolve(spec.contextDir), true],
  ];
  if (spec.cacheDir) staged.push([path.resolve(spec.cacheDir), false]);
  // Longest host path first, so a context inside the work dir maps to its own read-only bind.
  const order = staged.map(([host], i) => [host, `${PRIVATE_MOUNT}/${i}`] as const).sort((a, b) => b[0].length - a[0].length);
  const at = (p: string): string => {
    const abs = path.resolve(p);
    for (const [host, inside] of order) {
      if (abs === host) return inside;
      if (abs.startsWith(`${host}/`)) return `${inside}${abs.slice(host.length)}`;
    }
    throw new Error(`${p} is outside the folders staged for buildah`);
  };
  return { at, prefix: stagingArgv(staged) };
}

/**
 * buildah looks its own user up by uid and stops at "unknown userid" for a project's uid, which has
 * no account on the host (decision 0202). When ops is root and the host has no entry for it, the
 * host's /etc/passwd and /etc/group with one more line each are bound over the originals in the
 * root wrapper's private mount namespace (invisible to the host), then privileges drop.
 */
function accountsArgv(workDir: string, ids: SandboxIdentity): string[] {
  if (!runsAsRoot()) return [];
  const read = (f: string) => {
    try {
      return readFileSync(f, "utf8");
    } catch {
      return "";
    }
  };
  const passwd = read("/etc/passwd");
  const group = read("/etc/group");
  if (passwd.split("\n").some((l) => l.split(":")[2] === String(ids.uid))) return [];
  const dir = path.join(workDir, "accounts");
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const name = `ops-${ids.uid}`;
  const files = { passwd: path.join(dir, "passwd"), group: path.join(dir, "group") };
  writeFileSync(files.passwd, `${passwd.replace(/\n?$/, "\n")}${name}:x:${ids.uid}:${ids.gid}:ops project sandbox:${path.join(workDir, "home")}:/usr/sbin/nologin\n`, { mode: 0o644 });
  writeFileSync(files.group, `${group.replace(/\n?$/, "\n")}${group.split("\n").some((l) => l.split(":")[2] === String(ids.gid)) ? "" : `${name}:x:${ids.gid}:\n`}`, { mode: 0o644 });
  return ["/bin/sh", "-c", ACCOUNTS, "sh", files.passwd, files.group];
}

/** Directories and environment of the buildah process; a string when they cannot be set up. */
function prepare(spec: ContainerBuildSpec, ids: SandboxIdentity): { sandboxed: Record<string, string>; root: string } {
  mkdirSync(spec.workDir, { recursive: true, mode: 0o711 });
  const root = spec.cacheDir ? path.join(spec.cacheDir, "buildah") : path.join(spec.workDir, "storage");
  if (spec.cacheDir) {
    mkdirSync(spec.cacheDir, { recursive: true, mode: 0o700 });
    handOver(spec.cacheDir, ids);
  }
  handOver(spec.contextDir, ids, { force: true });
  sandboxDir(root, ids);
  sandboxDir(path.join(spec.workDir, "runroot"), ids);
  const home = sandboxDir(path.join(spec.workDir, "home"), ids);
  const xdg = sandboxDir(path.join(spec.workDir, "xdg"), ids);
  const tmp = sandboxDir(path.join(spec.workDir, "tmp"), ids);
  return {
    root,
    sandboxed: { PATH: DEFAULT_PATH, HOME: home, XDG_RUNTIME_DIR: xdg, TMPDIR: tmp, LANG: "C.UTF-8", BUILDAH_ISOLATION: "chroot" },
  };
}

/** A secret build variable as a file for `--secret id=NAME,src=FILE` (0600, the build user's). */
function writeSecret(workDir: string, v: BuildVariable, ids: SandboxIdentity): string {
  const dir = sandboxDir(path.join(workDir, "secrets"), ids);
  const file = path.join(dir, v.name);
  writeFileSync(file, v.value, { mode: 0o600 });
  if (runsAsRoot()) chownSync(file, ids.uid, ids.gid);
  return file;
}
