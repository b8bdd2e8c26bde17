/**
 * Writing built-in repositories without a work tree: a commit of changes is built in a temporary
 * index (read-tree of the parent, blobs hashed in one `hash-object` call, `update-index
 * --index-info`, `write-tree`, `commit-tree`) and published with a compare-and-swap `update-ref`,
 * so a concurrent push can never be overwritten. Merges are `merge-tree --write-tree` (git ≥ 2.38):
 * a fast-forward when the base is an ancestor of the head, otherwise a merge commit, and a
 * conflict is reported with its paths instead of being written.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { OpsError } from "../../../core/errors";
import type { FileChange, MergeResult } from "../types";
import { ZERO_SHA } from "../types";
import { git, text } from "./git";
import { isSafeRefName } from "../refs";

export interface Signature {
  name: string;
  email: string;
  /** Epoch ms. */
  at: number;
}

function signatureEnv(author: Signature, committer: Signature): Record<string, string> {
  const clean = (s: string) => s.replace(/[<>\n\r\0]/g, "").trim() || "ops";
  return {
    GIT_AUTHOR_NAME: clean(author.name),
    GIT_AUTHOR_EMAIL: clean(author.email),
    GIT_AUTHOR_DATE: `@${Math.floor(author.at / 1000)} +0000`,
    GIT_COMMITTER_NAME: clean(committer.name),
    GIT_COMMITTER_EMAIL: clean(committer.email),
    GIT_COMMITTER_DATE: `@${Math.floor(committer.at / 1000)} +0000`,
  };
}

function badPath(p: string, message: string): OpsError {
  return new OpsError("validation_failed", `${p}: ${message}`, { fields: [{ path: p, message }] });
}

/** Create `refs/heads/<branch>` at `sha` only if it does not exist yet (409 otherwise). */
export async function createBranch(env: Record<string, string>, dir: string, branch: string, sha: string): Promise<void> {
  if (!isSafeRefName(branch) || branch.startsWith("refs/")) throw new OpsError("validation_failed", `"${branch}" is not a branch name.`, { fields: [{ path: "branch", message: "not a branch name" }] });
  const r = await git(env, dir, ["update-ref", "--no-deref", `refs/heads/${branch}`, sha, ZERO_SHA], { okCodes: [0, 1, 128] });
  if (r.exitCode !== 0) throw new OpsError("conflict", `The branch ${branch} already exists.`);
}

/**
 * Commit `changes` over `parentSha` and create `branch` at the result. Modes: a modified path
 * keeps its mode, a moved path takes its source's, a new path is 100644. Paths must not collide
 * with directories (a file where a directory is, or the reverse): 422 naming the path.
 */
