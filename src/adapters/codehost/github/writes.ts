/**
 * A commit of changes on a new branch through GitHub's git data API, the way the built-in host
 * builds one in a temporary index: every path the change touches is looked up in the parent's
 * tree first (so a delete of nothing, a move from nothing, or a file where a directory is, is
 * refused with the path before anything is written), then blobs are created, one tree over the
 * parent's (`base_tree`; deletes are entries with `sha: null`), the commit, and last the branch —
 * `POST git/refs` fails when the branch exists, so an existing branch is never moved.
 * Modes: a modified path keeps its mode, a moved path takes its source's, a new path is 100644.
 */
import { OpsError } from "../../../core/errors";
import type { CommitRequest } from "../types";
import { githubMessage, repoPath, type GithubClient } from "./client";
import { isSafeRefName } from "../refs";
import { encodeSegments, SHA_RE, type GithubTreeEntry, type Installed, type Reader } from "./reads";

/** Blobs created at once. */
const BLOB_CONCURRENCY = 4;

function badPath(p: string, message: string): OpsError {
  return new OpsError("validation_failed", `${p}: ${message}`, { fields: [{ path: p, message }] });
}

interface TreeWrite {
  path: string;
  mode: string;
  type: "blob";
  sha: string | null;
}

/** Commit `req.changes` over `req.parentSha` as the new branch `req.branch`; returns the commit sha. */
export async function commitChanges(client: GithubClient, reader: Reader, ref: Installed, req: CommitRequest, at: number): Promise<string> {
  if (!isSafeRefName(req.branch) || req.branch.startsWith("refs/")) {
    throw new OpsError("validation_failed", `"${req.branch}" is not a branch name.`, { fields: [{ path: "branch", message: "not a branch name" }] });
  }
  const auth = { installation: ref.installationId };
  const base = repoPath(ref.repo);
  const parent = SHA_RE.test(req.parentSha) ? await reader.gitCommit(ref, req.parentSha) : null;
  if (!parent) throw new OpsError("not_found", `No commit ${req.parentSha} in ${ref.repo}.`);
  const existing = await client.call({ path: `${base}/git/ref/heads/${encodeSegments(req.branch)}`, auth, expect: [404, 409] });
  if (existing.status === 200 && !Array.isArray(existing.data)) throw new OpsError("conflict", `The branch ${req.branch} already exists.`);

  // What the parent has at every path the change names.
  const root = parent.tree.sha;
  const before = new Map<string, GithubTreeEntry | null>();
  const lookup = async (p: string) => {
    if (!before.has(p)) before.set(p, await reader.entryAt(ref, root, p));
    return before.get(p)!;
  };
  const isFile = (e: GithubTreeEntry | null) => e !== null && e.type === "blob";

  const writes: TreeWrite[] = [];
  const removed = new Set<string>();
  const remove = async (p: string) => {
    const e = await lookup(p);
    writes.push({ path: p, mode: e!.mode, type: "blob", sha: null });
    removed.add(p);
  };
  for (const c of req.changes) {
    if (c.movedFrom !== undefined && c.movedFrom !== c.path) {
      if (!isFile(await lookup(c.movedFrom))) throw badPath(c.movedFrom, "moved_from names no file on the branch");
      await remove(c.movedFrom);
    }
  }
  const added: Array<{ path: string; mode: string; content: Uint8Array }> = [];
  for (const c of req.changes) {
    if (c.content === null) {
      if (!isFile(await lookup(c.path))) throw badPath(c.path, "no file to delete at this path");
      await remove(c.path);
      continue;
    }
    const own = await lookup(c.path);
    const moved = c.movedFrom !== undefined ? await lookup(c.movedFrom) : null;
    const mode = (isFile(moved) ? moved!.mode : undefined) ?? (isFile(own) ? own!.mode : undefined) ?? "100644";
    added.push({ path: c.path, mode, content: c.content });
  }
  await assertNoDirectoryClash(reader, ref, root, added.map((a) => a.path), removed, lookup);

  // Blobs, a few at a time.
  const shas: string[] = new Array(added.length);
  for (let i = 0; i < added.length; i += BLOB_CONCURRENCY) {
    await Promise.all(
      added.slice(i, i + BLOB_CONCURRENCY).map(async (a, j) => {
        const r = await client.call<{ sha: string }>({ method: "POST", path: `${base}/git/blobs`, auth, body: { content: Buffer.from(a.content).toString("base64"), encoding: "base64" } });
        shas[i + j] = r.data.sha;
      }),
    );
  }
  added.forEach((a, i) => writes.push({ path: a.path, mode: a.mode, type: "blob", sha: shas[i]! }));

  let tree = root;
  if (writes.length > 0) {
    const t = await client.call<{ sha: string }>({ method: "POST", path: `${base}/git/trees`, auth, body: { base_tree: root, tree: writes } });
    tree = t.data.sha;
  }
  const commit = await client.call<{ sha: string }>({
    method: "POST",
    path: `${base}/git/commits`,
    auth,
    body: { message: req.message, tree, parents: [req.parentSha], author: { name: req.author.name, email: req.author.email, date: new Date(at).toISOString() } },
  });
  const created = await client.call({ method: "POST", path: `${base}/git/refs`, auth, body: { ref: `refs/heads/${req.branch}`, sha: commit.data.sha }, expect: [422] });
  if (created.status === 422) {
    const message = githubMessage(created.data);
    if (/already exists/i.test(message)) throw new OpsError("conflict", `The branch ${req.branch} already exists.`);
    throw new OpsError("conflict", `GitHub refused to create the branch ${req.branch}: ${message}`);
  }
  return commit.data.sha;
}

/**
 * 422 when a written path sits under a file (one the change does not remove, or one it writes),
 * or where a directory is (on the parent, or made by another written path).
 */
async function assertNoDirectoryClash(
  reader: Reader,
  ref: Installed,
  root: string,
  written: string[],
  removed: Set<string>,
  lookup: (p: string) => Promise<GithubTreeEntry | null>,
): Promise<void> {
  const writtenSet = new Set(written);
  const writtenDirs = new Set<string>();
  for (const p of written) for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) writtenDirs.add(p.slice(0, i));
  for (const p of written) {
    const own = await lookup(p);
    if ((own !== null && own.type === "tree") || writtenDirs.has(p)) throw badPath(p, "a directory of that name exists on the branch");
    for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) {
      if (writtenSet.has(p.slice(0, i))) throw badPath(p, `${p.slice(0, i)} is a file on the branch`);
    }
    const blocking = await reader.blockingPrefix(ref, root, p);
    if (blocking !== null && !removed.has(blocking)) throw badPath(p, `${blocking} is a file on the branch`);
  }
}
