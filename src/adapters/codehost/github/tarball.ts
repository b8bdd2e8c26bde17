/**
 * A commit's files written into a directory from GitHub's tarball (`GET tarball/{sha}` answers a
 * 302 to a short-lived download URL; the archive's entries sit under one `owner-repo-sha/`
 * directory). The archive is streamed through `tar`'s parser and written entry by entry — never
 * unpacked by a generic extractor — so every entry is checked first:
 * - paths are relative, without `.`/`..` components or a `.git` directory, and stay inside `dir`;
 * - nothing is written through a symbolic link, or over anything already there;
 * - only files (mode 644 or 755 by their executable bit), directories and symbolic links (their
 *   targets kept as they are: a link is never followed here) are written; hard links, devices
 *   and FIFOs refuse the archive.
 */
import { closeSync, lstatSync, mkdirSync, openSync, symlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { Parser, type ReadEntry } from "tar";
import { OpsError } from "../../../core/errors";
import type { Logger } from "../../../core/log";

const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);

class Refused extends Error {}

/** The entry's path inside the archive's one top directory, or "" for that directory itself. */
function relativePath(raw: string, top: { name: string | null }): string {
  if (raw === "" || raw.includes("\0")) throw new Refused("an entry with an empty or invalid name");
  if (raw.startsWith("/")) throw new Refused(`"${raw}" has an absolute path`);
  const parts = raw.split("/").filter((p) => p !== "");
  if (parts.some((p) => p === "." || p === "..")) throw new Refused(`"${raw}" has a "." or ".." component`);
  if (parts.length === 0) throw new Refused(`"${raw}" has no name`);
  if (top.name === null) top.name = parts[0]!;
  else if (parts[0] !== top.name) throw new Refused(`"${raw}" is outside the archive's top directory`);
  const rel = parts.slice(1);
  if (rel.includes(".git")) throw new Refused(`"${raw}" writes into a .git directory`);
  return rel.join("/");
}

/** Throws unless every existing ancestor of `full` below `root` is a real directory (not a link). */
function assertNoLinkOnTheWay(root: string, full: string): void {
  let cur = root;
  for (const part of path.relative(root, path.dirname(full)).split(path.sep).filter(Boolean)) {
    cur = path.join(cur, part);
    let st;
    try {
      st = lstatSync(cur);
    } catch {
      return; // not there yet: created below as a directory
    }
    if (!st.isDirectory()) throw new Refused(`"${path.relative(root, full)}" would be written through ${st.isSymbolicLink() ? "a symbolic link" : "a file"} at "${path.relative(root, cur)}"`);
  }
}

/** Write the gzip'd tar `body` into `dir` (see the file comment). `what` names the commit in errors. */
export async function extractTarball(body: ReadableStream<Uint8Array>, dir: string, what: string, log: Logger): Promise<void> {
  const root = path.resolve(dir);
  mkdirSync(root, { recursive: true });
  const top = { name: null as string | null };
  let failed: Error | null = null;
  let settle: { resolve: () => void; reject: (e: Error) => void } = { resolve: () => {}, reject: () => {} };
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  done.catch(() => {}); // awaited below; a failure before that is not "unhandled"

  const parser = new Parser({ strict: true, brotli: false, zstd: false });
  parser.on("end", () => (failed ? settle.reject(failed) : settle.resolve()));
  parser.on("close", () => (failed ? settle.reject(failed) : settle.resolve()));
  const fail = (e: Error) => {
    if (failed) return;
    failed = e;
    settle.reject(e);
    parser.abort(e);
  };

  parser.on("entry", (entry: ReadEntry) => {
    if (failed) return entry.resume();
    try {
      const rel = relativePath(entry.path, top);
      if (rel === "") return entry.resume();
      const full = path.join(root, rel);
      if (!full.startsWith(root + path.sep)) throw new Refused(`"${entry.path}" leaves the directory`);
      assertNoLinkOnTheWay(root, full);
      if (entry.type === "Directory") {
        mkdirSync(full, { recursive: true, mode: 0o755 });
        return entry.resume();
      }
      mkdirSync(path.dirname(full), { recursive: true, mode: 0o755 });
      if (entry.type === "SymbolicLink") {
        if (!entry.linkpath) throw new Refused(`"${rel}" is a symbolic link without a target`);
        symlinkSync(entry.linkpath, full);
        return entry.resume();
      }
      if (!FILE_TYPES.has(entry.type)) throw new Refused(`"${rel}" is an entry of type ${entry.type}; only files, directories and symbolic links are written`);
      const fd = openSync(full, "wx", (entry.mode ?? 0o644) & 0o111 ? 0o755 : 0o644);
      entry.on("data", (chunk: Buffer) => {
        if (!failed) writeSync(fd, chunk);
      });
      entry.on("end", () => closeSync(fd));
    } catch (e) {
      fail(e as Error);
      entry.resume();
    }
  });
  parser.on("warn", (code: string, message: string) => {
    if (code === "TAR_BAD_ARCHIVE" || code === "TAR_ENTRY_INVALID" || code === "TAR_ENTRY_ERROR" || code === "TAR_ABORT") fail(new Error(message));
  });
  parser.on("error", (e: Error) => fail(e));

  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done: finished } = await reader.read();
      if (finished || failed) break;
      parser.write(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
    }
    if (failed) {
      await reader.cancel().catch(() => {});
      throw failed;
    }
    parser.end();
    await done;
  } catch (e) {
    const err = failed ?? (e as Error);
    if (err instanceof Refused) throw new OpsError("bad_gateway", `GitHub's archive of ${what} was refused: ${err.message}.`);
    log.warn("github archive unreadable", { what, err: String(err) });
    throw new OpsError("bad_gateway", `GitHub's archive of ${what} could not be read.`, undefined, { cause: err });
  }
}
