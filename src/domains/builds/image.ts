/**
 * The OCI image of a native build, written by ops: one gzip tar layer holding the output
 * directory under `/app`, an image config and an image manifest (DESIGN §5). With a base image
 * (image-base.ts, decision 0620) the manifest lists the base's layers first, by digest (they are
 * never packed or uploaded again: the push links them), and the config is the base's with ops's
 * settings over it; the label `dev.ops.runtime` then says `engine` instead of `process`.
 *
 * The same commit gives the same digest: entries are written in sorted order, every entry is owned
 * by 1000:1000 with no user or group names, mtimes are clamped to the commit time (whole seconds),
 * no atime/ctime/device/inode fields are written, setuid/setgid bits are dropped, and gzip's
 * header carries no time. Headers are encoded with the `tar` package's Header and Pax (long names);
 * the archive is streamed from disk through a hash (the diff id) and gzip into a file beside the
 * build, never held in memory. A layer whose tar is a single chunk of the stream (at most 64 KiB)
 * skips the stream: it is compressed in one call, which gives the stream's bytes (a test holds
 * both to it) without the five stages' turns, the most of packing such a layer.
 *
 * Refused (the build fails naming the path): symlinks that lead outside the output directory,
 * absolute ones other than into the host trees every sandbox binds (/usr, /bin, /lib…: kept as
 * links, they resolve to the host's toolchain inside the sandbox), and anything that is not a file, directory or symlink (FIFOs, sockets, devices).
 * Hard links inside the directory become tar hard links to the first path in sorted order; a file
 * with more links than the directory holds (a hard link to something outside it) is refused, so
 * the packer, which runs as root, never packs a file it reached through a name outside the output.
 * Symlinks are written as links, never as what they name. Files are opened with O_NOFOLLOW and
 * must still be the inode that was listed (DESIGN §6 "Files").
 */
import { closeSync, constants, createReadStream, createWriteStream, fstatSync, lstatSync, openSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { createGzip, gzipSync } from "node:zlib";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import path from "node:path";
import { Header, Pax } from "tar";
import { SANDBOX_GID, SANDBOX_UID } from "../../adapters/builder/sandbox";
import { HOST_TREES } from "../../adapters/sandbox/bwrap";
import type { PushBlob } from "../registries/service";
import { mergedEnv, type BaseImage, type BaseLayer } from "./image-base";

/** True for an absolute, `..`-free path inside a host tree every sandbox binds read-only (/usr, /bin, /lib…). */
export function isHostToolchainPath(target: string): boolean {
  const norm = path.posix.normalize(target);
  return HOST_TREES.some((tree) => norm === tree || norm.startsWith(`${tree}/`));
}

export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
export const OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip";

/** Where the output directory lives in the image; the config's WorkingDir. */
export const IMAGE_APP_DIR = "app";

export const LABEL_REVISION = "org.opencontainers.image.revision";
export const LABEL_SOURCE = "org.opencontainers.image.source";
export const LABEL_RUNTIME = "dev.ops.runtime";
/** The base an image was built on, `<repository>@<digest>` (decision 0620). */
export const LABEL_BASE = "dev.ops.base";
/** `dev.ops.runtime` of an image that needs the host's toolchains (no base) and of one that carries its system. */
export const RUNTIME_PROCESS = "process";
export const RUNTIME_ENGINE = "engine";

/** An output directory that cannot become an image (the message names the path). */
export class ImageRefused extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = "ImageRefused";
  }
}

export interface ImageSpec {
  /** The directory packed under /app. */
  outputDir: string;
  /** The layer file is written here (created; overwritten). */
  layerFile: string;
  /** The image's command: `Cmd: [start]` after `Entrypoint: ["/bin/sh","-c"]`. */
  start: string;
  port: number;
  commit: string;
  /** Commit time, epoch ms: the clamp for mtimes and the image's `created`. */
  commitTime: number;
  /** The repository the commit came from (`org.opencontainers.image.source`). */
  source: string;
  /** The image the app's layer goes on (image-base.ts); none: the image runs on the host's toolchains. */
  base?: BaseImage | null;
}

export interface Blob {
  digest: string;
  size: number;
}

export interface PackedImage {
  layer: Blob & { file: string; diffId: string; mediaType: string };
  config: Blob & { bytes: Uint8Array; mediaType: string };
  manifest: Blob & { bytes: Uint8Array; mediaType: string };
  /** Entries in the layer (directories included). */
  entries: number;
  /** The base's repository and layers under the app's layer; null without a base. */
  base: { repository: string; digest: string; layers: BaseLayer[] } | null;
}

