/**
 * The bubblewrap sandbox builds and replicas run in (DESIGN §5): read-only binds of the host's
 * `/usr`, `/bin`, `/lib*` and the few files of `/etc` that name resolution, TLS and toolchain
 * alternatives need, new pid/ipc/uts namespaces, `--die-with-parent`, `/proc` and a minimal
 * `/dev` of its own (read-only but for a sized `/dev/shm`), and nothing else of the host: not ops's data dir, not the home of the user
 * ops runs as, not ops's environment (the caller passes the whole environment, so no value ever
 * appears on a command line other processes can read).
 *
 * What differs between the two is what is bound on top and who runs inside:
 * - a build binds its context, home, tmp and caches writable, and runs as user 1000 in a user
 *   namespace (`user: "namespaced"`), the owner of the image's files;
 * - a replica binds an unpacked image's top-level entries read-only at their own paths (so an
 *   image's `app/` is `/app`, its WorkingDir), gets a tmpfs `/tmp`, and runs as the sandbox's host
 *   user itself (`user: "host"`).
 *
 * When ops is root the sandbox is entered as its project's user (see users.ts, identity.ts). Such a
 * user may not be able to walk into a data dir kept at 0700, so a small root wrapper first
 * bind-mounts every host path the sandbox binds (image root, context, home, cache, passwd) under a
 * fixed empty directory in a private mount namespace of its own (`unshare --mount`, invisible to
 * the host), joins the memory cgroup, drops privileges and execs bwrap, which binds from there
 * (decision 0204). Each step `exec`s the next, so the process ops started
 * is bwrap itself (`--die-with-parent` then refers to ops; ops re-executing itself in place on
 * `ops restart` does not end it: decision 0390).
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, type Stats } from "node:fs";
import path from "node:path";
import { descendants } from "../runtime/process";
import { joinArgv, joinFile, JOIN_SHELL } from "./cgroups";
import { SECCOMP_FD, seccompFile, seccompOpenArgv } from "./seccomp";
import { dropPrivilegesArgv, runsAsRoot, SANDBOX_GID, SANDBOX_UID, HOST_UNPRIVILEGED_ID, type SandboxTools } from "./users";

export interface Mount {
  host: string;
  inside: string;
  readOnly?: boolean;
}

export interface SandboxOptions {
  /** Binds on top of the host's system trees (work dir, home, caches …). */
  mounts: Mount[];
  /** Working directory inside the sandbox. */
  chdir: string;
  /** Host paths that must stay invisible even when under a bound host tree (the data dir). */
  hide?: readonly string[];
  /** A generated /etc/passwd and /etc/group (host files). */
  passwd?: { passwd: string; group: string };
  /** Default `ops-build`. */
  hostname?: string;
  /** `namespaced` (default): user 1000 in a user namespace. `host`: the sandbox's host user itself. */
  user?: "namespaced" | "host";
  /** The host user a root ops drops to (default nobody). */
  hostUser?: { uid: number; gid: number };
  /** An unpacked image root whose top-level entries are bound read-only at their own paths. */
  imageRoot?: string;
  /** Empty writable tmpfs mounts (a sandbox's `/tmp`). */
  tmpfs?: readonly string[];
  /**
   * Size of each tmpfs and of /dev/shm in MiB (`OPS_SANDBOX_TMP_MB`): a write past it fails with
   * ENOSPC. Omitted: the `tmpfs` mounts are unsized and /dev/shm gets DEFAULT_SHM_MB.
   */
  tmpSizeMb?: number;
  /** cgroup.procs of a memory group to join before anything runs (through `tasks` on v1: see cgroups.ts `joinFile`). */
  cgroupProcs?: string | null;
  /** The seccomp filter (seccomp.ts); default on, off only for a test's control run. */
  seccomp?: boolean;
  /** Join files of further groups (a v1 pids group: sandbox/pids.ts) joined first, before anything else. */
  joinFirst?: readonly string[];
  /**
   * The sandbox's own network namespace (sandbox/netns.ts): the argv prefix that enters it, run
   * first, and the resolv.conf and hosts bound over the host's. Null: the host's network (only
   * with OPS_SANDBOX_NETWORK=host).
   */
  network?: { enter: readonly string[]; resolv: string; hosts: string } | null;
}

