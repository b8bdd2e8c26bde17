import { describe, test, expect } from "bun:test";
import { createHash } from "node:crypto";
import { uuidv7, isUuid, newSecret, isWellFormedSecret, secretDigest, type SecretPrefix } from "./ids";

const PREFIXES: SecretPrefix[] = ["opss_", "opst_", "opsi_", "opsd_"];
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

describe("uuidv7", () => {
  test("is a version-7, RFC 4122 variant UUID stamped with the given time", () => {
    const at = Date.UTC(2026, 10, 21, 12, 0, 0);
    const id = uuidv7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isUuid(id)).toBe(true);
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(at);
  });

  test("sorts by creation time, and stays ordered within one millisecond", () => {
    const ids = [uuidv7(1000), uuidv7(2000), uuidv7(3000)];
    expect([...ids].sort()).toEqual(ids);
    const burst = Array.from({ length: 200 }, () => uuidv7(5000));
    expect(new Set(burst).size).toBe(200);
    expect([...burst].sort()).toEqual(burst);
  });

  test("isUuid rejects other shapes", () => {
    expect(isUuid("not-a-uuid")).toBe(false);
    expect(isUuid("0192f0c4-3b6e-7cde-8f00")).toBe(false);
  });
});

describe("client secrets", () => {
  test.each(PREFIXES)("%s: prefix + 43 base62 characters + 6-character checksum", (prefix) => {
    const s = newSecret(prefix);
    expect(s.startsWith(prefix)).toBe(true);
    expect(s).toHaveLength(5 + 43 + 6);
    expect(s.slice(5)).toMatch(/^[0-9A-Za-z]{49}$/);
    expect(isWellFormedSecret(s, [prefix])).toBe(true);
    expect(isWellFormedSecret(s, PREFIXES)).toBe(true);
    expect(newSecret(prefix)).not.toBe(s);
  });

  test("a secret with any one character changed fails its checksum", () => {
    const s = newSecret("opst_");
    for (let i = 5; i < s.length; i++) {
      const c = s[i];
      const other = BASE62[(BASE62.indexOf(c) + 1) % 62];
      const flipped = s.slice(0, i) + other + s.slice(i + 1);
      expect(isWellFormedSecret(flipped, ["opst_"])).toBe(false);
    }
  });

  test("wrong or unexpected prefixes, lengths and alphabets are rejected", () => {
    const s = newSecret("opss_");
    expect(isWellFormedSecret(s, ["opst_"])).toBe(false);
    expect(isWellFormedSecret("opsx_" + s.slice(5), PREFIXES)).toBe(false);
    expect(isWellFormedSecret("opst_" + s.slice(5), ["opst_"])).toBe(false); // checksum covers the prefix
    expect(isWellFormedSecret(s.slice(0, -1), PREFIXES)).toBe(false);
    expect(isWellFormedSecret(s + "0", PREFIXES)).toBe(false);
    expect(isWellFormedSecret(s.slice(0, 20) + "-" + s.slice(21), PREFIXES)).toBe(false);
    expect(isWellFormedSecret("", PREFIXES)).toBe(false);
  });

  test("secretDigest is the lowercase hex SHA-256 of the secret", () => {
    const s = newSecret("opsd_");
    expect(secretDigest(s)).toBe(createHash("sha256").update(s).digest("hex"));
    expect(secretDigest("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(secretDigest(s)).toMatch(/^[0-9a-f]{64}$/);
  });
});
