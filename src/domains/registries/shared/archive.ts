/**
 * Inspection of published archives (npm `.tgz`, cargo `.crate`: both gzip'd tar) before anything
 * is stored. The archive is streamed through `tar`'s parser, never unpacked to disk, and refused
 * when it holds:
 * - an absolute path, a `..` component, a backslash or a drive letter (path traversal on unpack);
 * - a symbolic or hard link, a device or a FIFO (only files and directories are allowed);
 * - an entry outside the expected single top directory;
 * - a forbidden name (cargo's `.cargo-ok` marker, which a crate could ship to fake a finished unpack);
 * - more than `maxEntries` entries, more than `maxUnpackedBytes` in total, or a decompression
 *   ratio above `maxRatio` (a decompression bomb stops within one chunk of crossing the line).
 *
 * Only the files the caller asks for (package.json, Cargo.toml) are kept, each capped at 1 MiB.
 */
import { Parser, type ReadEntry } from "tar";

export class ArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ArchiveError";
  }
}

export interface InspectOptions {
  /** Every entry must sit under this top directory (`package`, `foo-0.1.0`); null = any single one. */
  root: string | null;
  /** Paths relative to the root whose contents to return. */
  collect: readonly string[];
  /** Entry base names that may not appear anywhere. */
  forbidNames?: readonly string[];
  maxEntries?: number;
  maxUnpackedBytes?: number;
  maxRatio?: number;
}

export interface Inspection {
  root: string;
  entries: number;
  /** Regular files among the entries. */
  fileCount: number;
  unpackedBytes: number;
  /** Collected files by path relative to the root. */
  files: Map<string, Uint8Array>;
}

const COLLECT_CAP = 1024 * 1024;
const FEED_CHUNK = 64 * 1024;
const ALLOWED_TYPES = new Set(["File", "OldFile", "ContiguousFile", "Directory"]);

export const DEFAULT_LIMITS = { maxEntries: 20_000, maxUnpackedBytes: 512 * 1024 * 1024, maxRatio: 200 } as const;

/** Check one entry path; returns it relative to the root, or throws. */
function checkPath(raw: string, opts: InspectOptions, state: { root: string | null }): string {
  if (raw === "" || raw.includes("\0")) throw new ArchiveError("The archive has an entry with an empty or invalid name.");
  if (raw.includes("\\")) throw new ArchiveError(`The archive entry "${raw}" contains a backslash.`);
  if (raw.startsWith("/") || /^[A-Za-z]:/.test(raw)) throw new ArchiveError(`The archive entry "${raw}" has an absolute path.`);
  const parts = raw.replace(/^\.\//, "").split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) throw new ArchiveError(`The archive entry "${raw}" climbs out of its directory ("..").`);
  if (parts.length === 0) throw new ArchiveError(`The archive entry "${raw}" has no name.`);
  const top = parts[0];
  if (opts.root !== null && top !== opts.root) throw new ArchiveError(`The archive entry "${raw}" is outside the "${opts.root}/" directory.`);
  if (state.root === null) state.root = top;
  else if (state.root !== top) throw new ArchiveError("The archive has more than one top directory.");
  for (const name of opts.forbidNames ?? []) if (parts.includes(name)) throw new ArchiveError(`The archive may not contain "${name}".`);
  return parts.slice(1).join("/");
}

/** Inspect a gzip'd tar held in memory (see the file comment). Throws `ArchiveError` when refused. */
export function inspectTarGz(bytes: Uint8Array, opts: InspectOptions): Promise<Inspection> {
  const maxEntries = opts.maxEntries ?? DEFAULT_LIMITS.maxEntries;
  const maxUnpacked = opts.maxUnpackedBytes ?? DEFAULT_LIMITS.maxUnpackedBytes;
  const maxRatio = opts.maxRatio ?? DEFAULT_LIMITS.maxRatio;
  if (bytes.byteLength < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) return Promise.reject(new ArchiveError("The archive is not gzip-compressed."));

  return new Promise<Inspection>((resolve, reject) => {
    const state = { root: null as string | null };
    const files = new Map<string, Uint8Array>();
    let entries = 0;
    let fileCount = 0;
    let unpacked = 0;
    let failed: Error | null = null;
    let sawEnd = false;

    const parser = new Parser({ strict: true, maxDecompressionRatio: maxRatio, brotli: false, zstd: false });
    const fail = (e: Error) => {
      if (failed) return;
      if (e instanceof ArchiveError) failed = e;
      else if (/decompression ratio/.test(e.message)) failed = new ArchiveError(`The archive expands more than ${maxRatio} times its size when decompressed; refused as a decompression bomb.`);
      else failed = new ArchiveError(`The archive is not a valid gzip'd tar: ${e.message}`);
      parser.abort(failed);
    };

    parser.on("entry", (entry: ReadEntry) => {
      if (failed) return entry.resume();
      try {
        entries++;
        if (entries > maxEntries) throw new ArchiveError(`The archive has more than ${maxEntries} entries.`);
        if (!ALLOWED_TYPES.has(entry.type)) {
          const what = entry.type === "SymbolicLink" ? "a symbolic link" : entry.type === "Link" ? "a hard link" : `an entry of type ${entry.type}`;
          throw new ArchiveError(`The archive entry "${entry.path}" is ${what}; only files and directories are allowed.`);
        }
        const rel = checkPath(entry.path, opts, state);
        if (entry.type !== "Directory") fileCount++;
        unpacked += entry.size ?? 0;
        if (unpacked > maxUnpacked) throw new ArchiveError(`The archive unpacks to more than ${maxUnpacked} bytes.`);
        if (entry.type !== "Directory" && opts.collect.includes(rel)) {
          if ((entry.size ?? 0) > COLLECT_CAP) throw new ArchiveError(`"${rel}" in the archive is larger than 1 MiB.`);
          const chunks: Buffer[] = [];
          entry.on("data", (c: Buffer) => chunks.push(c));
          entry.on("end", () => files.set(rel, new Uint8Array(Buffer.concat(chunks))));
          return;
        }
      } catch (e) {
        fail(e as Error);
      }
      entry.resume();
    });
    parser.on("warn", (code: string, message: string) => {
      // Strict mode turns most problems into errors; a bad archive warning is one too.
      if (code === "TAR_BAD_ARCHIVE" || code === "TAR_ENTRY_INVALID" || code === "TAR_ENTRY_ERROR") fail(new Error(message));
    });
    parser.on("error", (e: Error) => fail(e));
    parser.on("abort", (e: Error) => fail(e));
    parser.on("end", () => {
      sawEnd = true;
    });
    parser.on("close", () => finish());
    const finish = () => {
      if (failed) return reject(failed);
      if (!sawEnd) return;
      if (state.root === null) return reject(new ArchiveError("The archive is empty."));
      resolve({ root: state.root, entries, fileCount, unpackedBytes: unpacked, files });
    };

    try {
      for (let off = 0; off < bytes.byteLength && !failed; off += FEED_CHUNK) parser.write(Buffer.from(bytes.buffer, bytes.byteOffset + off, Math.min(FEED_CHUNK, bytes.byteLength - off)));
      if (!failed) parser.end();
      else reject(failed);
    } catch (e) {
      fail(e as Error);
      reject(failed ?? e);
    }
  });
}
