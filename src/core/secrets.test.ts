import { describe, test, expect, afterAll } from "bun:test";
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createHash } from "node:crypto";
import { openDatabase, closeDatabase, tx, type OpenedDb } from "./db/client";
import { runMigrations } from "./db/migrate";
import { FixedClock } from "./clock";
import { OpsError, type ErrorCode } from "./errors";
import { SecretsStore, generateMasterKeyText, parseMasterKey, keyIdOf } from "./secrets";
import { tempDir } from "../../test/harness";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Env {
  dir: string;
  opened: OpenedDb;
  store(config?: { secretsKey?: string | null; secretsKeyFile?: string | null }): SecretsStore;
}

function env(): Env {
  const dir = tempDir("ops-secrets-");
  dirs.push(dir);
  const opened = openDatabase(path.join(dir, "ops.db"), "state");
  runMigrations(opened.sqlite, "ops", 0);
  const clock = new FixedClock();
  return {
    dir,
    opened,
    store: (c = {}) => new SecretsStore(opened.db, clock, { dataDir: dir, secretsKey: c.secretsKey ?? null, secretsKeyFile: c.secretsKeyFile ?? null }),
  };
}

function expectOpsError(fn: () => unknown, code: ErrorCode, status: number): OpsError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(OpsError);
    expect((e as OpsError).code).toBe(code);
    expect((e as OpsError).status).toBe(status);
    return e as OpsError;
  }
  throw new Error(`expected OpsError ${code}`);
}

describe("SecretsStore values", () => {
  test("put / get / replace / delete round-trip, inside a caller's transaction", () => {
    const e = env();
    const s = e.store({ secretsKey: generateMasterKeyText() });
    expect(s.open().sealed).toBe(false);
    const id = tx(e.opened.db, (t) => s.put(t, "test:one", "first value"));
    expect(s.get(e.opened.db, id)).toBe("first value");
    s.replace(e.opened.db, id, "second value");
    expect(s.get(e.opened.db, id)).toBe("second value");
    const bin = s.put(e.opened.db, "test:bytes", new Uint8Array([0, 255, 1, 254]));
    expect([...s.getBytes(e.opened.db, bin)]).toEqual([0, 255, 1, 254]);
    s.delete(e.opened.db, id);
    expectOpsError(() => s.get(e.opened.db, id), "not_found", 404);
    expectOpsError(() => s.replace(e.opened.db, id, "x"), "not_found", 404);
    // A rolled-back transaction leaves no value behind.
    let lost = "";
    expect(() =>
      tx(e.opened.db, (t) => {
        lost = s.put(t, "test:lost", "never committed");
        throw new Error("abort");
      }),
    ).toThrow("abort");
    expectOpsError(() => s.get(e.opened.db, lost), "not_found", 404);
  });

  test("values are not stored in clear (database and WAL bytes)", () => {
    const e = env();
    const s = e.store({ secretsKey: generateMasterKeyText() });
    s.open();
    const plaintext = "PLAINTEXT-MARKER-correct-horse-battery-staple";
    const id = s.put(e.opened.db, "test:clear", plaintext);
    s.replace(e.opened.db, id, plaintext + "-2");
    const grep = () => {
      for (const f of readdirSync(e.dir).filter((n) => n.startsWith("ops.db"))) {
        const bytes = readFileSync(path.join(e.dir, f));
        expect(bytes.includes(Buffer.from("PLAINTEXT-MARKER"))).toBe(false);
      }
    };
    grep();
    closeDatabase(e.opened.sqlite);
    grep();
  });

  test("two values with the same plaintext have different ciphertexts", () => {
    const e = env();
    const s = e.store({ secretsKey: generateMasterKeyText() });
    s.open();
    const a = s.put(e.opened.db, "p", "same");
    const b = s.put(e.opened.db, "p", "same");
    const rows = e.opened.sqlite.query("SELECT id, ciphertext, wrapped_dek FROM sealed_values WHERE id IN (?, ?)").all(a, b) as Array<{ ciphertext: Uint8Array; wrapped_dek: Uint8Array }>;
    expect(Buffer.from(rows[0].ciphertext).equals(Buffer.from(rows[1].ciphertext))).toBe(false);
    expect(Buffer.from(rows[0].wrapped_dek).equals(Buffer.from(rows[1].wrapped_dek))).toBe(false);
  });
});

