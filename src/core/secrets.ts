/**
 * The secrets store: AES-256-GCM envelope encryption. Each value gets its own random data key
 * (DEK); the DEK is encrypted ("wrapped") with the master key. Values live in `sealed_values`;
 * domains keep only a value's id. Rotating the master key rewraps DEKs and touches no value.
 *
 * The master key comes from `OPS_SECRETS_KEY`, else `OPS_SECRETS_KEY_FILE`, else
 * `keys/secrets.key` (generated on first start, mode 0600). A missing or wrong key leaves the store
 * **sealed**: every call that needs a value throws `sealed` (503) and the rest of ops keeps
 * working. A wrong key is detected with the keyring's verifier, never by decrypting garbage.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync, renameSync, chmodSync } from "node:fs";
import path from "node:path";
import { eq, isNull, and, count } from "drizzle-orm";
import type { Config } from "./config";
import type { Clock } from "./clock";
import type { Db, Queryable } from "./db/client";
import { tx } from "./db/client";
import { OpsError } from "./errors";
import { uuidv7 } from "./ids";
import { sealedValues, secretsKeyring } from "./tables";

const VERIFIER_TEXT = "ops secrets store verifier v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretsStatus {
  sealed: boolean;
  keyId: string | null;
  /** Why the store is sealed, for operators (never includes key material). */
  reason: string | null;
}

function encrypt(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const c = createCipheriv("aes-256-gcm", key, iv);
  c.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]);
}

function decrypt(key: Buffer, sealed: Buffer, aad: string): Buffer {
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const body = sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES);
  const d = createDecipheriv("aes-256-gcm", key, iv);
  d.setAAD(Buffer.from(aad, "utf8"));
  d.setAuthTag(tag);
  return Buffer.concat([d.update(body), d.final()]);
}

/** Id of a master key: not secret, stable, lets the keyring tell keys apart. */
export function keyIdOf(key: Buffer): string {
  return createHash("sha256").update("ops-secrets-key:").update(key).digest("hex").slice(0, 16);
}

/** Parse master key text: 64 hex characters or base64 of exactly 32 bytes. */
export function parseMasterKey(text: string): Buffer {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, "hex");
  const b = Buffer.from(t, "base64");
  if (b.length === 32 && /^[A-Za-z0-9+/_-]+=*$/.test(t)) return b;
  throw new OpsError("validation_failed", "A secrets key must be 32 bytes, as 64 hex characters or base64.");
}

/** A fresh master key as 64 hex characters. */
export function generateMasterKeyText(): string {
  return randomBytes(32).toString("hex");
}

