/**
 * Content-addressed blob store. Every blob is named by the lowercase hex SHA-256 of its bytes and
 * lives at `blobs/sha256/<ab>/<hex>`. A write streams into a temp file under `blobs/tmp/` while
 * hashing, fsyncs it, then renames it into place and fsyncs the directory that holds the new name
 * (and, for a new shard directory, the one that holds the shard): a crash leaves at most a temp
 * file, never a partial blob under a digest, and `put` resolves only once the blob would survive
 * one. Writes are deduplicated (same bytes, one file); bytes already in memory are hashed first,
 * so a blob the store has is not written again.
 *
 * Every wait for the disk is asynchronous, so several `put`s started together overlap their
 * fsyncs: on ext4 fsyncs that overlap share journal commits instead of taking one each.
 *
 * `BlobStore` is the interface the rest of ops uses, so an S3 implementation can stand in later.
 */
import { mkdirSync, existsSync, statSync, readdirSync, rmSync, renameSync, unlinkSync } from "node:fs";
import { open as openAsync } from "node:fs/promises";
import path from "node:path";
import { OpsError } from "../errors";

export interface PutResult {
  /** Lowercase hex SHA-256, no `sha256:` prefix. */
  digest: string;
  size: number;
  /** False when the store already had these bytes. */
  created: boolean;
}

export interface PutOptions {
  /** Refuse (and keep nothing) unless the bytes hash to this digest. */
  expectDigest?: string;
  /** Refuse (413) beyond this many bytes; nothing is kept. */
  maxBytes?: number;
}

export type BlobSource = ReadableStream<Uint8Array> | Uint8Array | ArrayBuffer | Blob | string;

export interface BlobStore {
  put(source: BlobSource, opts?: PutOptions): Promise<PutResult>;
  has(digest: string): Promise<boolean>;
  size(digest: string): Promise<number | null>;
  /** A lazily read file-like handle, or null. Responses can return it directly. */
  open(digest: string): Blob | null;
  delete(digest: string): Promise<boolean>;
  /** Every digest stored (for garbage collection). */
  list(): AsyncIterable<string>;
  /** Remove temp files older than `olderThanMs` (left by crashes). Returns how many. */
  sweepTemp(olderThanMs: number, nowMs: number): number;
}

const HEX64 = /^[0-9a-f]{64}$/;

export function isDigest(s: string): boolean {
  return HEX64.test(s);
}

/** Hash a byte array (lowercase hex SHA-256). */
export function sha256Hex(bytes: Uint8Array | string): string {
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}

async function* chunksOf(source: BlobSource): AsyncIterable<Uint8Array> {
  if (typeof source === "string") {
    yield new TextEncoder().encode(source);
  } else if (source instanceof Uint8Array) {
    yield source;
  } else if (source instanceof ArrayBuffer) {
    yield new Uint8Array(source);
  } else if (source instanceof Blob) {
    yield* chunksOf(source.stream());
  } else {
    const reader = source.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (value && value.byteLength) yield value;
      }
    } finally {
      reader.releaseLock();
    }
  }
}

/** The local-disk implementation rooted at `<dataDir>/blobs`. */
export class FsBlobStore implements BlobStore {
  private readonly root: string;
  private readonly tmp: string;

  constructor(root: string) {
    this.root = root;
    this.tmp = path.join(root, "tmp");
    mkdirSync(path.join(root, "sha256"), { recursive: true });
    mkdirSync(this.tmp, { recursive: true });
  }

  pathOf(digest: string): string {
    if (!isDigest(digest)) throw new OpsError("bad_request", "Not a sha256 digest.");
    return path.join(this.root, "sha256", digest.slice(0, 2), digest);
  }