describe("keyed digests", () => {
  test("the same for the same key, purpose and data; another for another key or purpose; never the plain SHA-256; sealed throws", () => {
    const e = env();
    const key = generateMasterKeyText();
    const s = e.store({ secretsKey: key });
    s.open();
    const d = s.keyedDigest("builds.input-key", "tok-1234");
    expect(d).toMatch(/^[0-9a-f]{64}$/);
    expect(s.keyedDigest("builds.input-key", "tok-1234")).toBe(d);
    expect(s.keyedDigest("other", "tok-1234")).not.toBe(d);
    expect(d).not.toBe(createHash("sha256").update("tok-1234").digest("hex"));
    const other = env().store({ secretsKey: generateMasterKeyText() });
    other.open();
    expect(other.keyedDigest("builds.input-key", "tok-1234")).not.toBe(d);
    s.seal();
    expectOpsError(() => s.keyedDigest("builds.input-key", "tok-1234"), "sealed", 503);
  });
});

describe("sealing", () => {
  test("sealed: reads and writes throw `sealed` (503); deleting still works; unseal restores every value", () => {
    const e = env();
    const key = generateMasterKeyText();
    const s = e.store({ secretsKey: key });
    s.open();
    const ids = Array.from({ length: 5 }, (_, i) => s.put(e.opened.db, `test:${i}`, `value ${i}`));
    s.seal("maintenance");
    expect(s.sealed).toBe(true);
    expect(s.status()).toEqual({ sealed: true, keyId: null, reason: "maintenance" });
    expectOpsError(() => s.get(e.opened.db, ids[0]), "sealed", 503);
    expectOpsError(() => s.put(e.opened.db, "test:new", "x"), "sealed", 503);
    expectOpsError(() => s.replace(e.opened.db, ids[0], "x"), "sealed", 503);
    expectOpsError(() => s.assertUnsealed(), "sealed", 503);
    s.delete(e.opened.db, ids[4]);

    s.unseal(key);
    expect(s.status()).toEqual({ sealed: false, keyId: keyIdOf(parseMasterKey(key)), reason: null });
    for (let i = 0; i < 4; i++) expect(s.get(e.opened.db, ids[i])).toBe(`value ${i}`);
  });

  test("a wrong key leaves the store sealed with a reason, never garbage", () => {
    const e = env();
    const right = generateMasterKeyText();
    const first = e.store({ secretsKey: right });
    first.open();
    const id = first.put(e.opened.db, "test:x", "kept");

    const wrong = e.store({ secretsKey: generateMasterKeyText() });
    const status = wrong.open();
    expect(status.sealed).toBe(true);
    expect(status.reason).toContain("OPS_SECRETS_KEY");
    expect(status.reason).toContain("not the store's master key");
    expectOpsError(() => wrong.get(e.opened.db, id), "sealed", 503);
    expectOpsError(() => wrong.unseal(generateMasterKeyText()), "refused", 422);
    expect(wrong.sealed).toBe(true);

    const malformed = e.store({ secretsKey: "too short" });
    expect(malformed.open()).toMatchObject({ sealed: true, reason: expect.stringContaining("32 bytes") });

    wrong.unseal(right);
    expect(wrong.get(e.opened.db, id)).toBe("kept");
  });

  test("master key text: 64 hex or base64 of 32 bytes", () => {
    const hex = generateMasterKeyText();
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    const b64 = Buffer.from(hex, "hex").toString("base64");
    expect(parseMasterKey(b64).equals(parseMasterKey(hex))).toBe(true);
    expect(() => parseMasterKey(Buffer.alloc(16).toString("base64"))).toThrow(OpsError);
    expect(() => parseMasterKey("z".repeat(64))).toThrow(OpsError);
  });
});

