/**
 * The `scanning` step: an image's files are searched for secrets that must never ship, and a hit
 * fails the build naming the file and line — never the secret.
 *
 * - the shapes of the shared rule set that block an image (src/core/secret-shapes.ts): ops's own
 *   tokens with a valid checksum (a look-alike is not a token), private-key blocks with a body and
 *   their END line (also JSON-escaped, as in a service-account file; a PEM parser's mention of the
 *   BEGIN line is not a key), and the issuer-prefixed tokens of cloud, code-host and API services;
 * - `.env` files (`.env`, `.env.production` …, not `.env.example`/`.sample`/`.template`/`.dist`)
 *   with at least one variable that has a value.
 *
 * Work is bounded: each file is read in 1 MiB chunks up to `maxFileBytes` (default 32 MiB; files
 * cut short are listed in `partial`), and chunks overlap so a secret across a boundary is still seen.
 *
 * The scan runs as ops (root on a server) over what a build left behind, so it never follows a
 * link: every directory and file is opened with O_NOFOLLOW relative to its already-open parent
 * (through /proc/self/fd, Linux's way to name an open directory), so swapping a path for a link
 * between listing and opening does not lead outside the tree either; only regular files are read,
 * and opening never blocks (O_NONBLOCK: a FIFO put in a file's place is skipped, not waited on).
 */
import { closeSync, constants, fstatSync, openSync, readSync, readdirSync } from "node:fs";
import path from "node:path";
import { findSecrets } from "../../core/secret-redact";

/** A shape id of the shared rule set (`ops-token`, `private-key`, `github-token` …) or `env-file`. */
export type SecretKind = string;

export interface SecretHit {
  /** Path relative to the scanned directory, `/`-separated. */
  path: string;
  /** 1-based line of the hit. */
  line: number;
  kind: SecretKind;
  /** What was found, without the value ("an ops API token (opst_)"). */
  what: string;
}

export interface ScanResult {
  hits: SecretHit[];
  files: number;
  bytes: number;
  /** Files larger than the bound: only their first `maxFileBytes` were scanned. */
  partial: string[];
}

export interface ScanOptions {
  maxFileBytes?: number;
  /** Stop after this many hits (default 50): one is enough to fail a build. */
  maxHits?: number;
}

const CHUNK = 1024 * 1024;
/** Longest secret a chunk boundary could cut: a PEM block of a 4096-bit RSA key with room to spare. */
const OVERLAP = 16 * 1024;
export const DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024;

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY, S_IFMT, S_IFREG } = constants;

/** A dotenv file name that holds real values (not a template of them). */
export function isEnvFile(name: string): boolean {
  if (name !== ".env" && !name.startsWith(".env.")) return false;
  return !/\.(example|sample|template|dist|defaults|schema)$/i.test(name);
}

