/**
 * Unpacking an image's layers into a root directory the process runtime binds into its sandbox:
 * `run/images/sha256-<hex>/`, once per digest. Layers are applied in order (gzip, zstd or plain
 * tar, recognised by their bytes), with OCI whiteouts honoured: `.wh.<name>` removes `<name>` of
 * the layers below, `.wh..wh..opq` empties its directory of everything the layers below put there.
 *
 * Layers are hostile input. Nothing is ever written outside the root, and ops never follows a
 * link the image made while it writes:
 * - a path with `..`, or a NUL, is refused; a leading `/` is dropped (paths are root-relative);
 * - an entry whose parent path goes through a symlink is refused (it would land where the link
 *   points: the classic "symlink, then a file through it" escape);
 * - a symlink whose target leaves the root is refused; an absolute target inside it is rewritten
 *   relative (`/usr/bin/node` from `app/node` becomes `../usr/bin/node`), so it resolves the same
 *   inside the sandbox and stays inside the root when followed on the host;
 * - a hard link must name a regular file already in the root; anything else is refused;
 * - devices and FIFOs are not created; setuid, setgid and sticky bits are dropped; files and
 *   directories are made readable by the sandbox's unprivileged user (owner is whoever runs ops).
 * Refused entries are skipped and reported, not fatal: the image runs without them. A corrupt
 * archive, a layer that does not hash to its digest, or one over the size or entry limits fails
 * the whole unpack and leaves nothing behind: layers go into a temp directory beside the final
 * one, which is renamed into place only when every layer applied (atomic, and idempotent: a root
 * that exists is reused; two processes racing keep whichever rename won).
 */
