/**
 * Where built-in repositories live and what they may be called. A repository is the bare
 * directory `<dataDir>/git/<owner>/<name>.git`, where the owner is a project slug. Both halves are
 * checked against strict patterns before any path is built, and the result is checked to sit
 * inside `git/`, so no name reaches another place on disk.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { OpsError } from "../../../core/errors";
import { git, gitEnv, hooksDir, type HookSet } from "./git";

/** Project slugs (the owners of built-in repositories). */
export const OWNER_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Repository names: letters, digits, `.`, `_`, `-`; not starting with `.`, no `..`, not ending in `.git`. */
export const NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

export const DEFAULT_BRANCH = "main";

/** `owner/name` split and checked; null when it is not a built-in repository name. */
export function parseRepoName(full: string): { owner: string; name: string } | null {
  const parts = full.split("/");
  if (parts.length !== 2) return null;
  let [owner, name] = parts as [string, string];
  if (name.endsWith(".git")) name = name.slice(0, -4);
  if (!OWNER_RE.test(owner) || !NAME_RE.test(name) || name.includes("..") || name.toLowerCase().endsWith(".git")) return null;
  return { owner, name };
}

/** The bare repository's directory, or null for a name that is not valid. Never outside `root`. */
export function repoDir(root: string, full: string): string | null {
  const parsed = parseRepoName(full);
  if (!parsed) return null;
  const dir = path.resolve(root, parsed.owner, `${parsed.name}.git`);
  if (!dir.startsWith(path.resolve(root) + path.sep)) return null;
  return dir;
}

/** The directory of an existing repository; 404 otherwise. */
export function existingRepoDir(root: string, full: string): string {
  const dir = repoDir(root, full);
  if (!dir || !existsSync(path.join(dir, "HEAD"))) throw new OpsError("not_found", `No repository ${full} on the git host.`);
  return dir;
}

/** The default branch a bare repository's HEAD names. */
export function defaultBranchOf(dir: string): string {
  try {
    const head = readFileSync(path.join(dir, "HEAD"), "utf8").trim();
    const m = /^ref: refs\/heads\/(.+)$/.exec(head);
    return m ? m[1]! : DEFAULT_BRANCH;
  } catch {
    return DEFAULT_BRANCH;
  }
}

/** Every repository on disk, as `owner/name`, sorted. */
export function listRepoNames(root: string): string[] {
  const out: string[] = [];
  if (!existsSync(root)) return out;
  for (const owner of readdirSync(root, { withFileTypes: true })) {
    if (!owner.isDirectory() || !OWNER_RE.test(owner.name)) continue;
    for (const r of readdirSync(path.join(root, owner.name), { withFileTypes: true })) {
      if (!r.isDirectory() || !r.name.endsWith(".git")) continue;
      const full = `${owner.name}/${r.name.slice(0, -4)}`;
      if (parseRepoName(full) && existsSync(path.join(root, owner.name, r.name, "HEAD"))) out.push(full);
    }
  }
  return out.sort();
}

/**
 * Create the bare repository (default branch `main`) when it does not exist. Built in a temp
 * directory and renamed into place, so a half-made repository is never visible.
 */
export async function initRepo(root: string, full: string, maxPushBytes: number): Promise<string> {
  const dir = repoDir(root, full);
  if (!dir) throw new OpsError("validation_failed", `"${full}" is not a repository name of the git host.`, { fields: [{ path: "repo", message: "not an owner/repo name" }] });
  if (existsSync(path.join(dir, "HEAD"))) return dir;
  mkdirSync(path.dirname(dir), { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  const env = gitEnv({ root, maxPushBytes });
  const proc = Bun.spawn(["git", "init", "--bare", "--quiet", `--initial-branch=${DEFAULT_BRANCH}`, tmp], { env, stdout: "ignore", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new OpsError("internal", "The git host could not create the repository.", undefined, { cause: new Error(stderr) });
  }
  // The sample hooks are never run (hooks come from ops's own directory); drop the noise.
  rmSync(path.join(tmp, "hooks"), { recursive: true, force: true });
  await git(env, tmp, ["config", "core.logAllRefUpdates", "false"]);
  try {
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(path.join(dir, "HEAD"))) throw e;
  }
  return dir;
}

/**
 * The post-receive hook every built-in repository runs: it appends the ref updates git hands it
 * (`<old> <new> <ref>` lines) to the file the receiving request named, so ops reports exactly the
 * refs this push wrote, after they were written. Shell builtins only: no process beside the shell.
 */
const POST_RECEIVE = `#!/bin/sh
# Written by ops: report the updated refs to the request that received this push.
if [ -n "$OPS_PUSH_LOG" ]; then
  while IFS= read -r line; do printf '%s\\n' "$line"; done >> "$OPS_PUSH_LOG"
else
  while IFS= read -r line; do :; done
fi
exit 0
`;

/**
 * The update hook, run once per ref before git writes it: a release tag (`v<major>.<minor>.<patch>…`)
 * created or moved onto a commit with a `modules/` tree starts a publish build, so a pusher
 * without packages.publish may not push one. The receiving request says so by setting
 * `OPS_TAG_REFUSAL` (the message git prints as `remote: …`); each refused ref is appended to
 * `OPS_PUSH_REFUSED` for the audit. Other refs, and deletions, pass.
 */
const UPDATE = `#!/bin/sh
# Written by ops: release tags on a modules/ tree need packages.publish.
[ -n "$OPS_TAG_REFUSAL" ] || exit 0
case "$1" in
  refs/tags/v[0-9]*.[0-9]*.[0-9]*) ;;
  *) exit 0 ;;
esac
[ "$3" = "0000000000000000000000000000000000000000" ] && exit 0
git cat-file -e "$3^{commit}:modules" 2>/dev/null || exit 0
echo "$OPS_TAG_REFUSAL" >&2
[ -n "$OPS_PUSH_REFUSED" ] && echo "$1" >> "$OPS_PUSH_REFUSED"
exit 1
`;

const HOOK_SETS: Record<HookSet, Array<[string, string]>> = {
  all: [
    ["post-receive", POST_RECEIVE],
    ["update", UPDATE],
  ],
  "push-log": [["post-receive", POST_RECEIVE]],
};

/** Write ops's hooks directories (at every start, so an upgrade replaces old hooks). */
export function installHooks(root: string): void {
  for (const [set, hooks] of Object.entries(HOOK_SETS) as Array<[HookSet, Array<[string, string]>]>) {
    const dir = hooksDir(root, set);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    for (const [name, text] of hooks) {
      const hook = path.join(dir, name);
      writeFileSync(hook, text, { mode: 0o755 });
      chmodSync(hook, 0o755);
    }
  }
}
