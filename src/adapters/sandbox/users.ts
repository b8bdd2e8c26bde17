/**
 * Who runs inside the sandbox, and the tools that put it there. When ops runs as root, every
 * sandbox is entered as its project's own unprivileged host user first (`setpriv`; identity.ts
 * gives each project a uid/gid of its own, DESIGN §6 "Identity"), so nothing a build or a replica
 * does can act as root outside or as another project: it cannot read a root-only file even
 * through a mount it was given, nor another project's 0700 build dirs, caches or images.
 * Otherwise the sandbox runs as ops's own user.
 *
 * bwrap resolves the directories it binds as that user, so they must be reachable by it
 * (`unreachable` names the first directory in the way): ops creates its data dir 0755.
 */
import { lchownSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DEFAULT_PATH } from "../runtime/process";

/** The user builds run as inside their user namespace (and that owns an image's files). */
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
/** The host user of a sandbox that belongs to no project (none today; tests of the adapters). */
export const HOST_UNPRIVILEGED_ID = 65534;

/** A host uid/gid a sandbox runs as. */
export interface SandboxIdentity {
  uid: number;
  gid: number;
}

/** `nobody` when ops is root, else ops's own user. */
export function defaultIdentity(): SandboxIdentity {
  if (runsAsRoot()) return { uid: HOST_UNPRIVILEGED_ID, gid: HOST_UNPRIVILEGED_ID };
  return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
}
/** Home of the build user inside the sandbox. */
export const SANDBOX_HOME = "/home/build";

export interface SandboxTools {
  bwrap: string;
  /** Needed (and found) only when ops runs as root. */
  setpriv: string | null;
}

export function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * `bwrap` (and `setpriv` when ops is root) on `searchPath`, or the reason the sandbox cannot run;
 * `who` says what runs only inside it ("native builds", "service replicas").
 */
export function findSandboxTools(searchPath = DEFAULT_PATH, who = "native builds"): SandboxTools | string {
  const bwrap = Bun.which("bwrap", { PATH: searchPath });
  if (!bwrap) return `bubblewrap (bwrap) is not installed: ${who} run only inside its sandbox (apt-get install bubblewrap)`;
  if (!runsAsRoot()) return { bwrap, setpriv: null };
  const setpriv = Bun.which("setpriv", { PATH: searchPath });
  if (!setpriv) return `setpriv (util-linux) is not installed: a root ops drops to an unprivileged user before it starts ${who}`;
  return { bwrap, setpriv };
}

/** The argv prefix that drops a root ops to `ids` (default nobody) before the rest runs. */
export function dropPrivilegesArgv(setpriv: string, ids: { uid: number; gid: number } = { uid: HOST_UNPRIVILEGED_ID, gid: HOST_UNPRIVILEGED_ID }): string[] {
  return [setpriv, `--reuid=${ids.uid}`, `--regid=${ids.gid}`, "--clear-groups", "--"];
}


/**
 * Make `dir` (recursively) owned by the sandbox's host user, so a build may write in it. Only
 * needed when ops runs as root; symlinks are re-owned, never followed. Skips a tree whose root
 * already has the right owner (a cache the sandbox created).
 */
export function handOver(dir: string, ids: SandboxIdentity, opts: { force?: boolean } = {}): void {
  if (!runsAsRoot()) return;
  const { uid, gid } = ids;
  const top = lstatSync(dir);
  if (!opts.force && top.uid === uid && top.gid === gid) return;
  const walk = (p: string) => {
    const st = lstatSync(p);
    if (st.uid !== uid || st.gid !== gid) lchownSync(p, uid, gid);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
}

/** Create a directory for the sandbox's user, 0700 (owned by it when ops is root). */
export function sandboxDir(dir: string, ids: SandboxIdentity): string {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) mkdirSync(dir, { mode: 0o700 });
  else if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  // lchown: a link put in place meanwhile is re-owned itself, never what it names.
  if (runsAsRoot()) lchownSync(dir, ids.uid, ids.gid);
  return dir;
}

/** /etc/passwd and /etc/group naming the build user, written under `dir`. */
export function writePasswd(dir: string): { passwd: string; group: string } {
  mkdirSync(dir, { recursive: true });
  const passwd = path.join(dir, "passwd");
  const group = path.join(dir, "group");
  writeFileSync(passwd, `root:x:0:0:root:/root:/bin/sh\nbuild:x:${SANDBOX_UID}:${SANDBOX_GID}:build:${SANDBOX_HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`);
  writeFileSync(group, `root:x:0:\nbuild:x:${SANDBOX_GID}:\nnogroup:x:65534:\n`);
  return { passwd, group };
}