import { createHash } from "node:crypto";
import { chmodSync, closeSync, existsSync, fchmodSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import { chmod, rename } from "node:fs/promises";
import path from "node:path";
import { Parser, type ReadEntry } from "tar";
import { dirMode, fileMode, imageRoot, safeLinkTarget, safeParts, UnpackError, writeFully } from "./unpack-paths";

export { imageRoot, safeLinkTarget, safeParts, UnpackError } from "./unpack-paths";

export interface LayerSource {
  digest: string;
  mediaType: string;
  /** The layer's bytes as stored (compressed or not). */
  open(): Blob | ReadableStream<Uint8Array>;
}

export interface UnpackLimits {
  /** Sum of file sizes across all layers (default 8 GiB). */
  maxBytes?: number;
  /** Entries across all layers (default 500,000). */
  maxEntries?: number;
}

export interface Refusal {
  layer: string;
  path: string;
  reason: string;
}

export interface UnpackResult {
  root: string;
  /** False when the root already existed (nothing was read). */
  created: boolean;
  /** Entries skipped as unsafe, when this call unpacked them. */
  refused: Refusal[];
}


const DEFAULT_MAX_BYTES = 8 * 1024 ** 3;
const DEFAULT_MAX_ENTRIES = 500_000;
const STALE_TEMP_MS = 60 * 60 * 1000;
const WHITEOUT = ".wh.";
const OPAQUE = ".wh..wh..opq";

class Refused extends Error {}


/*
 * The filesystem work is synchronous: an image of thousands of small files (a node_modules) is
 * thousands of stat, open, write, chmod and close calls, and each async call is a trip through the
 * thread pool that costs more than the call. The event loop still gets a turn between the chunks
 * of the layer as they are read. Parents already checked as real directories in this unpack are
 * remembered (`dirs`) and forgotten as soon as anything at or under them is removed, so the
 * "no parent is a symlink" rule holds for every entry.
 */
function lstatOrNull(p: string) {
  return lstatSync(p, { throwIfNoEntry: false }) ?? null;
}

/** Forget `p` and everything under it from the checked directories. */
function forget(s: Pick<LayerState, "dirs">, p: string): void {
  const prefix = `${p}/`;
  for (const d of s.dirs) if (d === p || d.startsWith(prefix)) s.dirs.delete(d);
}

/** Make sure every parent of `parts` is a real directory in the root (created when missing). */
function ensureParents(s: Pick<LayerState, "root" | "dirs">, parts: string[], create: boolean): boolean {
  let cur = s.root;
  for (const seg of parts.slice(0, -1)) {
    cur = path.join(cur, seg);
    if (s.dirs.has(cur)) continue;
    const st = lstatOrNull(cur);
    if (!st) {
      if (!create) return false;
      mkdirSync(cur, { mode: 0o755 });
      s.dirs.add(cur);
      continue;
    }
    if (st.isSymbolicLink()) throw new Refused(`its parent ${path.relative(s.root, cur)} is a symlink`);
    if (!st.isDirectory()) throw new Refused(`its parent ${path.relative(s.root, cur)} is not a directory`);
    s.dirs.add(cur);
  }
  return true;
}

/** Remove whatever is at `p` (a link is removed, never followed). */
function clear(s: Pick<LayerState, "dirs">, p: string): void {
  const st = lstatOrNull(p);
  if (!st) return;
  if (st.isDirectory()) {
    forget(s, p);
    rmSync(p, { recursive: true, force: true });
  } else unlinkSync(p);
}

interface LayerState {
  root: string;
  layer: string;
  /** Paths (and their parents) this layer wrote: whiteouts never remove them. */
  written: Set<string>;
  refused: Refusal[];
  budget: { bytes: number; entries: number };
  /** Absolute paths checked (or made) as real directories, not links (see above). */
  dirs: Set<string>;
  /** Files open for writing (closed when the layer ends, whatever happened). */
  open: Set<number>;
}

function markWritten(s: LayerState, parts: string[]): void {
  for (let i = 1; i <= parts.length; i++) s.written.add(parts.slice(0, i).join("/"));
}

/** Opaque whiteout: remove from `rel` everything this layer did not write, recursing into what it did. */
function clearLower(s: LayerState, rel: string): void {
  const abs = path.join(s.root, rel);
  const st = lstatOrNull(abs);
  if (!st || !st.isDirectory()) return;
  for (const name of readdirSync(abs)) {
    const childRel = rel === "" ? name : `${rel}/${name}`;
    if (!s.written.has(childRel)) clear(s, path.join(abs, name));
    else {
      const cst = lstatSync(path.join(abs, name));
      if (cst.isDirectory()) clearLower(s, childRel);
    }
  }
}

/**
 * Turn one tar entry into filesystem work. Called synchronously by the parser, in archive order;
 * the work goes into `enqueue`, which runs it in that order.
 */
function onEntry(s: LayerState, entry: ReadEntry, enqueue: (fn: () => Promise<void>) => void, limits: Required<UnpackLimits>): void {
  const refuse = (reason: string) => {
    s.refused.push({ layer: s.layer, path: entry.path, reason });
    entry.resume();
  };
  if (--s.budget.entries < 0) throw new UnpackError(`the image has more than ${limits.maxEntries} entries`);
  const parts = safeParts(entry.path);
  if (parts === null) return refuse("the path leaves the image root (..)");
  if (parts.length === 0) return void entry.resume();
  const name = parts[parts.length - 1];
  const abs = path.join(s.root, ...parts);
  const guarded = (fn: () => Promise<void>) =>
    enqueue(async () => {
      try {
        await fn();
      } catch (e) {
        if (e instanceof Refused) s.refused.push({ layer: s.layer, path: entry.path, reason: e.message });
        else throw e;
      }
    });

  if (name.startsWith(WHITEOUT)) {
    entry.resume();
    const dirParts = parts.slice(0, -1);
    if (name === OPAQUE) {
      return guarded(async () => {
        if (ensureParents(s, [...dirParts, "x"], false)) clearLower(s, dirParts.join("/"));
      });
    }
    const target = name.slice(WHITEOUT.length);
    if (target === "" || target.startsWith(WHITEOUT)) return refuse("an unsupported whiteout");
    const targetRel = [...dirParts, target].join("/");
    return guarded(async () => {
      if (s.written.has(targetRel)) return;
      if (ensureParents(s, [...dirParts, target], false)) clear(s, path.join(s.root, ...dirParts, target));
    });
  }

  switch (entry.type) {
    case "Directory":
    case "GNUDumpDir": {
      entry.resume();
      markWritten(s, parts);
      return guarded(async () => {
        ensureParents(s, parts, true);
        const st = lstatOrNull(abs);
        if (st && !st.isDirectory()) unlinkSync(abs);
        if (!st || !st.isDirectory()) mkdirSync(abs, { mode: 0o755 });
        chmodSync(abs, dirMode(entry.mode));
        s.dirs.add(abs);
      });
    }
    case "File":
    case "OldFile":
    case "ContiguousFile": {
      s.budget.bytes -= entry.size;
      if (s.budget.bytes < 0) throw new UnpackError(`the image unpacks to more than ${limits.maxBytes} bytes`);
      markWritten(s, parts);
      let fd: number | null = null;
      let skip = false;
      guarded(async () => {
        try {
          ensureParents(s, parts, true);
        } catch (e) {
          skip = true;
          throw e;
        }
        clear(s, abs);
        // "wx": O_CREAT|O_EXCL, which never follows a link someone left at the path.
        fd = openSync(abs, "wx", 0o600);
        s.open.add(fd);
      });
      entry.on("data", (chunk: Buffer) => {
        const copy = Buffer.from(chunk);
        enqueue(async () => {
          if (!skip && fd !== null) writeFully(fd, copy);
        });
      });
      // The parser ends an entry before it starts the next, so this runs after its last write.
      entry.on("end", () =>
        enqueue(async () => {
          if (fd === null) return;
          fchmodSync(fd, fileMode(entry.mode));
          s.open.delete(fd);
          closeSync(fd);
          fd = null;
        }),
      );
      return;
    }
    case "SymbolicLink": {
      entry.resume();
      const target = safeLinkTarget(parts, entry.linkpath ?? "");
      if (target === null) return refuse(`the symlink points outside the image root (${entry.linkpath})`);
      markWritten(s, parts);
      return guarded(async () => {
        ensureParents(s, parts, true);
        clear(s, abs);
        symlinkSync(target, abs);
      });
    }
    case "Link": {
      entry.resume();
      const targetParts = safeParts(entry.linkpath ?? "");
      if (targetParts === null || targetParts.length === 0) return refuse(`the hard link points outside the image root (${entry.linkpath})`);
      markWritten(s, parts);
      return guarded(async () => {
        ensureParents(s, targetParts, false);
        const st = lstatOrNull(path.join(s.root, ...targetParts));
        if (!st || !st.isFile()) throw new Refused(`the hard link's target ${targetParts.join("/")} is not a file in the image`);
        ensureParents(s, parts, true);
        clear(s, abs);
        linkSync(path.join(s.root, ...targetParts), abs);
      });
    }
    default:
      return refuse(`${entry.type} entries are not unpacked`);
  }
}

function streamOf(src: Blob | ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  return src instanceof ReadableStream ? src : (src.stream() as ReadableStream<Uint8Array>);
}

/** Apply one layer onto `root`, checking that its bytes hash to its digest. */
async function applyLayer(root: string, layer: LayerSource, refused: Refusal[], budget: LayerState["budget"], limits: Required<UnpackLimits>): Promise<void> {
  const s: LayerState = { root, layer: layer.digest, written: new Set(), refused, budget, dirs: new Set(), open: new Set() };
  let failure: unknown = null;
  let chain: Promise<void> = Promise.resolve();
  const enqueue = (fn: () => Promise<void>) => {
    chain = chain.then(async () => {
      if (failure === null) await fn();
    }).catch((e) => {
      failure ??= e;
    });
  };
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      try {
        onEntry(s, entry, enqueue, limits);
      } catch (e) {
        failure ??= e;
        entry.resume();
      }
    },
  });
  const ended = new Promise<void>((resolve) => {
    parser.on("end", () => resolve());
    parser.on("close", () => resolve());
  });
  parser.on("error", (e: unknown) => {
    failure ??= e;
  });
  const settled = Promise.race([ended, new Promise<void>((resolve) => parser.on("error", () => resolve()))]);

  const hash = createHash("sha256");
  const reader = streamOf(layer.open()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hash.update(value);
      parser.write(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      await chain;
      if (failure !== null) break;
    }
    if (failure === null) {
      parser.end();
      await settled;
      await chain;
    }
  } finally {
    reader.releaseLock();
    // A layer that failed half-way leaves no descriptor open.
    for (const fd of s.open) closeSync(fd);
    s.open.clear();
  }
  if (failure !== null) {
    const msg = failure instanceof Error ? failure.message : String(failure);
    throw failure instanceof UnpackError ? failure : new UnpackError(`layer ${layer.digest}: ${msg}`);
  }
  const actual = `sha256:${hash.digest("hex")}`;
  if (actual !== layer.digest) throw new UnpackError(`layer ${layer.digest}: its bytes hash to ${actual}`);
}