  async put(source: BlobSource, opts: PutOptions = {}): Promise<PutResult> {
    const inMemory = bytesOf(source);
    // Bytes in memory are hashed before anything is written: refused ones leave nothing behind,
    // and ones the store already has are not written again.
    const known = inMemory ? sha256Hex(inMemory) : null;
    if (inMemory && known) {
      if (opts.maxBytes !== undefined && inMemory.byteLength > opts.maxBytes) {
        throw new OpsError("payload_too_large", `The upload is larger than the limit of ${opts.maxBytes} bytes.`);
      }
      if (opts.expectDigest !== undefined && opts.expectDigest.toLowerCase() !== known) {
        throw new OpsError("bad_request", "The content does not match its declared digest.", { expected: opts.expectDigest, actual: known });
      }
      if (existsSync(this.pathOf(known))) return { digest: known, size: inMemory.byteLength, created: false };
    }
    const tmpFile = path.join(this.tmp, `${crypto.randomUUID()}.part`);
    const hasher = known ? null : new Bun.CryptoHasher("sha256");
    let size = 0;
    const fh = await openAsync(tmpFile, "wx", 0o600);
    let ok = false;
    try {
      for await (const chunk of inMemory ? [inMemory] : chunksOf(source)) {
        size += chunk.byteLength;
        if (opts.maxBytes !== undefined && size > opts.maxBytes) {
          throw new OpsError("payload_too_large", `The upload is larger than the limit of ${opts.maxBytes} bytes.`);
        }
        hasher?.update(chunk);
        let off = 0;
        while (off < chunk.byteLength) {
          const { bytesWritten } = await fh.write(chunk, off, chunk.byteLength - off);
          off += bytesWritten;
        }
      }
      await fh.sync();
      ok = true;
    } finally {
      await fh.close();
      if (!ok) rmSync(tmpFile, { force: true });
    }
    const digest = known ?? hasher!.digest("hex");
    if (opts.expectDigest !== undefined && opts.expectDigest.toLowerCase() !== digest) {
      rmSync(tmpFile, { force: true });
      throw new OpsError("bad_request", "The content does not match its declared digest.", { expected: opts.expectDigest, actual: digest });
    }
    const final = this.pathOf(digest);
    if (existsSync(final)) {
      rmSync(tmpFile, { force: true });
      return { digest, size, created: false };
    }
    const dir = path.dirname(final);
    // A shard directory made now is itself a new name in its parent, to be made durable too.
    const madeShard = mkdirSync(dir, { recursive: true }) !== undefined;
    renameSync(tmpFile, final);
    await Promise.all([fsyncDir(dir), madeShard ? fsyncDir(path.dirname(dir)) : null]);
    return { digest, size, created: true };
  }

  async has(digest: string): Promise<boolean> {
    return isDigest(digest) && existsSync(this.pathOf(digest));
  }

  async size(digest: string): Promise<number | null> {
    if (!isDigest(digest)) return null;
    try {
      return statSync(this.pathOf(digest)).size;
    } catch {
      return null;
    }
  }

  open(digest: string): Blob | null {
    if (!isDigest(digest)) return null;
    const p = this.pathOf(digest);
    return existsSync(p) ? Bun.file(p) : null;
  }

  async delete(digest: string): Promise<boolean> {
    if (!isDigest(digest)) return false;
    try {
      unlinkSync(this.pathOf(digest));
      return true;
    } catch {
      return false;
    }
  }

  async *list(): AsyncIterable<string> {
    const base = path.join(this.root, "sha256");
    for (const shard of readdirSync(base)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of readdirSync(path.join(base, shard))) if (isDigest(name)) yield name;
    }
  }

  sweepTemp(olderThanMs: number, nowMs: number): number {
    let n = 0;
    for (const name of readdirSync(this.tmp)) {
      const p = path.join(this.tmp, name);
      try {
        if (nowMs - statSync(p).mtimeMs >= olderThanMs) {
          rmSync(p, { force: true });
          n++;
        }
      } catch {
        // Raced with another sweep or a finishing write: nothing to do.
      }
    }
    return n;
  }
}

/** A source whose bytes are already in memory (hashed before anything is written), else null. */
function bytesOf(source: BlobSource): Uint8Array | null {
  if (typeof source === "string") return new TextEncoder().encode(source);
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  return null;
}

/** Make a rename durable: fsync the directory that holds the new name (off the event loop). */
async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await openAsync(dir, "r");
    await fh.sync();
  } catch {
    // Some filesystems refuse fsync on directories; the file itself is already synced.
  } finally {
    await fh?.close();
  }
}