/** /dev/shm's size when the caller names none (Docker's default). */
export const DEFAULT_SHM_MB = 64;

/** Host trees bound read-only when they exist (recreated as the same symlink on merged-/usr hosts). */
export const HOST_TREES = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** Host files and folders of /etc that programs need to resolve names, verify TLS, find tools. */
const HOST_ETC = [
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/pki",
  "/etc/resolv.conf",
  "/etc/hosts",
  "/etc/nsswitch.conf",
  "/etc/host.conf",
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
  "/etc/mime.types",
  // Package managers' host-wide configuration (a mirror, a CA), read-only (docs/decisions/0364).
  "/etc/pip.conf",
  "/etc/xdg/pip",
  "/etc/npmrc",
];
/** Top-level names of an image that the sandbox provides itself. */
const RESERVED = new Set(["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "proc", "dev", "tmp", "sys", "etc"]);
const ETC_FROM_HOST = new Set(HOST_ETC.map((p) => p.slice("/etc/".length)));

/** The fixed mount point of the root wrapper's private namespace. */
export const PRIVATE_MOUNT = "/tmp/ops-sandbox-image";

/**
 * The root wrapper (decision 0204): in a private mount namespace, a small tmpfs over
 * PRIVATE_MOUNT, then each host path the sandbox binds (the image root, the build's context, home
 * and cache, a job's home, the generated passwd) bind-mounted at `PRIVATE_MOUNT/<n>`, read-only
 * where it is; bwrap, already the project's user, binds from there. So a data dir kept 0700 (as
 * `ops install` makes /var/lib/ops) works: the sandbox user never walks through it. A path that is
 * not its own real path (a link anywhere in it) is refused: root never binds what a link names.
 * Arguments: the cgroup join file (or ""), then `host ro` pairs, then `--`, then the command.
 */
const WRAPPER = [
  'stage="$1"; procs="$2"; shift 2',
  'mount -t tmpfs -o mode=0755,size=64k ops-sandbox "$stage" || { echo "ops: could not stage the sandbox\'s folders" >&2; exit 125; }',
  "i=0",
  'while [ "$1" != "--" ]; do',
  '  src="$1"; ro="$2"; shift 2; dst="$stage/$i"; i=$((i + 1))',
  '  [ "$(realpath -e -- "$src")" = "$src" ] || { echo "ops: $src is not a plain path: not bound into the sandbox" >&2; exit 125; }',
  '  if [ -d "$src" ]; then mkdir "$dst"; else : > "$dst"; fi',
  '  mount --bind "$src" "$dst" || { echo "ops: could not bind $src for the sandbox" >&2; exit 125; }',
  '  [ "$ro" = 0 ] || mount -o remount,bind,ro "$dst" || { echo "ops: could not make $src read-only for the sandbox" >&2; exit 125; }',
  "done",
  "shift",
  `J="$procs"; [ -z "$J" ] || { ${JOIN_SHELL}; } || { echo "ops: could not join the memory cgroup" >&2; exit 125; }`,
  'exec "$@"',
].join("\n");

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** The host's system trees and /etc files, as binds or symlinks. */
function hostBinds(): string[] {
  const args: string[] = [];
  for (const tree of HOST_TREES) {
    if (!existsSync(tree)) continue;
    const st = lstatSync(tree);
    if (st.isSymbolicLink()) args.push("--symlink", readlinkSync(tree), tree);
    else if (st.isDirectory()) args.push("--ro-bind", tree, tree);
  }
  args.push("--dir", "/etc");
  for (const f of HOST_ETC) {
    if (!existsSync(f)) continue;
    const target = etcSymlinkTarget(f);
    if (target !== null) args.push("--symlink", target, f);
    else args.push("--ro-bind", f, f);
  }
  return args;
}

/**
 * The target of an /etc entry that is a symbolic link into a bound host tree (`/etc/localtime` →
 * `/usr/share/zoneinfo/…`), recreated as the same link; null to bind the entry (a bind follows the
 * link and mounts the file it names). The link matters: ICU (every Node.js process) names the
 * local time zone from the link's target, and given a plain file it reads each file under
 * /usr/share/zoneinfo to find an identical one, several milliseconds per process, and may then
 * pick another name for the same zone.
 */
function etcSymlinkTarget(f: string): string | null {
  if (!lstatSync(f).isSymbolicLink()) return null;
  const target = readlinkSync(f);
  const resolved = path.resolve(path.dirname(f), target);
  return HOST_TREES.some((t) => isInside(resolved, t)) && existsSync(resolved) ? target : null;
}

/** bwrap arguments for the image's entries under `src` (the root as bwrap will see it). */
function imageBinds(root: string, src: string): string[] {
  const args: string[] = [];
  const bindEntry = (rel: string, st: Stats) => {
    if (st.isSymbolicLink()) args.push("--symlink", readlinkSync(path.join(root, rel)), `/${rel}`);
    else if (st.isDirectory() || st.isFile()) args.push("--ro-bind", path.join(src, rel), `/${rel}`);
  };
  for (const name of readdirSync(root).sort()) {
    const st = lstatSync(path.join(root, name));
    if (name === "etc" && st.isDirectory()) {
      // The image's /etc, except what the host provides.
      for (const child of readdirSync(path.join(root, "etc")).sort()) {
        if (!ETC_FROM_HOST.has(child)) bindEntry(`etc/${child}`, lstatSync(path.join(root, "etc", child)));
      }
      continue;
    }
    if (RESERVED.has(name)) continue;
    bindEntry(name, st);
  }
  return args;
}

/** Make the wrapper's mount point: an empty directory that only ever gets mounted over. */
function ensureMountPoint(): void {
  mkdirSync(PRIVATE_MOUNT, { recursive: true, mode: 0o755 });
  const st = lstatSync(PRIVATE_MOUNT);
  if (!st.isDirectory() || st.uid !== 0) throw new Error(`${PRIVATE_MOUNT} must be a directory owned by root`);
}

/**
 * The root wrapper's argv prefix (decision 0204): `staged[i]` (a host path, read-only or not) is
 * at `PRIVATE_MOUNT/<i>` for the command that follows, in a private mount namespace; `procs` is a
 * cgroup join file or "". Also used by the container builder for buildah's folders.
 */
export function stagingArgv(staged: ReadonlyArray<readonly [string, boolean]>, procs = ""): string[] {
  ensureMountPoint();
  const pairs = staged.flatMap(([host, ro]) => [host, ro ? "1" : "0"]);
  return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", WRAPPER, "sh", PRIVATE_MOUNT, procs, ...pairs, "--"];
}

/**
 * The argv that runs `argv` in the sandbox: `[cgroup join | root wrapper] [setpriv …] bwrap … --
 * argv`. The environment is the spawner's.
 */
export function sandboxArgv(tools: SandboxTools, opts: SandboxOptions, argv: readonly string[]): string[] {
  const asRoot = runsAsRoot() && tools.setpriv !== null;
  // A root ops stages every host path through the wrapper; otherwise bwrap binds them itself.
  const staged: Array<[string, boolean]> = [];
  const from = (host: string, readOnly: boolean): string => {
    if (!asRoot) return host;
    staged.push([path.resolve(host), readOnly]);
    return `${PRIVATE_MOUNT}/${staged.length - 1}`;
  };
  const bwrap: string[] = [tools.bwrap];
  if ((opts.user ?? "namespaced") === "namespaced") bwrap.push("--unshare-user", "--uid", String(SANDBOX_UID), "--gid", String(SANDBOX_GID));
  bwrap.push("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", opts.hostname ?? "ops-build", "--die-with-parent");
  bwrap.push(...hostBinds());
  if (opts.network) bwrap.push("--ro-bind", opts.network.resolv, "/etc/resolv.conf", "--ro-bind", opts.network.hosts, "/etc/hosts");
  if (opts.passwd) bwrap.push("--ro-bind", from(opts.passwd.passwd, true), "/etc/passwd", "--ro-bind", from(opts.passwd.group, true), "/etc/group");
  // /dev is bwrap's own small tmpfs: /dev/shm on it would be unsized, so it gets a sized tmpfs of
  // its own and the rest of /dev turns read-only (the device nodes are binds: still writable; decision 0506).
  const shmBytes = (opts.tmpSizeMb ?? DEFAULT_SHM_MB) * 1024 * 1024;
  bwrap.push("--proc", "/proc", "--dev", "/dev", "--size", String(shmBytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
  const size = opts.tmpSizeMb ? ["--size", String(opts.tmpSizeMb * 1024 * 1024)] : [];
  for (const t of opts.tmpfs ?? []) bwrap.push(...size, "--tmpfs", t);
  if (opts.imageRoot !== undefined) bwrap.push(...imageBinds(opts.imageRoot, from(opts.imageRoot, true)));
  for (const m of opts.mounts) bwrap.push(m.readOnly ? "--ro-bind" : "--bind", from(m.host, m.readOnly === true), m.inside);
  // A hidden path under a bound host tree is covered by an empty, read-only tmpfs.
  for (const h of opts.hide ?? []) {
    if (existsSync(h) && (HOST_TREES.some((t) => isInside(h, t)) || HOST_ETC.some((t) => isInside(h, t)))) bwrap.push("--perms", "0000", "--tmpfs", h, "--remount-ro", h);
  }
  const filter = opts.seccomp === false ? null : seccompFile();
  if (filter) bwrap.push("--seccomp", String(SECCOMP_FD));
  bwrap.push("--chdir", opts.chdir, "--", ...argv);

  const enter = opts.network ? [...opts.network.enter] : [];
  const joins = (opts.joinFirst ?? []).map((f) => joinFile(f));
  const first = filter || joins.length > 0 ? seccompOpenArgv(filter, joins) : [];
  const drop = asRoot ? dropPrivilegesArgv(tools.setpriv as string, opts.hostUser ?? { uid: HOST_UNPRIVILEGED_ID, gid: HOST_UNPRIVILEGED_ID }) : [];
  if (staged.length > 0) return [...enter, ...first, ...stagingArgv(staged, opts.cgroupProcs ? joinFile(opts.cgroupProcs) : ""), ...drop, ...bwrap];
  const join = opts.cgroupProcs ? joinArgv(opts.cgroupProcs) : [];
  return [...enter, ...first, ...join, ...drop, ...bwrap];
}

const SHELLS = new Set(["sh", "dash", "bash", "ash", "busybox"]);

/**
 * Who gets the polite SIGTERM when a sandbox stops: every process inside it (not bwrap: it would
 * die at once and take the rest along), except a shell that is waiting for a child.
 * `/bin/sh -c "node server.js"` (an image's `start`, or a `command` override) leaves such a shell
 * between bwrap and the app; a shell dies of SIGTERM without passing it on, and then the sandbox
 * ends with the app inside it, before its grace period. The shell ends on its own once the app it
 * waits for has exited.
 */
export function politeTargets(pid: number): number[] {
  const inside = descendants(pid).filter((p) => p.comm !== "bwrap");
  const parents = new Set(inside.map((p) => p.ppid));
  return inside.filter((p) => !(SHELLS.has(p.comm) && parents.has(p.pid))).map((p) => p.pid);
}

const TRUST_VARIABLES = ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"] as const;

/**
 * ops's own TLS trust settings that name a file the sandbox sees too (under the bound system trees
 * or /etc/ssl, /etc/ca-certificates, /etc/pki), passed on to builds and job runs: a host behind a
 * TLS-inspecting proxy that trusts its CA for ops trusts it for dependency installs alike
 * (decision 0203). Anything else of ops's environment stays out.
 */
export function hostTrustVariables(env: Record<string, string | undefined> = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = [...HOST_TREES, "/etc/ssl", "/etc/ca-certificates", "/etc/pki"];
  for (const name of TRUST_VARIABLES) {
    const v = env[name];
    if (v && path.isAbsolute(v) && !v.split("/").includes("..") && seen.some((t) => isInside(v, t)) && existsSync(v)) out[name] = v;
  }
  return out;
}