/**
 * A packed image's blobs as the registry takes them: the layer streamed from its file, the config
 * from memory, and a base's layers linked from the base's repository (never read or stored again).
 */
export function packedBlobs(image: PackedImage): PushBlob[] {
  return [
    ...(image.base?.layers ?? []).map((l): PushBlob => ({ digest: l.digest, size: l.size, source: { mount: image.base!.repository } })),
    { digest: image.layer.digest, size: image.layer.size, source: { file: image.layer.file } },
    { digest: image.config.digest, size: image.config.size, source: { bytes: image.config.bytes } },
  ];
}

interface Entry {
  /** Path relative to the output dir, `/`-separated; "" is the directory itself. */
  rel: string;
  abs: string;
  type: "File" | "Directory" | "SymbolicLink" | "Link";
  mode: number;
  size: number;
  mtimeSec: number;
  linkpath?: string;
  /** `dev:ino` and link count of a file, to check hard links and that the file read is the one listed. */
  inode?: string;
  nlink?: number;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Every entry of `dir`, depth first in sorted order, checked (see the file comment). */
function listEntries(dir: string, clampSec: number): Entry[] {
  const out: Entry[] = [];
  const inodes = new Map<string, string>();
  /** Names of each multiply-linked inode found inside the directory. */
  const links = new Map<string, number>();
  const visit = (abs: string, rel: string) => {
    const st = lstatSync(abs);
    const mtimeSec = Math.min(Math.floor(st.mtimeMs / 1000), clampSec);
    const mode = st.mode & 0o1777;
    const shown = rel === "" ? "." : rel;
    if (st.isDirectory()) {
      out.push({ rel, abs, type: "Directory", mode, size: 0, mtimeSec });
      for (const name of readdirSync(abs).sort(byName)) visit(path.join(abs, name), rel === "" ? name : `${rel}/${name}`);
    } else if (st.isSymbolicLink()) {
      const target = readlinkSync(abs);
      // A link into the host's toolchain (`.venv/bin/python3 -> /usr/bin/python3`) resolves in the sandbox (docs/decisions/0364).
      if (path.isAbsolute(target) && !isHostToolchainPath(target)) throw new ImageRefused(`the symlink ${shown} points to the absolute path ${target}; only links inside the output directory or into the host's ${HOST_TREES.join(", ")} can be packed (docs/guide/recipes.md)`, shown);
      if (path.isAbsolute(target)) {
        out.push({ rel, abs, type: "SymbolicLink", mode: 0o777, size: 0, mtimeSec, linkpath: target });
        return;
      }
      const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(rel), target));
      if (resolved === ".." || resolved.startsWith("../")) throw new ImageRefused(`the symlink ${shown} points outside the output directory (${target})`, shown);
      out.push({ rel, abs, type: "SymbolicLink", mode: 0o777, size: 0, mtimeSec, linkpath: target });
    } else if (st.isFile()) {
      const key = `${st.dev}:${st.ino}`;
      const first = st.nlink > 1 ? inodes.get(key) : undefined;
      if (st.nlink > 1) links.set(key, (links.get(key) ?? 0) + 1);
      if (first !== undefined) {
        out.push({ rel, abs, type: "Link", mode, size: 0, mtimeSec, linkpath: `${IMAGE_APP_DIR}/${first}`, inode: key, nlink: st.nlink });
      } else {
        if (st.nlink > 1) inodes.set(key, rel);
        out.push({ rel, abs, type: "File", mode, size: st.size, mtimeSec, inode: key, nlink: st.nlink });
      }
    } else {
      const kind = st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : "a device";
      throw new ImageRefused(`${shown} is ${kind}; only files, directories and symlinks can be packed`, shown);
    }
  };
  visit(dir, "");
  for (const e of out) {
    if (e.type !== "File" || e.nlink === undefined || e.nlink <= 1) continue;
    const seen = links.get(e.inode!)!;
    if (seen < e.nlink) throw new ImageRefused(`${e.rel} is a hard link to a file outside the output directory (${e.nlink} links, ${seen} inside it); only hard links inside the output can be packed`, e.rel);
  }
  return out;
}

function headerBlocks(e: Entry): Buffer[] {
  const name = e.rel === "" ? `${IMAGE_APP_DIR}/` : `${IMAGE_APP_DIR}/${e.rel}${e.type === "Directory" ? "/" : ""}`;
  const mtime = new Date(e.mtimeSec * 1000);
  const header = new Header({ path: name, mode: e.mode, uid: SANDBOX_UID, gid: SANDBOX_GID, size: e.size, mtime, type: e.type, linkpath: e.linkpath ?? "", uname: "", gname: "" });
  const blocks: Buffer[] = [];
  if (header.encode()) blocks.push(new Pax({ path: name, linkpath: e.linkpath, mtime }).encode());
  blocks.push(header.block!);
  return blocks;
}

