/**
 * The `scanning` step: an image's files are searched for secrets that must never ship, and a hit
 * fails the build naming the file and line — never the secret.
 *
 * - ops secrets: `opss_`, `opst_`, `opsi_`, `opsd_` followed by the 49 base62 characters of the
 *   format in src/core/ids.ts, whose CRC32 checksum must hold (a look-alike is not a token).
 * - private keys: a PEM `… PRIVATE KEY` block with a body and its matching END line, also inside a
 *   JSON or source string where the newlines are written `\n` (a service-account file). A mere
 *   mention of the BEGIN line (a PEM parser's source) is not a key.
 * - `.env` files (`.env`, `.env.production` …, not `.env.example`/`.sample`/`.template`/`.dist`)
 *   with at least one variable that has a value.
 *
 * Work is bounded: each file is read in 1 MiB chunks up to `maxFileBytes` (default 32 MiB; files
 * cut short are listed in `partial`), chunks overlap so a secret across a boundary is still seen,
 * and symlinks are not followed.
 */
import { closeSync, lstatSync, openSync, readSync, readdirSync } from "node:fs";
import path from "node:path";
import { isWellFormedSecret, type SecretPrefix } from "../../core/ids";

export type SecretKind = "ops-token" | "private-key" | "env-file";

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

// No word boundaries: the checksum alone tells a token from chance (1 in 62^6), glued to other text or not.
const TOKEN = /ops[stid]_[0-9A-Za-z]{49}/g;
const PEM = /-----BEGIN ((?:RSA |EC |DSA |OPENSSH |ENCRYPTED |ANY )?PRIVATE KEY)-----(?:\\n|\s)[A-Za-z0-9+/=\s\\:,.-]{64,16384}?-----END \1-----/g;
const TOKEN_NAMES: Record<string, string> = {
  opss_: "an ops session token (opss_)",
  opst_: "an ops API token (opst_)",
  opsi_: "an ops install code (opsi_)",
  opsd_: "an ops device code (opsd_)",
};
const PREFIXES = Object.keys(TOKEN_NAMES) as SecretPrefix[];

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

/** Scan one file's content; hits are pushed into `out`. Returns the bytes read and whether it was cut short. */
async function scanFile(abs: string, rel: string, size: number, maxBytes: number, out: SecretHit[], maxHits: number, buf: Buffer, pause: () => Promise<void>): Promise<{ read: number; partial: boolean }> {
  const fd = openSync(abs, "r");
  const seen = new Set<string>();
  const found = (kind: SecretKind, what: string, line: number) => {
    const key = `${kind}:${line}`;
    if (seen.has(key) || out.length >= maxHits) return;
    seen.add(key);
    out.push({ path: rel, line, kind, what });
  };
  let read = 0;
  try {
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
      for (const m of text.matchAll(TOKEN)) {
        if (isWellFormedSecret(m[0], PREFIXES)) found("ops-token", TOKEN_NAMES[m[0].slice(0, 5)], lineAt(text, m.index, 0, carryLine));
      }
      for (const m of text.matchAll(PEM)) found("private-key", `a private key (${m[1]})`, lineAt(text, m.index, 0, carryLine));
      const keep = read < limit ? Math.max(0, text.length - OVERLAP) : text.length;
      carryLine = lineAt(text, keep, 0, carryLine);
      carry = text.slice(keep);
    }
    if (envText !== null) {
      const line = envValueLine(envText);
      if (line !== null) found("env-file", "a .env file with values", line);
    }
  } finally {
    closeSync(fd);
  }
  return { read, partial: size > maxBytes };
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
  const walk = async (abs: string, rel: string): Promise<void> => {
    await pause();
    const entries = readdirSync(abs, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (result.hits.length >= maxHits) return;
      const childAbs = path.join(abs, e.name);
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(childAbs, childRel);
      else if (e.isFile()) {
        const { size } = lstatSync(childAbs);
        const { read, partial } = await scanFile(childAbs, childRel, size, maxFileBytes, result.hits, maxHits, buf, pause);
        result.files++;
        result.bytes += read;
        if (partial) result.partial.push(childRel);
      }
    }
  };
  await walk(dir, "");
  return result;
}

/** One sentence for a build's error: the first hit, by file and line, never the value. */
export function describeHits(hits: readonly SecretHit[]): string {
  if (hits.length === 0) return "no secrets found";
  const first = hits[0];
  const more = hits.length > 1 ? ` (and ${hits.length - 1} more)` : "";
  return `${first.path}:${first.line} contains ${first.what}${more}; secrets must not ship in an image`;
}