export async function commitChanges(
  env: Record<string, string>,
  dir: string,
  req: { branch: string; parentSha: string; message: string; author: Signature; committer: Signature; changes: FileChange[] },
): Promise<string> {
  const scratch = mkdtempSync(path.join(tmpdir(), "ops-git-commit-"));
  try {
    const idx = { ...env, GIT_INDEX_FILE: path.join(scratch, "index"), GIT_LITERAL_PATHSPECS: "1" };
    const parentType = await git(env, dir, ["cat-file", "-t", req.parentSha], { okCodes: [0, 128] });
    if (parentType.exitCode !== 0 || text(parentType).trim() !== "commit") throw new OpsError("not_found", `No commit ${req.parentSha} in the repository.`);
    await git(idx, dir, ["read-tree", req.parentSha]);

    // Every path in the parent with its mode and blob.
    const entries = new Map<string, { mode: string; sha: string }>();
    for (const rec of text(await git(idx, dir, ["ls-files", "--stage", "-z"])).split("\0")) {
      const m = /^(\d+) ([0-9a-f]{40}) \d\t(.*)$/s.exec(rec);
      if (m) entries.set(m[3]!, { mode: m[1]!, sha: m[2]! });
    }

    // Hash every new content in one call.
    const writes = req.changes.filter((c) => c.content !== null);
    const files = writes.map((c, i) => {
      const f = path.join(scratch, `blob-${i}`);
      writeFileSync(f, c.content as Uint8Array);
      return f;
    });
    const shas = files.length === 0 ? [] : text(await git(env, dir, ["hash-object", "-w", "--no-filters", "--stdin-paths"], { input: files.join("\n") + "\n" })).trim().split("\n");

    const lines: string[] = [];
    const final = new Map(entries);
    const remove = (p: string) => {
      lines.push(`0 ${ZERO_SHA}\t${p}`);
      final.delete(p);
    };
    for (const c of req.changes) {
      if (c.movedFrom !== undefined && c.movedFrom !== c.path) {
        if (!entries.has(c.movedFrom)) throw badPath(c.movedFrom, "moved_from names no file on the branch");
        remove(c.movedFrom);
      }
    }
    let w = 0;
    for (const c of req.changes) {
      if (c.content === null) {
        if (!entries.has(c.path)) throw badPath(c.path, "no file to delete at this path");
        remove(c.path);
        continue;
      }
      const sha = shas[w++]!;
      const mode = (c.movedFrom !== undefined ? entries.get(c.movedFrom)?.mode : undefined) ?? entries.get(c.path)?.mode ?? "100644";
      lines.push(`${mode} ${sha}\t${c.path}`);
      final.set(c.path, { mode, sha });
    }
    assertNoDirectoryClash(final, req.changes.filter((c) => c.content !== null).map((c) => c.path));

    if (lines.length > 0) await git(idx, dir, ["update-index", "-z", "--index-info"], { input: lines.join("\0") + "\0" });
    const tree = text(await git(idx, dir, ["write-tree"])).trim();
    const commit = text(
      await git({ ...env, ...signatureEnv(req.author, req.committer) }, dir, ["commit-tree", tree, "-p", req.parentSha, "-F", "-"], { input: req.message.endsWith("\n") ? req.message : `${req.message}\n` }),
    ).trim();
    await createBranch(env, dir, req.branch, commit);
    return commit;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** 422 when a written path sits under a file, or where a directory is. */
function assertNoDirectoryClash(final: Map<string, unknown>, written: string[]): void {
  const dirs = new Set<string>();
  for (const p of final.keys()) {
    for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) dirs.add(p.slice(0, i));
  }
  for (const p of written) {
    if (dirs.has(p)) throw badPath(p, "a directory of that name exists on the branch");
    for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) {
      if (final.has(p.slice(0, i))) throw badPath(p, `${p.slice(0, i)} is a file on the branch`);
    }
  }
}

/** True when `a` is an ancestor of (or equal to) `b`. */
async function isAncestor(env: Record<string, string>, dir: string, a: string, b: string): Promise<boolean> {
  return (await git(env, dir, ["merge-base", "--is-ancestor", a, b], { okCodes: [0, 1] })).exitCode === 0;
}

/**
 * Merge `headSha` into the branch `base` (whose head is `baseSha`): a fast-forward when possible,
 * else a merge commit; a conflict is refused with the conflicting paths. The base moves only if
 * it still points at `baseSha`.
 */
export async function mergeInto(
  env: Record<string, string>,
  dir: string,
  req: { base: string; baseSha: string; headSha: string; message: string; committer: Signature },
): Promise<MergeResult> {
  if (await isAncestor(env, dir, req.headSha, req.baseSha)) {
    return { merged: false, reason: `Nothing to merge: ${req.base} already contains every commit of the pull request.`, conflicts: [] };
  }
  let sha: string;
  if (await isAncestor(env, dir, req.baseSha, req.headSha)) {
    sha = req.headSha;
  } else {
    const r = await git(env, dir, ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", req.baseSha, req.headSha], { okCodes: [0, 1] });
    const parts = text(r).split("\0").filter((s) => s !== "");
    if (r.exitCode === 1) {
      const conflicts = [...new Set(parts.slice(1))];
      return { merged: false, reason: `Merge conflict in ${conflicts.join(", ")}.`, conflicts };
    }
    const tree = parts[0]!;
    sha = text(
      await git({ ...env, ...signatureEnv(req.committer, req.committer) }, dir, ["commit-tree", tree, "-p", req.baseSha, "-p", req.headSha, "-F", "-"], { input: `${req.message}\n` }),
    ).trim();
  }
  const moved = await git(env, dir, ["update-ref", "--no-deref", `refs/heads/${req.base}`, sha, req.baseSha], { okCodes: [0, 1, 128] });
  if (moved.exitCode !== 0) throw new OpsError("conflict", `The branch ${req.base} moved while merging; try again.`);
  return { merged: true, sha };
}