/** Remove temp dirs an interrupted unpack left behind (older than an hour: not a live one). */
function sweepStaleTemps(imagesDir: string, now: number): void {
  for (const name of readdirSync(imagesDir)) {
    if (!name.startsWith(".tmp-")) continue;
    const p = path.join(imagesDir, name);
    try {
      if (now - statSync(p).mtimeMs > STALE_TEMP_MS) rmSync(p, { recursive: true, force: true });
    } catch {
      // Another process removed or renamed it.
    }
  }
}

const inFlight = new Map<string, Promise<UnpackResult>>();

/**
 * Unpack `layers` (lowest first) for image `digest` under `imagesDir`, once: the existing root is
 * returned as is. Concurrent calls for one digest in this process share one unpack.
 */
export function unpackImage(imagesDir: string, digest: string, layers: LayerSource[], limits: UnpackLimits = {}): Promise<UnpackResult> {
  const root = imageRoot(imagesDir, digest);
  if (existsSync(root)) return Promise.resolve({ root, created: false, refused: [] });
  const running = inFlight.get(root);
  if (running) return running;
  const work = (async (): Promise<UnpackResult> => {
    const all: Required<UnpackLimits> = { maxBytes: limits.maxBytes ?? DEFAULT_MAX_BYTES, maxEntries: limits.maxEntries ?? DEFAULT_MAX_ENTRIES };
    mkdirSync(imagesDir, { recursive: true, mode: 0o755 });
    sweepStaleTemps(imagesDir, Date.now());
    const temp = path.join(imagesDir, `.tmp-${path.basename(root)}-${crypto.randomUUID()}`);
    mkdirSync(temp, { mode: 0o755 });
    const refused: Refusal[] = [];
    const budget = { bytes: all.maxBytes, entries: all.maxEntries };
    try {
      for (const layer of layers) await applyLayer(temp, layer, refused, budget, all);
      await chmod(temp, 0o755);
      writeFileSync(`${temp}.json`, JSON.stringify({ digest, layers: layers.map((l) => l.digest), refused }, null, 2));
      try {
        await rename(temp, root);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== "ENOTEMPTY" && code !== "EEXIST") throw e;
        // Another process finished first: its root is as good as ours.
        rmSync(temp, { recursive: true, force: true });
        rmSync(`${temp}.json`, { force: true });
        return { root, created: false, refused: [] };
      }
      await rename(`${temp}.json`, `${root}.json`);
      return { root, created: true, refused };
    } catch (e) {
      rmSync(temp, { recursive: true, force: true });
      rmSync(`${temp}.json`, { force: true });
      throw e;
    }
  })().finally(() => inFlight.delete(root));
  inFlight.set(root, work);
  return work;
}
