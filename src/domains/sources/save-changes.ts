/**
 * The checks a studio save passes before anything is written. Shape first (422 with the failing
 * field: message, paths, text/base64, counts and sizes), then against the branch's head (422:
 * a base_sha that no longer matches, a delete or move of a path that is not there, a path the
 * truncated listing could not show). The same head checks run again when the save runs, since
 * the branch may have moved in between.
 */
import { OpsError } from "../../core/errors";
import type { CodeHost, RepoRef } from "../../adapters/codehost/types";
import type { SaveChange, SaveFileResponse } from "./model";
import { badRepoPath, TREE_LIMIT } from "./studio";

export const MAX_CHANGES = 200;
export const MAX_CONTENT_BYTES = 8 * 1024 * 1024;
export const MAX_BINARY_BYTES = 5 * 1024 * 1024;

/** One checked change, as the save's payload stores it. */
export interface CheckedChange {
  path: string;
  /** base64 of the new bytes; null deletes. */
  content: string | null;
  baseSha: string | null;
  movedFrom: string | null;
}

function fail(path: string, message: string): OpsError {
  return new OpsError("validation_failed", `${path}: ${message}`, { fields: [{ path, message }] });
}

const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Check a save request's shape; returns the changes to store. Throws 422 naming the field. */
export function checkSaveShape(body: { message: string; changes: SaveChange[] }): CheckedChange[] {
  if (body.message.trim() === "") throw fail("message", "a save needs a message (the commit message and pull request title)");
  if (body.changes.length === 0) throw fail("changes", "a save needs at least one change");
  if (body.changes.length > MAX_CHANGES) throw fail("changes", `at most ${MAX_CHANGES} changes per save (got ${body.changes.length})`);
  const seen = new Set<string>();
  let total = 0;
  const out: CheckedChange[] = [];
  body.changes.forEach((c, i) => {
    const at = `changes[${i}]`;
    const why = badRepoPath(c.path);
    if (why) throw fail(`${at}.path`, `${JSON.stringify(c.path)} ${why}`);
    if (seen.has(c.path)) throw fail(`${at}.path`, `${c.path} appears twice in the save`);
    seen.add(c.path);
    const hasText = c.text !== undefined && c.text !== null;
    const hasBytes = c.base64 !== undefined && c.base64 !== null;
    if (hasText && hasBytes) throw fail(`${at}.base64`, "give text or base64, not both");
    let content: string | null = null;
    if (hasText) {
      const bytes = Buffer.byteLength(c.text as string, "utf8");
      total += bytes;
      content = Buffer.from(c.text as string, "utf8").toString("base64");
    } else if (hasBytes) {
      const b64 = c.base64 as string;
      if (!BASE64_RE.test(b64)) throw fail(`${at}.base64`, "not valid base64 (standard alphabet, padded)");
      const bytes = (b64.length / 4) * 3 - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
      if (bytes > MAX_BINARY_BYTES) throw fail(`${at}.base64`, `${bytes} bytes; one binary file may hold at most ${MAX_BINARY_BYTES}`);
      total += bytes;
      content = b64;
    }
    if (total > MAX_CONTENT_BYTES) throw fail("changes", `more than ${MAX_CONTENT_BYTES} bytes of content in one save`);
    if (c.base_sha !== undefined && c.base_sha !== null && !/^[0-9a-f]{40}$/.test(c.base_sha)) throw fail(`${at}.base_sha`, "not a blob sha (40 hex digits)");
    let movedFrom: string | null = null;
    if (c.moved_from !== undefined && c.moved_from !== null) {
      const whyFrom = badRepoPath(c.moved_from);
      if (whyFrom) throw fail(`${at}.moved_from`, `${JSON.stringify(c.moved_from)} ${whyFrom}`);
      if (c.moved_from === c.path) throw fail(`${at}.moved_from`, "a file cannot move onto itself");
      if (content === null) throw fail(`${at}.moved_from`, "moved_from belongs on the add side of a move (with text or base64)");
      movedFrom = c.moved_from;
    }
    out.push({ path: c.path, content, baseSha: c.base_sha ?? null, movedFrom });
  });
  for (const c of out) {
    if (c.movedFrom === null) continue;
    const other = out.find((o) => o.path === c.movedFrom);
    if (other && other.content !== null) throw fail(`changes[${out.indexOf(c)}].moved_from`, `${c.movedFrom} is also written by this save`);
    if (out.some((o) => o !== c && o.movedFrom === c.movedFrom)) throw fail(`changes[${out.indexOf(c)}].moved_from`, `${c.movedFrom} is moved twice`);
  }
  return out;
}

/**
 * Check the changes against the branch head `sha`: base shas, what deletes and moves name, paths
 * a truncated listing cannot vouch for. Returns the files the commit will touch, with actions.
 */
export async function checkAgainstHead(host: CodeHost, repo: RepoRef, sha: string, changes: CheckedChange[]): Promise<SaveFileResponse[]> {
  const listing = await host.readTree(repo, sha, { limit: TREE_LIMIT });
  const at = new Map(listing.entries.map((e) => [e.path, e]));
  const exists = (p: string, i: number, field: string) => {
    const e = at.get(p);
    if (e) return e;
    if (listing.truncated) throw fail(`changes[${i}].${field}`, `${p} is beyond the first ${TREE_LIMIT} entries of the tree, which the studio cannot check`);
    return null;
  };
  const files: SaveFileResponse[] = [];
  changes.forEach((c, i) => {
    const cur = exists(c.path, i, "path");
    if (cur?.type === "tree") throw fail(`changes[${i}].path`, `${c.path} is a directory`);
    if (c.content === null) {
      if (!cur) throw fail(`changes[${i}].path`, `no file ${c.path} to delete on this branch`);
    }
    if (cur && c.baseSha === null && c.content !== null) throw fail(`changes[${i}].base_sha`, `${c.path} exists on the branch (blob ${cur.sha}); send the base_sha you opened it at`);
    if (cur && c.baseSha !== null && c.baseSha !== cur.sha) throw fail(`changes[${i}].base_sha`, `${c.path} changed since it was opened (now ${cur.sha}, opened at ${c.baseSha})`);
    if (!cur && c.baseSha !== null) throw fail(`changes[${i}].base_sha`, `${c.path} no longer exists on the branch (opened at ${c.baseSha})`);
    if (c.movedFrom !== null) {
      const from = exists(c.movedFrom, i, "moved_from");
      if (!from || from.type !== "blob") throw fail(`changes[${i}].moved_from`, `no file ${c.movedFrom} to move on this branch`);
    }
    files.push({ path: c.path, action: c.content === null ? "delete" : cur ? "modify" : "add" });
  });
  for (const c of changes) {
    if (c.movedFrom !== null && !changes.some((o) => o.path === c.movedFrom)) files.push({ path: c.movedFrom, action: "delete" });
  }
  return files;
}