/** Files up to this size are read whole; larger ones are streamed. */
const SMALL_FILE = 1024 * 1024;

/**
 * Chunks of at least 64 KiB: a tar of many small files is thousands of headers, paddings and
 * file bodies, and every chunk costs a trip through each stage of the pipeline.
 */
async function* coalesced(chunks: AsyncGenerator<Buffer>): AsyncGenerator<Buffer> {
  const MIN = 64 * 1024;
  let parts: Buffer[] = [];
  let bytes = 0;
  for await (const c of chunks) {
    if (bytes === 0 && c.length >= MIN) {
      yield c;
      continue;
    }
    parts.push(c);
    bytes += c.length;
    if (bytes >= MIN) {
      yield Buffer.concat(parts, bytes);
      parts = [];
      bytes = 0;
    }
  }
  if (bytes > 0) yield Buffer.concat(parts, bytes);
}

/**
 * Open a listed file without following a link (O_NOFOLLOW; O_NONBLOCK so a FIFO swapped in cannot
 * hang the packer) and check it is still the inode that was listed.
 */
function openListed(e: Entry): number {
  let fd: number;
  try {
    fd = openSync(e.abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new ImageRefused(`${e.rel} became a symlink while it was being packed`, e.rel);
    throw err;
  }
  const st = fstatSync(fd);
  if (!st.isFile() || `${st.dev}:${st.ino}` !== e.inode) {
    closeSync(fd);
    throw new ImageRefused(`${e.rel} was replaced while it was being packed`, e.rel);
  }
  return fd;
}

/** The uncompressed tar stream of the entries. */
async function* tarStream(entries: Entry[]): AsyncGenerator<Buffer> {
  for (const e of entries) {
    for (const b of headerBlocks(e)) yield b;
    if (e.type !== "File" || e.size === 0) continue;
    const fd = openListed(e);
    if (e.size <= SMALL_FILE) {
      // Most files of an output (node_modules) are small: one read each, no stream per file.
      let bytes: Buffer;
      try {
        bytes = readFileSync(fd);
      } finally {
        closeSync(fd);
      }
      if (bytes.length > e.size) throw new ImageRefused(`${e.rel} grew while it was being packed`, e.rel);
      if (bytes.length < e.size) throw new ImageRefused(`${e.rel} shrank while it was being packed`, e.rel);
      yield bytes;
      const pad = (512 - (e.size % 512)) % 512;
      if (pad > 0) yield Buffer.alloc(pad);
      continue;
    }
    let read = 0;
    for await (const chunk of createReadStream("", { fd }) as AsyncIterable<Buffer>) {
      read += chunk.length;
      if (read > e.size) throw new ImageRefused(`${e.rel} grew while it was being packed`, e.rel);
      yield chunk;
    }
    if (read !== e.size) throw new ImageRefused(`${e.rel} shrank while it was being packed`, e.rel);
    const pad = (512 - (e.size % 512)) % 512;
    if (pad > 0) yield Buffer.alloc(pad);
  }
  yield Buffer.alloc(1024);
}

function hashing(hash: ReturnType<typeof createHash>, count: { bytes: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      count.bytes += chunk.length;
      cb(null, chunk);
    },
  });
}

const sha256 = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** The layer only: tar of `outputDir` under /app, gzip'd into `layerFile`. */
export async function packLayer(outputDir: string, layerFile: string, clampMs: number, opts: { stream?: boolean } = {}): Promise<PackedImage["layer"] & { entries: number }> {
  const rel = path.relative(outputDir, layerFile);
  if (!rel.startsWith("..") && !path.isAbsolute(rel)) throw new Error("the layer file must be written outside the directory it packs");
  const entries = listEntries(outputDir, Math.floor(clampMs / 1000));
  const chunks = coalesced(tarStream(entries));
  const first = await chunks.next();
  const second = first.done ? first : await chunks.next();
  if (second.done && !opts.stream) {
    const tar = first.done ? Buffer.alloc(0) : first.value;
    const gz = gzipSync(tar, { level: 6 });
    writeFileSync(layerFile, gz, { mode: 0o600 });
    return { file: layerFile, digest: sha256(gz), size: gz.byteLength, diffId: sha256(tar), mediaType: OCI_LAYER_GZIP, entries: entries.length };
  }
  async function* all(): AsyncGenerator<Buffer> {
    for (const peeked of [first, second]) if (!peeked.done) yield peeked.value;
    if (!second.done) yield* chunks;
  }
  const tarHash = createHash("sha256");
  const gzHash = createHash("sha256");
  const tarCount = { bytes: 0 };
  const gzCount = { bytes: 0 };
  await pipeline(Readable.from(all()), hashing(tarHash, tarCount), createGzip({ level: 6 }), hashing(gzHash, gzCount), createWriteStream(layerFile, { mode: 0o600 }));
  return {
    file: layerFile,
    digest: `sha256:${gzHash.digest("hex")}`,
    size: gzCount.bytes,
    diffId: `sha256:${tarHash.digest("hex")}`,
    mediaType: OCI_LAYER_GZIP,
    entries: entries.length,
  };
}