/** The first line of a dotenv text that assigns a non-empty value, or null. */
function envValueLine(text: string): number | null {
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=\s*(.*?)\s*$/.exec(lines[i].replace(/\r$/, ""));
    if (!m) continue;
    let value = m[1];
    if (value.startsWith("#")) continue;
    if (/^(['"]).*\1$/.test(value)) value = value.slice(1, -1);
    if (value.trim() !== "") return i + 1;
  }
  return null;
}

function lineAt(text: string, index: number, from: number, lineOfFrom: number): number {
  let line = lineOfFrom;
  for (let i = from; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Scan one open regular file's content; hits are pushed into `out`. Returns the bytes read and whether it was cut short. */
async function scanFile(fd: number, rel: string, size: number, maxBytes: number, out: SecretHit[], maxHits: number, buf: Buffer, pause: () => Promise<void>): Promise<{ read: number; partial: boolean }> {
  const seen = new Set<string>();
  const found = (kind: SecretKind, what: string, line: number) => {
    const key = `${kind}:${line}`;
    if (seen.has(key) || out.length >= maxHits) return;
    seen.add(key);
    out.push({ path: rel, line, kind, what });
  };
  let read = 0;
  const limit = Math.min(size, maxBytes);
  let carry = "";
  /** Line number at the start of `carry`. */
  let carryLine = 1;
  let envText = isEnvFile(path.posix.basename(rel)) ? "" : null;
  while (read < limit) {
    await pause();
    const bytesRead = readSync(fd, buf, 0, Math.min(CHUNK, limit - read), read);
    if (bytesRead === 0) break;
    read += bytesRead;
    // latin1 maps each byte to one char: binary-safe, and every secret shape is ASCII.
    const text = carry + buf.toString("latin1", 0, bytesRead);
    if (envText !== null && envText.length < 1024 * 1024) envText += buf.toString("utf8", 0, bytesRead);
    for (const f of findSecrets(text).sort((a, b) => a.index - b.index)) found(f.shape.id, f.what, lineAt(text, f.index, 0, carryLine));
    const keep = read < limit ? Math.max(0, text.length - OVERLAP) : text.length;
    carryLine = lineAt(text, keep, 0, carryLine);
    carry = text.slice(keep);
  }
  if (envText !== null) {
    const line = envValueLine(envText);
    if (line !== null) found("env-file", "a .env file with values", line);
  }
  return { read, partial: size > maxBytes };
}

/** `name` inside the open directory `dirFd`, as a path the kernel resolves from that directory. */
const inDir = (dirFd: number, name: string) => `/proc/self/fd/${dirFd}/${name}`;

/** Open without following a link and without blocking; null when it is a link (or gone). */
function openNoFollow(p: string, flags: number): number | null {
  try {
    return openSync(p, flags | O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    const code = (e as { code?: string }).code;
    // ELOOP: the last component is a link; ENOTDIR: a link (or a file) where a directory was listed.
    if (code === "ELOOP" || code === "ENOTDIR" || code === "ENOENT") return null;
    throw e;
  }
}

/** Scan every file under `dir` (see the file comment). */
export async function scanImageFiles(dir: string, opts: ScanOptions = {}): Promise<ScanResult> {
  const maxFileBytes = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const maxHits = opts.maxHits ?? 50;
  const result: ScanResult = { hits: [], files: 0, bytes: 0, partial: [] };
  // One read buffer for the whole scan (only the bytes read are looked at): a fresh 1 MiB per
  // file was most of the cost of an output with thousands of small files.
  const buf = Buffer.allocUnsafe(CHUNK);
  // Reads are synchronous (an async open, stat, read and close per file cost more than reading
  // it), and the event loop gets a turn every few milliseconds so the server stays responsive.
  let since = performance.now();
  const pause = async () => {
    if (performance.now() - since < 4) return;
    await new Promise((resolve) => setImmediate(resolve));
    since = performance.now();
  };
  const walk = async (dirFd: number, rel: string): Promise<void> => {
    await pause();
    const entries = readdirSync(`/proc/self/fd/${dirFd}`, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (result.hits.length >= maxHits) return;
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        const fd = openNoFollow(inDir(dirFd, e.name), O_DIRECTORY);
        if (fd === null) continue;
        try {
          await walk(fd, childRel);
        } finally {
          closeSync(fd);
        }
      } else if (e.isFile()) {
        const fd = openNoFollow(inDir(dirFd, e.name), 0);
        if (fd === null) continue;
        try {
          // What was opened, not what was listed: a FIFO or device swapped in is skipped.
          const st = fstatSync(fd);
          if ((st.mode & S_IFMT) !== S_IFREG) continue;
          const { read, partial } = await scanFile(fd, childRel, st.size, maxFileBytes, result.hits, maxHits, buf, pause);
          result.files++;
          result.bytes += read;
          if (partial) result.partial.push(childRel);
        } finally {
          closeSync(fd);
        }
      }
    }
  };
  const rootFd = openNoFollow(dir, O_DIRECTORY);
  if (rootFd === null) throw new Error(`${path.basename(dir)} is a symbolic link or not a directory: not scanned`);
  try {
    await walk(rootFd, "");
  } finally {
    closeSync(rootFd);
  }
  return result;
}

/** One sentence for a build's error: the first hit, by file and line, never the value. */
export function describeHits(hits: readonly SecretHit[]): string {
  if (hits.length === 0) return "no secrets found";
  const first = hits[0];
  const more = hits.length > 1 ? ` (and ${hits.length - 1} more)` : "";
  return `${first.path}:${first.line} contains ${first.what}${more}; secrets must not ship in an image`;
}
