/**
 * Reading built-in repositories with git plumbing: refs to commits, recursive tree listings
 * (streamed, stopped at the caller's limit), single files with their blob sha and mode, commit
 * metadata, and a commit's tree written into a directory for a build. Commit metadata and single
 * files are read from loose objects without git when they are all loose (loose.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { OpsError } from "../../../core/errors";
import type { CommitInfo, FileAt, TreeEntry, TreeListing } from "../types";
import { git, text } from "./git";
import { isSafeRefName } from "../refs";
import { looseCommitInfo, looseFileAt } from "./loose";

const SHA_RE = /^[0-9a-f]{40}$/;
const HEX_RE = /^[0-9a-f]{7,40}$/;

/** The commit a branch, tag, full ref or (abbreviated) sha names, or null. */
export async function resolveRef(env: Record<string, string>, dir: string, name: string): Promise<string | null> {
  if (!isSafeRefName(name)) return null;
  const candidates = name.startsWith("refs/") ? [name] : [`refs/heads/${name}`, `refs/tags/${name}`];
  if (HEX_RE.test(name)) candidates.push(name);
  const input = candidates.map((c) => `${c}^{commit}\n`).join("");
  const out = text(await git(env, dir, ["cat-file", "--batch-check=%(objectname) %(objecttype)"], { input }));
  for (const line of out.split("\n")) {
    const [sha, type] = line.split(" ");
    if (sha && SHA_RE.test(sha) && type === "commit") return sha;
  }
  return null;
}

/** Parse one `ls-tree -l -z` record: `<mode> <type> <sha> <size>\t<path>`. */
function parseLsTree(rec: string): (TreeEntry & { gitType: string }) | null {
  const tab = rec.indexOf("\t");
  if (tab < 0) return null;
  const [mode, gitType, sha, size] = rec.slice(0, tab).split(/ +/);
  if (!mode || !gitType || !sha) return null;
  return {
    path: rec.slice(tab + 1),
    type: gitType === "tree" ? "tree" : "blob",
    gitType,
    sha,
    mode,
    size: size === undefined || size === "-" ? null : Number(size),
  };
}

/**
 * Every entry of a commit's tree (directories before their contents, git's order), submodules
 * left out. Reads git's output as it comes and stops the process past `limit` entries, so a huge
 * tree costs no more than the prefix returned.
 */
export async function readTree(env: Record<string, string>, dir: string, commitSha: string, limit: number): Promise<TreeListing> {
  if (!SHA_RE.test(commitSha)) throw new OpsError("not_found", "No such commit.");
  const proc = Bun.spawn(["git", `--git-dir=${dir}`, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commitSha], { env, cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const entries: TreeEntry[] = [];
  let truncated = false;
  let pending = "";
  const decoder = new TextDecoder();
  const reader = proc.stdout.getReader();
  outer: for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let nul: number;
    while ((nul = pending.indexOf("\0")) >= 0) {
      const rec = parseLsTree(pending.slice(0, nul));
      pending = pending.slice(nul + 1);
      if (!rec || rec.gitType === "commit") continue;
      if (entries.length >= limit) {
        truncated = true;
        break outer;
      }
      entries.push({ path: rec.path, type: rec.type, sha: rec.sha, mode: rec.mode, size: rec.size });
    }
  }
  if (truncated) {
    proc.kill();
    await reader.cancel().catch(() => {});
  }
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (!truncated && code !== 0) {
    throw new OpsError("internal", "The git host could not list the tree.", undefined, { cause: new Error(stderr.trim()) });
  }
  return { commitSha, entries, truncated };
}

/** The entry at `p` on a commit (no recursion), or null. */
export async function entryAt(env: Record<string, string>, dir: string, commitSha: string, p: string): Promise<(TreeEntry & { gitType: string }) | null> {
  const out = text(await git({ ...env, GIT_LITERAL_PATHSPECS: "1" }, dir, ["ls-tree", "-l", "-z", "--full-tree", commitSha, "--", p]));
  for (const rec of out.split("\0")) {
    const e = parseLsTree(rec);
    if (e && e.path === p) return e;
  }
  return null;
}

/** What is at `p` on a commit; the bytes when the blob is at most `maxBytes`. */
export async function readFile(env: Record<string, string>, dir: string, commitSha: string, p: string, maxBytes: number): Promise<FileAt> {
  if (!SHA_RE.test(commitSha)) throw new OpsError("not_found", "No such commit.");
  const loose = looseFileAt(dir, commitSha, p, maxBytes);
  if (loose) return loose;
  const e = await entryAt(env, dir, commitSha, p);
  if (!e || e.gitType === "commit") return { kind: "missing" };
  if (e.type === "tree") return { kind: "directory", sha: e.sha };
  const size = e.size ?? 0;
  if (size > maxBytes) return { kind: "file", sha: e.sha, size, mode: e.mode };
  const content = (await git(env, dir, ["cat-file", "blob", e.sha])).stdout;
  return { kind: "file", sha: e.sha, size, mode: e.mode, content };
}

/** Author, first message line, commit time and parents; null when `sha` is not a commit. */
export async function commitInfo(env: Record<string, string>, dir: string, sha: string): Promise<CommitInfo | null> {
  if (!HEX_RE.test(sha)) return null;
  const loose = looseCommitInfo(dir, sha);
  if (loose) return loose;
  const r = await git(env, dir, ["show", "-s", "--no-show-signature", "--format=%H%x00%an%x00%ae%x00%ct%x00%P%x00%B", `${sha}^{commit}`, "--"], { okCodes: [0, 128] });
  if (r.exitCode !== 0) return null;
  const [full, name, email, ct, parents, body] = text(r).split("\0");
  if (!full || !SHA_RE.test(full)) return null;
  return {
    sha: full,
    author: name ?? "",
    authorEmail: email ?? "",
    message: (body ?? "").split("\n")[0]?.trim() ?? "",
    committedAt: Number(ct) * 1000,
    parents: (parents ?? "").split(" ").filter((s) => SHA_RE.test(s)),
  };
}

/**
 * Write a commit's tree into `target` (files with their modes, symlinks as links; submodules
 * become empty directories) through a temporary index, never touching the repository's state.
 * One `read-tree -u` reads the commit's tree into the empty index and writes its files (what
 * `read-tree` then `checkout-index --all` do in two processes); only a failure pays for the
 * `cat-file` that tells an unknown commit (404) from a broken repository.
 */
export async function fetchCommit(env: Record<string, string>, dir: string, sha: string, target: string): Promise<void> {
  if (!SHA_RE.test(sha)) throw new OpsError("not_found", "No such commit.");
  const scratch = mkdtempSync(path.join(tmpdir(), "ops-git-index-"));
  try {
    const withIndex = { ...env, GIT_INDEX_FILE: path.join(scratch, "index"), GIT_WORK_TREE: path.resolve(target) };
    const r = await git(withIndex, dir, ["read-tree", "--reset", "-u", `${sha}^{commit}`], { okCodes: [0, 128], cwd: path.resolve(target) });
    if (r.exitCode === 0) return;
    const check = await git(env, dir, ["cat-file", "-t", sha], { okCodes: [0, 128] });
    if (check.exitCode !== 0 || text(check).trim() !== "commit") throw new OpsError("not_found", `No commit ${sha} in the repository.`);
    throw new OpsError("internal", "The git host could not write the commit's files.", undefined, { cause: new Error(`git read-tree -u ${sha} exited 128: ${r.stderr.trim().slice(0, 2000)}`) });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
