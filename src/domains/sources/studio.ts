/**
 * The studio's reads: a ref's whole tree (cut at 100 000 entries) with the refs the editor can
 * switch to, and one file with binary detection and the spec's size limits.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { OpsError } from "../../core/errors";
import { assertInstalled, getSourceRow, repoRefOf, requireHost } from "./connections";
import { sourceSaves } from "./tables";
import type { StudioFileResponse, StudioTree } from "./model";

export const TREE_LIMIT = 100_000;
export const TEXT_LIMIT = 1024 * 1024;
export const FILE_LIMIT = 5 * 1024 * 1024;
const SNIFF_BYTES = 8 * 1024;

/**
 * Why `p` is not a repository path, or null when it is one: relative, no empty, `.` or `..`
 * segment, nothing under `.git/`, no NUL, backslash or line break.
 */
export function badRepoPath(p: string): string | null {
  if (p === "") return "is empty";
  if (p.length > 4096) return "is longer than 4096 characters";
  if (p.startsWith("/")) return "must be relative to the repository root (no leading /)";
  if (/[\0\\\r\n]/.test(p)) return "contains a NUL, backslash or line break";
  const segs = p.split("/");
  if (segs.some((s) => s === "")) return "has an empty segment";
  if (segs.some((s) => s === "." || s === "..")) return "contains . or ..";
  if (segs[0]!.toLowerCase() === ".git") return "is under .git/";
  return null;
}

/** True when `bytes` hold a NUL or are not valid UTF-8 (checked on the first 8 KiB, then everywhere). */
export function isBinary(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, SNIFF_BYTES);
  if (head.includes(0) || bytes.includes(0)) return true;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return false;
  } catch {
    return true;
  }
}

/** The ref the editor works on (the default branch when absent) and its commit; 404 when it names nothing. */
export async function resolveStudioRef(core: Core, row: { repo: string; installationId: number; defaultBranch: string }, ref: string | undefined | null): Promise<{ ref: string; sha: string | null }> {
  const host = requireHost(core);
  const name = ref || row.defaultBranch;
  const sha = await host.resolveRef(repoRefOf(row), name);
  if (sha) return { ref: name, sha };
  // A repository without commits has no default branch yet: an empty tree, not an error.
  if (name === row.defaultBranch) return { ref: name, sha: null };
  throw new OpsError("not_found", `No branch, tag or commit "${name}" in ${row.repo}.`);
}

/** `GET …/sources/{id}/tree`. */
export async function studioTree(core: Core, project: ProjectRef, id: string, ref: string | undefined): Promise<StudioTree> {
  const host = requireHost(core);
  const row = getSourceRow(core, project, id);
  await assertInstalled(core, host, project, row);
  const at = await resolveStudioRef(core, row, ref);
  const listing = at.sha ? await host.readTree(repoRefOf(row), at.sha, { limit: TREE_LIMIT }) : { entries: [], truncated: false };
  const open = core.db
    .select({ id: sourceSaves.id, branch: sourceSaves.branch, pull: sourceSaves.pullNumber })
    .from(sourceSaves)
    .where(and(eq(sourceSaves.sourceId, row.id), eq(sourceSaves.status, "open")))
    .orderBy(desc(sourceSaves.id))
    .all();
  return {
    default_branch: row.defaultBranch,
    entries: listing.entries.map((e) => ({ path: e.path, sha: e.sha, size: e.size, type: e.type })),
    ref: at.ref,
    refs: [{ name: row.defaultBranch, pull_number: null, save_id: null }, ...open.filter((s) => s.branch).map((s) => ({ name: s.branch as string, pull_number: s.pull, save_id: s.id }))],
    sha: at.sha ?? "",
    truncated: listing.truncated,
  };
}

/** `GET …/sources/{id}/file`: 422 not a repository path or a directory; 413 text over 1 MiB or any file over 5 MiB. */
export async function studioFile(core: Core, project: ProjectRef, id: string, p: string, ref: string | undefined): Promise<StudioFileResponse> {
  const why = badRepoPath(p);
  if (why) throw new OpsError("validation_failed", `path ${why}.`, { fields: [{ path: "path", message: why }] });
  const host = requireHost(core);
  const row = getSourceRow(core, project, id);
  await assertInstalled(core, host, project, row);
  const at = await resolveStudioRef(core, row, ref);
  const base: StudioFileResponse = { base64: null, binary: false, exists: false, html_url: host.fileUrl(row.repo, at.ref, p), path: p, ref: at.ref, sha: "", text: "" };
  if (!at.sha) return base;
  const file = await host.readFile(repoRefOf(row), at.sha, p, { maxBytes: FILE_LIMIT });
  if (file.kind === "missing") return base;
  if (file.kind === "directory") throw new OpsError("validation_failed", `${p} is a directory.`, { fields: [{ path: "path", message: "is a directory" }] });
  if (file.size > FILE_LIMIT || !file.content) throw new OpsError("payload_too_large", `${p} is ${file.size} bytes; files over 5 MiB are not shown.`, { limit_bytes: FILE_LIMIT, size_bytes: file.size });
  if (isBinary(file.content)) return { ...base, exists: true, binary: true, sha: file.sha, base64: Buffer.from(file.content).toString("base64") };
  if (file.size > TEXT_LIMIT) throw new OpsError("payload_too_large", `${p} is ${file.size} bytes of text; text over 1 MiB is not shown.`, { limit_bytes: TEXT_LIMIT, size_bytes: file.size });
  return { ...base, exists: true, sha: file.sha, text: Buffer.from(file.content).toString("utf8") };
}
