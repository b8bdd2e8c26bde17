/**
 * Backup encryption with `--passphrase-file`, on node:crypto (the runtime's OpenSSL/BoringSSL):
 * scrypt turns the passphrase into a key-encryption key, which wraps a random 32-byte data key;
 * every object and the manifest are AES-256-GCM under the data key, each with a fresh 96-bit nonce
 * and its stored name as additional data, so an object cannot be swapped for another unnoticed.
 * A backup place keeps one data key (`keyring.json`), so a later backup with the same passphrase
 * reuses it and stores only new objects; encrypted objects are named by an HMAC of their SHA-256
 * under the data key, so the names say nothing about the contents (docs/decisions/0381).
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, scrypt as scryptCb } from "node:crypto";
import { open } from "node:fs/promises";
import { OpsError } from "../../core/errors";

export interface KeyWrap {
  kdf: "scrypt";
  /** base64 */
  salt: string;
  n: number;
  r: number;
  p: number;
  cipher: "aes-256-gcm";
  /** base64 of nonce | ciphertext | tag: the data key under the passphrase's key. */
  wrapped: string;
}

const MAGIC = Buffer.from("OPSB1");
const NONCE = 12;
const TAG = 16;
// scrypt N=2^17, r=8: about 128 MiB and a fraction of a second, once per backup or restore.
const SCRYPT = { n: 1 << 17, r: 8, p: 1 };

function deriveKek(passphrase: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(passphrase.normalize("NFC"), salt, 32, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Read a passphrase file: its text without the trailing newline; refuses an empty one. */
export function passphraseFrom(text: string): string {
  const p = text.replace(/\r?\n$/, "");
  if (p.length < 8) throw new OpsError("validation_failed", "The passphrase file must hold a passphrase of at least 8 characters.");
  return p;
}

/** A new random data key and its wrap under `passphrase`. */
export async function newKeyWrap(passphrase: string): Promise<{ key: Buffer; wrap: KeyWrap }> {
  const key = randomBytes(32);
  const salt = randomBytes(16);
  const kek = await deriveKek(passphrase, salt, SCRYPT.n, SCRYPT.r, SCRYPT.p);
  const wrapped = sealBytes(kek, key, "ops-backup-data-key");
  return { key, wrap: { kdf: "scrypt", salt: salt.toString("base64"), n: SCRYPT.n, r: SCRYPT.r, p: SCRYPT.p, cipher: "aes-256-gcm", wrapped: wrapped.toString("base64") } };
}

/** The data key of `wrap`; `refused` when the passphrase does not open it. */
export async function openKeyWrap(wrap: KeyWrap, passphrase: string): Promise<Buffer> {
  if (wrap.kdf !== "scrypt" || wrap.cipher !== "aes-256-gcm" || wrap.n > 1 << 22 || wrap.r > 32 || wrap.p > 16) {
    throw new OpsError("validation_failed", "The backup's key is wrapped in a way this ops does not know.");
  }
  const kek = await deriveKek(passphrase, Buffer.from(wrap.salt, "base64"), wrap.n, wrap.r, wrap.p);
  try {
    return openBytes(kek, Buffer.from(wrap.wrapped, "base64"), "ops-backup-data-key");
  } catch {
    throw new OpsError("refused", "The passphrase does not open this backup.");
  }
}

/** The stored name of an object whose plaintext hashes to `sha256`: the hash itself, or its HMAC. */
export function objectName(key: Buffer | null, sha256: string): string {
  return key === null ? sha256 : createHmac("sha256", key).update(`ops-backup-object:${sha256}`).digest("hex");
}

/** The bytes of a file (or a slice of one) in chunks. */
export async function* chunksOf(blob: Blob): AsyncGenerator<Uint8Array> {
  const reader = blob.stream().getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value.byteLength) yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** MAGIC | nonce | ciphertext | tag. */
export function sealBytes(key: Buffer, plain: Uint8Array, aad: string): Buffer {
  const nonce = randomBytes(NONCE);
  const c = createCipheriv("aes-256-gcm", key, nonce);
  c.setAAD(Buffer.from(aad));
  const body = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([MAGIC, nonce, body, c.getAuthTag()]);
}

export function openBytes(key: Buffer, sealed: Uint8Array, aad: string): Buffer {
  const b = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (b.length < MAGIC.length + NONCE + TAG || !b.subarray(0, MAGIC.length).equals(MAGIC)) throw new OpsError("validation_failed", "Not an encrypted backup object.");
  const d = createDecipheriv("aes-256-gcm", key, b.subarray(MAGIC.length, MAGIC.length + NONCE));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(b.subarray(b.length - TAG));
  return Buffer.concat([d.update(b.subarray(MAGIC.length + NONCE, b.length - TAG)), d.final()]);
}

/** Encrypt file `src` into `dst` in chunks (never whole in memory). Returns the plaintext's SHA-256. */
export async function sealFile(key: Buffer, src: string, dst: string, aad: string): Promise<string> {
  const nonce = randomBytes(NONCE);
  const c = createCipheriv("aes-256-gcm", key, nonce);
  c.setAAD(Buffer.from(aad));
  const hash = new Bun.CryptoHasher("sha256");
  const out = await open(dst, "w", 0o600);
  try {
    await out.write(Buffer.concat([MAGIC, nonce]));
    for await (const chunk of chunksOf(Bun.file(src))) {
      hash.update(chunk);
      await out.write(c.update(chunk));
    }
    await out.write(Buffer.concat([c.final(), c.getAuthTag()]));
    await out.sync();
  } finally {
    await out.close();
  }
  return hash.digest("hex");
}

/**
 * Decrypt file `src` into `dst`; throws (and removes `dst`'s content's meaning: the caller
 * deletes it) when the tag does not match. Returns the plaintext's SHA-256.
 */
export async function openFile(key: Buffer, src: string, dst: string, aad: string): Promise<string> {
  const f = Bun.file(src);
  const size = f.size;
  const head = Buffer.from(await f.slice(0, MAGIC.length + NONCE).arrayBuffer());
  if (size < MAGIC.length + NONCE + TAG || !head.subarray(0, MAGIC.length).equals(MAGIC)) throw new OpsError("validation_failed", "Not an encrypted backup object.");
  const d = createDecipheriv("aes-256-gcm", key, head.subarray(MAGIC.length));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(Buffer.from(await f.slice(size - TAG).arrayBuffer()));
  const hash = new Bun.CryptoHasher("sha256");
  const out = await open(dst, "w", 0o600);
  try {
    for await (const chunk of chunksOf(f.slice(MAGIC.length + NONCE, size - TAG))) {
      const plain = d.update(chunk);
      hash.update(plain);
      await out.write(plain);
    }
    try {
      const last = d.final();
      hash.update(last);
      await out.write(last);
    } catch {
      throw new OpsError("validation_failed", "An encrypted backup object failed its authentication tag: it was changed or the key is wrong.");
    }
  } finally {
    await out.close();
  }
  return hash.digest("hex");
}