/** Write a key file atomically with mode 0600. */
export function writeKeyFile(file: string, keyText: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, keyText + "\n", { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export class SecretsStore {
  private key: Buffer | null = null;
  private keyId: string | null = null;
  private reason: string | null = "not opened";

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly config: Pick<Config, "secretsKey" | "secretsKeyFile" | "dataDir">,
  ) {}

  /** Where the default key file lives. */
  get defaultKeyFile(): string {
    return path.join(this.config.dataDir, "keys", "secrets.key");
  }

  /**
   * Load the master key from configuration and unseal if it verifies. On an empty store with no
   * key configured anywhere, generate `keys/secrets.key`. Never throws for a missing or wrong
   * key: the store just stays sealed, with a reason.
   */
  open(): SecretsStatus {
    let text: string | null = this.config.secretsKey;
    let source = "OPS_SECRETS_KEY";
    if (text === null && this.config.secretsKeyFile !== null) {
      source = "OPS_SECRETS_KEY_FILE";
      text = existsSync(this.config.secretsKeyFile) ? readFileSync(this.config.secretsKeyFile, "utf8") : null;
      if (text === null) {
        this.reason = `${source} names a file that does not exist`;
        return this.status();
      }
    }
    if (text === null) {
      source = "keys/secrets.key";
      if (existsSync(this.defaultKeyFile)) {
        text = readFileSync(this.defaultKeyFile, "utf8");
      } else if (this.isEmpty()) {
        text = generateMasterKeyText();
        writeKeyFile(this.defaultKeyFile, text);
      } else {
        this.reason = "no master key: keys/secrets.key is missing and no OPS_SECRETS_KEY is set";
        return this.status();
      }
    }
    try {
      this.unseal(text);
    } catch (e) {
      this.reason = e instanceof OpsError ? `${source}: ${e.message}` : `${source}: unreadable`;
    }
    return this.status();
  }

  /** True when no key was ever registered and no value stored. */
  private isEmpty(): boolean {
    const keys = this.db.select({ n: count() }).from(secretsKeyring).get()?.n ?? 0;
    const vals = this.db.select({ n: count() }).from(sealedValues).get()?.n ?? 0;
    return keys === 0 && vals === 0;
  }

  status(): SecretsStatus {
    return { sealed: this.key === null, keyId: this.keyId, reason: this.key === null ? this.reason : null };
  }

  get sealed(): boolean {
    return this.key === null;
  }

  /** Forget the master key: every value becomes unreadable until `unseal`. */
  seal(reason = "sealed by an operator"): void {
    this.key?.fill(0);
    this.key = null;
    this.keyId = null;
    this.reason = reason;
  }

  /**
   * Unseal with `keyText`. The key must match the current keyring entry; on a store with no keyring
   * entry yet it becomes the current key. Throws `refused` for a wrong key (the store stays sealed).
   */
  unseal(keyText: string): void {
    const key = parseMasterKey(keyText);
    const id = keyIdOf(key);
    const current = this.db.select().from(secretsKeyring).where(isNull(secretsKeyring.retiredAt)).get();
    if (current === undefined) {
      if (!this.isEmpty()) throw new OpsError("refused", "The store holds values but no current key; it cannot be unsealed with a new key.");
      this.db.insert(secretsKeyring).values({ id, verifier: encrypt(key, Buffer.from(VERIFIER_TEXT), `verifier:${id}`), createdAt: this.clock.now() }).run();
    } else {
      if (current.id !== id) throw new OpsError("refused", "That is not the store's master key.");
      let ok = false;
      try {
        ok = decrypt(key, current.verifier, `verifier:${id}`).toString() === VERIFIER_TEXT;
      } catch {
        ok = false;
      }
      if (!ok) throw new OpsError("refused", "That is not the store's master key.");
    }
    this.key = key;
    this.keyId = id;
    this.reason = null;
  }

  /** Throw `sealed` (503) unless a master key is loaded. */
  assertUnsealed(): void {
    if (this.key === null) throw new OpsError("sealed", "The secrets store is sealed; an operator must unseal it.");
  }

  private masterKey(): { key: Buffer; id: string } {
    this.assertUnsealed();
    return { key: this.key as Buffer, id: this.keyId as string };
  }

  /**
   * A digest of `data` that only this estate can compute: HMAC-SHA256 under a key derived from the
   * master key for `purpose` (hex). For comparing secret values without storing them: a leaked
   * database gives no way to test guesses. Changes when the master key rotates. Throws `sealed`.
   */
  keyedDigest(purpose: string, data: string | Uint8Array): string {
    const { key } = this.masterKey();
    const derived = Buffer.from(hkdfSync("sha256", key, Buffer.alloc(0), `ops keyed digest:${purpose}`, 32));
    const out = createHmac("sha256", derived).update(data).digest("hex");
    derived.fill(0);
    return out;
  }

  /** Seal `plaintext` for `purpose` and store it; returns the value's id. Use inside the caller's tx. */
  put(q: Queryable, purpose: string, plaintext: string | Uint8Array): string {
    const { key, id: keyId } = this.masterKey();
    const id = uuidv7(this.clock.now());
    const dek = randomBytes(32);
    const now = this.clock.now();
    q.insert(sealedValues)
      .values({
        id,
        keyId,
        wrappedDek: encrypt(key, dek, `dek:${id}`),
        ciphertext: encrypt(dek, Buffer.from(plaintext), `value:${purpose}`),
        purpose,
        createdAt: now,
        updatedAt: now,
      })
      .run();
    dek.fill(0);
    return id;
  }

  /** Replace the value behind `id` (a fresh DEK each time). */
  replace(q: Queryable, id: string, plaintext: string | Uint8Array): void {
    const { key, id: keyId } = this.masterKey();
    const row = q.select({ purpose: sealedValues.purpose }).from(sealedValues).where(eq(sealedValues.id, id)).get();
    if (!row) throw new OpsError("not_found", "No such sealed value.");
    const dek = randomBytes(32);
    q.update(sealedValues)
      .set({
        keyId,
        wrappedDek: encrypt(key, dek, `dek:${id}`),
        ciphertext: encrypt(dek, Buffer.from(plaintext), `value:${row.purpose}`),
        updatedAt: this.clock.now(),
      })
      .where(eq(sealedValues.id, id))
      .run();
    dek.fill(0);
  }

  /** The plaintext bytes behind `id`. Throws `sealed` when sealed, `not_found` when absent. */
  getBytes(q: Queryable, id: string): Buffer {
    const { key, id: keyId } = this.masterKey();
    const row = q.select().from(sealedValues).where(eq(sealedValues.id, id)).get();
    if (!row) throw new OpsError("not_found", "No such sealed value.");
    if (row.keyId !== keyId) throw new OpsError("sealed", "A value is sealed with a key this store does not hold.");
    const dek = decrypt(key, row.wrappedDek, `dek:${id}`);
    try {
      return decrypt(dek, row.ciphertext, `value:${row.purpose}`);
    } finally {
      dek.fill(0);
    }
  }

  /** The plaintext behind `id` as UTF-8 text. */
  get(q: Queryable, id: string): string {
    return this.getBytes(q, id).toString("utf8");
  }

  /** Delete the value behind `id` (works sealed too: deleting needs no key). */
  delete(q: Queryable, id: string): void {
    q.delete(sealedValues).where(eq(sealedValues.id, id)).run();
  }

  /**
   * Rotate the master key to `newKeyText`: rewrap every DEK in one transaction, register the new
   * key and retire the old. The caller persists the new key where the old one came from.
   */
  rotate(newKeyText: string): { keyId: string; rewrapped: number } {
    const { key: oldKey } = this.masterKey();
    const newKey = parseMasterKey(newKeyText);
    const newId = keyIdOf(newKey);
    if (newId === this.keyId) throw new OpsError("refused", "The new key is the current key.");
    const now = this.clock.now();
    const rewrapped = tx(this.db, (t) => {
      let n = 0;
      for (const row of t.select({ id: sealedValues.id, wrappedDek: sealedValues.wrappedDek }).from(sealedValues).all()) {
        const dek = decrypt(oldKey, row.wrappedDek, `dek:${row.id}`);
        t.update(sealedValues).set({ keyId: newId, wrappedDek: encrypt(newKey, dek, `dek:${row.id}`) }).where(eq(sealedValues.id, row.id)).run();
        dek.fill(0);
        n++;
      }
      t.update(secretsKeyring).set({ retiredAt: now }).where(and(isNull(secretsKeyring.retiredAt))).run();
      t.insert(secretsKeyring).values({ id: newId, verifier: encrypt(newKey, Buffer.from(VERIFIER_TEXT), `verifier:${newId}`), createdAt: now }).run();
      return n;
    });
    this.key = newKey;
    this.keyId = newId;
    return { keyId: newId, rewrapped };
  }
}
