/**
 * Reading commits and files straight from a bare repository's loose objects, without starting git.
 * A push of a few objects arrives as loose objects (receive-pack unpacks packs under
 * `receive.unpackLimit`, 100 objects), so what a push-triggered build reads first — the pushed
 * commit's author and message, its `ops.toml` — is usually there, and a `git` process costs
 * milliseconds beside a file read and an inflate. Every function answers exactly what its git
 * counterpart in reads.ts would, or null when it cannot be sure (an object that is packed, an
 * abbreviated name, a tag to peel, a message in another encoding, an odd path or ident): then
 * the caller asks git.
 */
import { readFileSync } from "node:fs";
import { inflateSync } from "node:zlib";
import path from "node:path";
import type { CommitInfo, FileAt } from "../types";

const SHA_RE = /^[0-9a-f]{40}$/;
/** `Name <email> <epoch seconds> <zone>`, as git writes author and committer lines. */
const IDENT_RE = /^([^<\n]*)<([^<>\n]*)> (\d+) [+-]\d{4}$/;

interface LooseObject {
  type: string;
  body: Buffer;
}

/** The loose object `sha` of the repository at `gitDir`, or null when it is not a readable loose object. */
export function readLooseObject(gitDir: string, sha: string): LooseObject | null {
  if (!SHA_RE.test(sha)) return null;
  let raw: Buffer;
  try {
    raw = inflateSync(readFileSync(path.join(gitDir, "objects", sha.slice(0, 2), sha.slice(2))));
  } catch {
    return null;
  }
  const nul = raw.indexOf(0);
  const header = nul > 0 ? raw.subarray(0, nul).toString("latin1") : "";
  const m = /^(commit|tree|blob|tag) (\d+)$/.exec(header);
  if (!m || Number(m[2]) !== raw.length - nul - 1) return null;
  return { type: m[1]!, body: raw.subarray(nul + 1) };
}

interface ParsedCommit {
  tree: string;
  parents: string[];
  author: RegExpExecArray;
  committer: RegExpExecArray;
  message: string;
}

function parseCommit(body: Buffer): ParsedCommit | null {
  const split = body.indexOf("\n\n");
  if (split < 0) return null;
  const headers = body.subarray(0, split).toString("utf8").split("\n");
  let tree = "";
  const parents: string[] = [];
  let author: RegExpExecArray | null = null;
  let committer: RegExpExecArray | null = null;
  for (const line of headers) {
    if (line.startsWith(" ")) continue; // continuation of a multi-line header (gpgsig, mergetag)
    const sp = line.indexOf(" ");
    const key = sp < 0 ? line : line.slice(0, sp);
    const value = sp < 0 ? "" : line.slice(sp + 1);
    if (key === "tree") tree = value;
    else if (key === "parent") parents.push(value);
    else if (key === "author") author ??= IDENT_RE.exec(value);
    else if (key === "committer") committer ??= IDENT_RE.exec(value);
    // git re-encodes a message that names its encoding: leave that to git.
    else if (key === "encoding") return null;
  }
  if (!SHA_RE.test(tree) || !parents.every((p) => SHA_RE.test(p)) || !author || !committer) return null;
  return { tree, parents, author, committer, message: body.subarray(split + 2).toString("utf8") };
}

/** What `commitInfo` (reads.ts) answers for a loose commit named by its full sha; null: ask git. */
export function looseCommitInfo(gitDir: string, sha: string): CommitInfo | null {
  const obj = readLooseObject(gitDir, sha);
  if (!obj || obj.type !== "commit") return null;
  const c = parseCommit(obj.body);
  if (!c) return null;
  return {
    sha,
    // git trims the whitespace before `<` from the name.
    author: c.author[1]!.replace(/[ \t\n\v\f\r]+$/, ""),
    authorEmail: c.author[2]!,
    message: c.message.split("\n")[0]?.trim() ?? "",
    committedAt: Number(c.committer[3]) * 1000,
    parents: c.parents,
  };
}

/** The entries of a loose tree object: name → mode (as `ls-tree` prints it) and sha; null when not loose. */
function looseTree(gitDir: string, sha: string): Map<string, { mode: string; sha: string }> | null {
  const obj = readLooseObject(gitDir, sha);
  if (!obj || obj.type !== "tree") return null;
  const out = new Map<string, { mode: string; sha: string }>();
  const b = obj.body;
  let i = 0;
  while (i < b.length) {
    const sp = b.indexOf(0x20, i);
    const nul = b.indexOf(0, sp + 1);
    if (sp < 0 || nul < 0 || nul + 21 > b.length) return null;
    const mode = Number.parseInt(b.subarray(i, sp).toString("latin1"), 8);
    const name = b.subarray(sp + 1, nul).toString("utf8");
    // A name that is not UTF-8 cannot be compared as text: git compares the bytes.
    if (!Number.isFinite(mode) || name.includes("\uFFFD")) return null;
    out.set(name, { mode: mode.toString(8).padStart(6, "0"), sha: b.subarray(nul + 1, nul + 21).toString("hex") });
    i = nul + 21;
  }
  return out;
}

/**
 * What `readFile` (reads.ts) answers for path `p` of a loose commit named by its full sha, when
 * every object on the way is loose; null: ask git. Paths with empty, `.` or `..` parts go to git.
 */
export function looseFileAt(gitDir: string, commitSha: string, p: string, maxBytes: number): FileAt | null {
  const parts = p.split("/");
  if (parts.some((s) => s === "" || s === "." || s === "..")) return null;
  const commit = readLooseObject(gitDir, commitSha);
  if (!commit || commit.type !== "commit") return null;
  const c = parseCommit(commit.body);
  if (!c) return null;
  let tree = c.tree;
  for (let i = 0; i < parts.length; i++) {
    const entries = looseTree(gitDir, tree);
    if (!entries) return null;
    const e = entries.get(parts[i]!);
    if (!e) return { kind: "missing" };
    const last = i === parts.length - 1;
    // A submodule is not a file of this repository (ls-tree's `commit` entries), nor a way into one.
    if (e.mode === "160000") return { kind: "missing" };
    if (e.mode === "040000") {
      if (last) return { kind: "directory", sha: e.sha };
      tree = e.sha;
      continue;
    }
    if (!last) return { kind: "missing" };
    const blob = readLooseObject(gitDir, e.sha);
    if (!blob || blob.type !== "blob") return null;
    const size = blob.body.length;
    if (size > maxBytes) return { kind: "file", sha: e.sha, size, mode: e.mode };
    return { kind: "file", sha: e.sha, size, mode: e.mode, content: new Uint8Array(blob.body) };
  }
  return null;
}
