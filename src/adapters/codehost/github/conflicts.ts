/**
 * Which paths a pull request conflicts on, when GitHub refuses its merge as "not mergeable":
 * GitHub's REST API says that there is a conflict but never where, so ops works it out the way
 * git's merge would. `compare/{base}...{head}` and `compare/{head}...{base}` give the merge base
 * and the files each side changed since it; every path both sides changed is looked up in the
 * three trees (merge base, base, head) and decided:
 * - the same result on both sides → clean;
 * - deleted on one side and changed on the other, a file against a directory, or different modes
 *   → conflict;
 * - otherwise the three versions are merged with `git merge-file` (no repository needed): any
 *   conflict hunk, or content git cannot merge (binary), is a conflict.
 * At most `MAX_CANDIDATES` paths are checked, and GitHub's compare lists at most 300 files per
 * side, so a very wide conflict may be named in part; the caller says so.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Logger } from "../../../core/log";
import { repoPath, type GithubClient } from "./client";
import type { GithubTreeEntry, Installed, Reader } from "./reads";

const MAX_CANDIDATES = 100;
/** Versions larger than this are not merged here: changed differently on both sides means conflict. */
const MAX_MERGE_BYTES = 5 * 1024 * 1024;

interface Compare {
  merge_base_commit: { sha: string };
  files?: Array<{ filename: string; status: string; previous_filename?: string }>;
}

function changedPaths(c: Compare): Set<string> {
  const out = new Set<string>();
  for (const f of c.files ?? []) {
    out.add(f.filename);
    if (f.previous_filename) out.add(f.previous_filename);
  }
  return out;
}

/** Exit code of `git merge-file` on three files: 0 clean, >0 conflicts, <0 (255) cannot merge. */
async function mergeFile(ours: Uint8Array, base: Uint8Array, theirs: Uint8Array): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), "ops-merge-file-"));
  try {
    const [o, b, t] = ["ours", "base", "theirs"].map((n) => path.join(dir, n)) as [string, string, string];
    writeFileSync(o, ours);
    writeFileSync(b, base);
    writeFileSync(t, theirs);
    const proc = Bun.spawn(["git", "merge-file", "-p", "--quiet", o, b, t], {
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dir, LANG: "C", LC_ALL: "C", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
      cwd: dir,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    });
    return await proc.exited;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The conflicting paths of merging `headSha` into `baseSha`, sorted; `partial` when not every candidate could be checked. */
export async function conflictingPaths(client: GithubClient, reader: Reader, ref: Installed, baseSha: string, headSha: string, log: Logger): Promise<{ paths: string[]; partial: boolean }> {
  const auth = { installation: ref.installationId };
  const onHead = await client.call<Compare>({ path: `${repoPath(ref.repo)}/compare/${baseSha}...${headSha}`, auth });
  const onBase = await client.call<Compare>({ path: `${repoPath(ref.repo)}/compare/${headSha}...${baseSha}`, auth });
  const mergeBase = onHead.data.merge_base_commit?.sha;
  const baseChanged = changedPaths(onBase.data);
  const candidates = [...changedPaths(onHead.data)].filter((p) => baseChanged.has(p)).sort();
  const partial = candidates.length > MAX_CANDIDATES || (onHead.data.files?.length ?? 0) >= 300 || (onBase.data.files?.length ?? 0) >= 300;
  if (!mergeBase || candidates.length === 0) return { paths: [], partial };

  const treeOf = async (sha: string) => (await reader.gitCommit(ref, sha))?.tree.sha ?? null;
  const [oTree, aTree, bTree] = await Promise.all([treeOf(mergeBase), treeOf(baseSha), treeOf(headSha)]);
  if (!oTree || !aTree || !bTree) return { paths: [], partial: true };

  const blob = async (e: GithubTreeEntry | null) => (e ? reader.blob(ref, e.sha) : new Uint8Array(0));
  const out: string[] = [];
  for (const p of candidates.slice(0, MAX_CANDIDATES)) {
    const [o, a, b] = await Promise.all([reader.entryAt(ref, oTree, p), reader.entryAt(ref, aTree, p), reader.entryAt(ref, bTree, p)]);
    const same = (x: GithubTreeEntry | null, y: GithubTreeEntry | null) => (x === null ? y === null : y !== null && x.sha === y.sha && x.mode === y.mode);
    if (same(a, b) || same(o, b) || same(o, a)) continue; // one side kept the base, or both ended the same
    if (!a || !b || a.type !== "blob" || b.type !== "blob" || (o && o.type !== "blob") || a.mode !== b.mode) {
      out.push(p);
      continue;
    }
    if ((a.size ?? 0) > MAX_MERGE_BYTES || (b.size ?? 0) > MAX_MERGE_BYTES || (o?.size ?? 0) > MAX_MERGE_BYTES) {
      out.push(p);
      continue;
    }
    const code = await mergeFile(await blob(a), await blob(o), await blob(b));
    if (code !== 0) out.push(p);
  }
  log.debug("github merge conflicts computed", { repo: ref.repo, candidates: candidates.length, conflicts: out.length });
  return { paths: out, partial };
}
