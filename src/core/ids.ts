/**
 * Identifiers. `uuid` fields are UUIDv7 (time-ordered, so they index well and sort by creation).
 * Secrets handed out to clients (`opss_`, `opst_`, `opsi_`, `opsd_`) have their own format: prefix +
 * 32 random bytes in base62 + a 6-character base62 CRC32 checksum, GitHub style, so a scanner can
 * recognise them and a malformed one is rejected without a database read. Only SHA-256 digests of
 * them are stored (`secretDigest`).
 */
import { randomBytes } from "node:crypto";

/** A new UUIDv7, stamped with `nowMs`. */
export function uuidv7(nowMs: number = Date.now()): string {
  return Bun.randomUUIDv7("hex", nowMs);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function toBase62(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

/** CRC-32 (IEEE) of the text's bytes; the secrets are ASCII. */
function crc32(text: string): number {
  return Bun.hash.crc32(text) >>> 0;
}

function checksum(body: string): string {
  let n = crc32(body);
  let out = "";
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export type SecretPrefix = "opss_" | "opst_" | "opsi_" | "opsd_";

/** A new client secret with the given prefix (43 base62 chars of entropy + 6 checksum chars). */
export function newSecret(prefix: SecretPrefix): string {
  const body = toBase62(randomBytes(32)).padStart(43, "0");
  return `${prefix}${body}${checksum(prefix + body)}`;
}

/** True when `s` has the shape and checksum of a secret with one of `prefixes`. No DB read. */
export function isWellFormedSecret(s: string, prefixes: readonly SecretPrefix[]): boolean {
  const prefix = s.slice(0, 5) as SecretPrefix;
  if (!prefixes.includes(prefix)) return false;
  const rest = s.slice(5);
  if (rest.length !== 49 || !/^[0-9A-Za-z]+$/.test(rest)) return false;
  return checksum(prefix + rest.slice(0, 43)) === rest.slice(43);
}

/** Lowercase hex SHA-256 of a secret: what the database stores instead of the secret. */
export function secretDigest(secret: string): string {
  return Bun.CryptoHasher.hash("sha256", secret, "hex");
}
