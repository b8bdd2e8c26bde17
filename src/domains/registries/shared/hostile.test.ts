/**
 * Hostile input (issue 5, point 8): archives with absolute paths, `..`, symlinks, hard links,
 * `.cargo-ok`, oversized or decompression-bomb content are refused at publish with a 4xx, nothing
 * is written outside the blob directory (nothing is written at all), and a failed upload leaves
 * no blob and no row.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { count } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, claim, npmPublishBody, cargoPublishBody, cargoMetadata, rawTarGz, tarGz, type RawEntry, type RegistryCast } from "../../../../test/support/registries";
import { inspectTarGz, ArchiveError } from "./archive";
import { packageVersions, registryBlobs } from "./tables";

let t: TestApp;
let cast: RegistryCast;

/** Every file under the data dir except the databases (which record the refusals' audit rows). */
function files(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p, base));
    else if (!/\.db(-wal|-shm)?$/.test(name)) out.push(path.relative(base, p));
  }
  return out.sort();
}

const pj = (name: string, version: string) => JSON.stringify({ name, version });
const bomb = new Uint8Array(30 * 1024 * 1024);

const npmCases: Record<string, RawEntry[]> = {
  "an absolute path": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "/etc/cron.d/evil", data: "x" }],
  "a .. component": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "package/../../evil.js", data: "x" }],
  "a symbolic link": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "package/link", type: "2", link: "/etc/passwd" }],
  "a hard link": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "package/hard", type: "1", link: "package/package.json" }],
  "a FIFO": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "package/fifo", type: "6" }],
  "two top directories": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "other/x.js", data: "x" }],
  "a decompression bomb": [{ name: "package/package.json", data: pj("@ops/evil", "1.0.0") }, { name: "package/zeros.bin", data: bomb }],
};

const crateCases: Record<string, RawEntry[]> = {
  ".cargo-ok": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "evil-0.1.0/.cargo-ok", data: "ok" }],
  "a symbolic link": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "evil-0.1.0/src", type: "2", link: "/" }],
  "a hard link": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "evil-0.1.0/x", type: "1", link: "/etc/shadow" }],
  "a .. component": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "evil-0.1.0/../../x", data: "x" }],
  "an absolute path": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "/tmp/evil", data: "x" }],
  "an entry outside <name>-<version>/": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "other-0.1.0/x", data: "x" }],
  "a decompression bomb": [{ name: "evil-0.1.0/Cargo.toml", data: '[package]\nname = "evil"\nversion = "0.1.0"\n' }, { name: "evil-0.1.0/zeros", data: bomb }],
};

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  await claim(t, cast, "npm", "@ops/evil");
  await claim(t, cast, "cargo", "evil");
});
afterAll(() => t.close());

describe("hostile archives are refused and leave nothing behind", () => {
  for (const [what, entries] of Object.entries(npmCases)) {
    test(`npm: a tarball with ${what} is 422`, async () => {
      const before = files(t.dataDir);
      const body = await expectStatus(await t.request("PUT", "/npm/@ops%2fevil", { token: cast.publisherToken, body: npmPublishBody("@ops/evil", "1.0.0", rawTarGz(entries)) }), 422);
      expect(body.error).toBeString();
      expect(files(t.dataDir)).toEqual(before);
      expect(t.core.db.select({ n: count() }).from(packageVersions).get()!.n).toBe(0);
      expect(t.core.db.select({ n: count() }).from(registryBlobs).get()!.n).toBe(0);
    });
  }

  for (const [what, entries] of Object.entries(crateCases)) {
    test(`cargo: a crate with ${what} is 400`, async () => {
      const before = files(t.dataDir);
      const raw = cargoPublishBody(cargoMetadata("evil", "0.1.0"), rawTarGz(entries));
      const body = await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: cast.publisherToken }, raw }), 400);
      expect(body.errors[0].detail).toBeString();
      expect(files(t.dataDir)).toEqual(before);
      expect(t.core.db.select({ n: count() }).from(packageVersions).get()!.n).toBe(0);
      expect(t.core.db.select({ n: count() }).from(registryBlobs).get()!.n).toBe(0);
    });
  }

  test("the refusals name the problem", async () => {
    const res = await t.request("PUT", "/npm/@ops%2fevil", { token: cast.publisherToken, body: npmPublishBody("@ops/evil", "1.0.0", rawTarGz(npmCases["a symbolic link"])) });
    expect((await res.json()).error).toBe('The archive entry "package/link" is a symbolic link; only files and directories are allowed.');
    const bombRes = await t.request("PUT", "/npm/@ops%2fevil", { token: cast.publisherToken, body: npmPublishBody("@ops/evil", "1.0.0", rawTarGz(npmCases["a decompression bomb"])) });
    expect((await bombRes.json()).error).toContain("decompression bomb");
  });

  test("a tarball that is not gzip, or not a tar, is refused", async () => {
    for (const bytes of [new TextEncoder().encode("plain text"), Bun.gzipSync(new TextEncoder().encode("gzip but not a tar archive at all"))]) {
      await expectStatus(await t.request("PUT", "/npm/@ops%2fevil", { token: cast.publisherToken, body: npmPublishBody("@ops/evil", "1.0.0", bytes) }), 422);
    }
  });
});

describe("inspectTarGz limits", () => {
  test("too many entries, too many unpacked bytes, an oversized package.json", async () => {
    const many = rawTarGz(Array.from({ length: 30 }, (_, i) => ({ name: `package/f${i}`, data: "x" })));
    await expect(inspectTarGz(many, { root: "package", collect: [], maxEntries: 20 })).rejects.toThrow("more than 20 entries");
    const big = rawTarGz([{ name: "package/a", data: new Uint8Array(5000).fill(7) }]);
    await expect(inspectTarGz(big, { root: "package", collect: [], maxUnpackedBytes: 4096 })).rejects.toThrow("unpacks to more than 4096 bytes");
    const hugeJson = rawTarGz([{ name: "package/package.json", data: new Uint8Array(1024 * 1024 + 1).fill(32) }]);
    await expect(inspectTarGz(hugeJson, { root: "package", collect: ["package.json"], maxRatio: 100_000 })).rejects.toBeInstanceOf(ArchiveError);
  });

  test("a well-formed archive from tar passes and yields the collected file", async () => {
    const ok = await tarGz({ "package/package.json": pj("@ops/ok", "1.0.0"), "package/lib/a.js": "1" });
    const r = await inspectTarGz(ok, { root: "package", collect: ["package.json"] });
    expect(r.root).toBe("package");
    expect(r.fileCount).toBe(2);
    expect(JSON.parse(new TextDecoder().decode(r.files.get("package.json")))).toEqual({ name: "@ops/ok", version: "1.0.0" });
  });
});