function ociArchitecture(): string {
  const arch = process.arch;
  return arch === "x64" ? "amd64" : arch === "ia32" ? "386" : arch;
}

/**
 * Pack a native build's image (see the file comment). Throws ImageRefused for an output directory
 * that cannot be packed; the layer is a file, the config and manifest are small byte arrays.
 */
export async function packImage(spec: ImageSpec): Promise<PackedImage> {
  if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65535) throw new Error(`port ${spec.port} is not a TCP port`);
  if (spec.start.trim() === "") throw new Error("an image needs a start command");
  const layer = await packLayer(spec.outputDir, spec.layerFile, spec.commitTime);
  const created = new Date(Math.floor(spec.commitTime / 1000) * 1000).toISOString();
  const base = spec.base ?? null;
  const labels: Record<string, string> = { [LABEL_REVISION]: spec.commit, [LABEL_SOURCE]: spec.source, [LABEL_RUNTIME]: base ? RUNTIME_ENGINE : RUNTIME_PROCESS, ...(base ? { [LABEL_BASE]: `${base.repository}@${base.digest}` } : {}) };
  const own = {
    User: `${SANDBOX_UID}:${SANDBOX_GID}`,
    Env: [`PORT=${spec.port}`],
    Entrypoint: ["/bin/sh", "-c"],
    Cmd: [spec.start],
    WorkingDir: `/${IMAGE_APP_DIR}`,
    ExposedPorts: { [`${spec.port}/tcp`]: {} },
    Labels: labels,
  };
  const history = { created, created_by: "ops native build", comment: `commit ${spec.commit}` };
  const config = new TextEncoder().encode(
    JSON.stringify({
      created,
      architecture: base?.architecture ?? ociArchitecture(),
      ...(base?.variant ? { variant: base.variant } : {}),
      os: "linux",
      config: base ? onBase(base.config, own) : own,
      rootfs: { type: "layers", diff_ids: [...(base?.diffIds ?? []), layer.diffId] },
      history: [...(base?.history ?? []), history],
    }),
  );
  const configBlob = { bytes: config, digest: sha256(config), size: config.byteLength, mediaType: OCI_CONFIG };
  const baseAnnotations = base ? { "org.opencontainers.image.base.name": base.name, "org.opencontainers.image.base.digest": base.digest } : {};
  const manifest = new TextEncoder().encode(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: OCI_CONFIG, digest: configBlob.digest, size: configBlob.size },
      layers: [...(base?.layers ?? []).map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size })), { mediaType: OCI_LAYER_GZIP, digest: layer.digest, size: layer.size }],
      annotations: { [LABEL_REVISION]: spec.commit, [LABEL_SOURCE]: spec.source, ...baseAnnotations },
    }),
  );
  return {
    layer: { file: layer.file, digest: layer.digest, size: layer.size, diffId: layer.diffId, mediaType: layer.mediaType },
    config: configBlob,
    manifest: { bytes: manifest, digest: sha256(manifest), size: manifest.byteLength, mediaType: OCI_MANIFEST },
    entries: layer.entries,
    base: base ? { repository: base.repository, digest: base.digest, layers: base.layers } : null,
  };
}

/**
 * The base's config with ops's over it (decision 0620): ops decides how the app starts (Entrypoint,
 * Cmd, WorkingDir, its port) and its labels win; the base keeps its environment (its PATH), its
 * user when it names one, its labels and the rest. The base's Healthcheck goes: ops probes health
 * itself, and an engine acting on a base's check would stop replicas ops thinks healthy.
 */
function onBase(base: Record<string, unknown>, own: Record<string, unknown> & { User: string; Env: string[]; Labels: Record<string, string> }): Record<string, unknown> {
  const { Healthcheck: _dropped, ...kept } = base;
  const user = typeof base.User === "string" && base.User !== "" ? base.User : own.User;
  const labels = base.Labels && typeof base.Labels === "object" ? (base.Labels as Record<string, string>) : {};
  return { ...kept, ...own, User: user, Env: mergedEnv(base.Env, own.Env), Labels: { ...labels, ...own.Labels } };
}