describe("open()", () => {
  test("an empty store with no key configured generates keys/secrets.key (0600) and unseals", () => {
    const e = env();
    const s = e.store();
    const status = s.open();
    expect(status.sealed).toBe(false);
    const file = path.join(e.dir, "keys", "secrets.key");
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, "utf8");
    expect(status.keyId).toBe(keyIdOf(parseMasterKey(text)));
    const id = s.put(e.opened.db, "test:k", "v");

    // A restart reads the same file and unseals.
    const again = e.store();
    expect(again.open().sealed).toBe(false);
    expect(again.get(e.opened.db, id)).toBe("v");
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  test("values exist but keys/secrets.key is missing: sealed, and no new key is generated", () => {
    const e = env();
    const s = e.store();
    s.open();
    const id = s.put(e.opened.db, "test:k", "v");
    const file = path.join(e.dir, "keys", "secrets.key");
    const text = readFileSync(file, "utf8");
    rmSync(file);

    const after = e.store();
    const status = after.open();
    expect(status.sealed).toBe(true);
    expect(status.reason).toContain("keys/secrets.key is missing");
    expect(existsSync(file)).toBe(false);
    expectOpsError(() => after.get(e.opened.db, id), "sealed", 503);

    after.unseal(text);
    expect(after.get(e.opened.db, id)).toBe("v");
  });

  test("OPS_SECRETS_KEY_FILE: read when present; sealed with a reason when the file is missing", () => {
    const e = env();
    const keyFile = path.join(e.dir, "master.key");
    writeFileSync(keyFile, generateMasterKeyText() + "\n", { mode: 0o600 });
    const s = e.store({ secretsKeyFile: keyFile });
    expect(s.open().sealed).toBe(false);
    s.put(e.opened.db, "test:f", "v");
    expect(existsSync(path.join(e.dir, "keys", "secrets.key"))).toBe(false);

    const missing = e.store({ secretsKeyFile: path.join(e.dir, "nope.key") });
    expect(missing.open()).toMatchObject({ sealed: true, reason: "OPS_SECRETS_KEY_FILE names a file that does not exist" });
  });
});

describe("rotate", () => {
  test("rewraps every DEK under the new key; the old key no longer unseals", () => {
    const e = env();
    const oldKey = generateMasterKeyText();
    const s = e.store({ secretsKey: oldKey });
    s.open();
    const ids = Array.from({ length: 3 }, (_, i) => s.put(e.opened.db, `test:${i}`, `value ${i}`));
    const ciphertextsBefore = e.opened.sqlite.query("SELECT id, ciphertext FROM sealed_values ORDER BY id").all();

    const newKey = generateMasterKeyText();
    const r = s.rotate(newKey);
    expect(r).toEqual({ keyId: keyIdOf(parseMasterKey(newKey)), rewrapped: 3 });
    expect(s.status().keyId).toBe(r.keyId);
    for (let i = 0; i < 3; i++) expect(s.get(e.opened.db, ids[i])).toBe(`value ${i}`);
    // Only the wrapping changed: the values' ciphertexts are untouched.
    expect(e.opened.sqlite.query("SELECT id, ciphertext FROM sealed_values ORDER BY id").all()).toEqual(ciphertextsBefore);
    const keyIds = e.opened.sqlite.query("SELECT DISTINCT key_id FROM sealed_values").all();
    expect(keyIds).toEqual([{ key_id: r.keyId }]);
    const ring = e.opened.sqlite.query("SELECT id, retired_at FROM secrets_keyring ORDER BY created_at, retired_at DESC").all() as Array<{ id: string; retired_at: number | null }>;
    expect(ring.filter((k) => k.retired_at === null).map((k) => k.id)).toEqual([r.keyId]);

    const withOld = e.store({ secretsKey: oldKey });
    expect(withOld.open()).toMatchObject({ sealed: true, reason: expect.stringContaining("not the store's master key") });
    const withNew = e.store({ secretsKey: newKey });
    expect(withNew.open().sealed).toBe(false);
    expect(withNew.get(e.opened.db, ids[1])).toBe("value 1");

    expectOpsError(() => s.rotate(newKey), "refused", 422);
    s.seal();
    expectOpsError(() => s.rotate(generateMasterKeyText()), "sealed", 503);
  });
});
