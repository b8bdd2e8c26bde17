import { describe, test, expect, beforeEach, afterEach } from "bun:test";
import { readdirSync, rmSync, writeFileSync, utimesSync, existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { FsBlobStore, sha256Hex, isDigest } from "./store";
import { OpsError } from "../errors";
import { tempDir } from "../../../test/harness";

let dir: string;
let store: FsBlobStore;

beforeEach(() => {
  dir = tempDir("ops-blobs-");
  store = new FsBlobStore(path.join(dir, "blobs"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const tmpFiles = () => readdirSync(path.join(dir, "blobs", "tmp"));

function streamOf(parts: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < parts.length) c.enqueue(enc.encode(parts[i++]));
      else c.close();
    },
  });
}

async function listAll(): Promise<string[]> {
  const out: string[] = [];
  for await (const d of store.list()) out.push(d);
  return out.sort();
}

describe("FsBlobStore.put", () => {
  test("bytes in memory that the store has are not written again; refused ones leave no temp file", async () => {
    const bytes = new TextEncoder().encode("layer bytes");
    const first = await store.put(bytes);
    expect(first.created).toBe(true);
    const file = store.pathOf(first.digest);
    const old = new Date(Date.UTC(2020, 0, 1));
    utimesSync(file, old, old);
    const again = await store.put(bytes, { expectDigest: first.digest });
    expect(again).toEqual({ digest: first.digest, size: bytes.byteLength, created: false });
    expect(statSync(file).mtimeMs).toBe(old.getTime());
    await expect(store.put(bytes, { expectDigest: sha256Hex("other") })).rejects.toThrow("does not match its declared digest");
    await expect(store.put(new Uint8Array(10), { maxBytes: 9 })).rejects.toThrow("larger than the limit");
    expect(tmpFiles()).toEqual([]);
  });

  test("puts started together all land complete (their fsyncs overlap), in new and existing shards", async () => {
    const blobs = Array.from({ length: 12 }, (_, i) => new TextEncoder().encode(`blob ${i} `.repeat(1000 + i)));
    const res = await Promise.all(blobs.map((b, i) => (i % 2 ? store.put(b) : store.put(new Blob([b])))));
    for (const [i, r] of res.entries()) {
      expect(r.created).toBe(true);
      expect(new Uint8Array(readFileSync(store.pathOf(r.digest)))).toEqual(blobs[i]);
    }
    expect(await listAll()).toEqual(res.map((r) => r.digest).sort());
    expect(tmpFiles()).toEqual([]);
  });

  test("from a string, bytes, an ArrayBuffer, a Blob and a stream: digest + size", async () => {
    const text = "hello, ops";
    const digest = sha256Hex(text);
    const fromString = await store.put(text);
    expect(fromString).toEqual({ digest, size: 10, created: true });
    expect(store.pathOf(digest)).toBe(path.join(dir, "blobs", "sha256", digest.slice(0, 2), digest));
    expect(readFileSync(store.pathOf(digest), "utf8")).toBe(text);

    const bytes = new Uint8Array([1, 2, 3, 4]);
    expect(await store.put(bytes)).toEqual({ digest: sha256Hex(bytes), size: 4, created: true });
    const ab = new Uint8Array([5, 6, 7]).buffer;
    expect(await store.put(ab)).toEqual({ digest: sha256Hex(new Uint8Array([5, 6, 7])), size: 3, created: true });
    expect(await store.put(new Blob(["blob body"]))).toEqual({ digest: sha256Hex("blob body"), size: 9, created: true });
    expect(await store.put(streamOf(["str", "eam", "ed"]))).toEqual({ digest: sha256Hex("streamed"), size: 8, created: true });
    expect(await store.put("")).toEqual({ digest: sha256Hex(""), size: 0, created: true });
    expect(tmpFiles()).toEqual([]);
  });

  test("the same bytes twice are stored once (created: false)", async () => {
    const first = await store.put("same");
    const second = await store.put(streamOf(["sa", "me"]));
    expect(second).toEqual({ digest: first.digest, size: 4, created: false });
    expect(await listAll()).toEqual([first.digest]);
    expect(tmpFiles()).toEqual([]);
  });

  test("expectDigest: a match is stored, a mismatch keeps nothing", async () => {
    const ok = await store.put("checked", { expectDigest: sha256Hex("checked").toUpperCase() });
    expect(ok.created).toBe(true);
    const wrong = "0".repeat(64);
    const err = await store.put("other bytes", { expectDigest: wrong }).catch((e) => e);
    expect(err).toBeInstanceOf(OpsError);
    expect((err as OpsError).status).toBe(400);
    expect((err as OpsError).details).toEqual({ expected: wrong, actual: sha256Hex("other bytes") });
    expect(await store.has(sha256Hex("other bytes"))).toBe(false);
    expect(await listAll()).toEqual([ok.digest]);
    expect(tmpFiles()).toEqual([]);
  });

  test("maxBytes: 413 and nothing kept, not even a temp file", async () => {
    const err = await store.put(streamOf(["a".repeat(600), "b".repeat(600)]), { maxBytes: 1000 }).catch((e) => e);
    expect(err).toBeInstanceOf(OpsError);
    expect((err as OpsError).status).toBe(413);
    expect((err as OpsError).code).toBe("payload_too_large");
    expect(await listAll()).toEqual([]);
    expect(tmpFiles()).toEqual([]);
    // Exactly at the limit is fine.
    expect((await store.put("x".repeat(1000), { maxBytes: 1000 })).size).toBe(1000);
  });

  test("a stream that errors half-way keeps nothing", async () => {
    let n = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(c) {
        if (n++ < 2) c.enqueue(new Uint8Array(100));
        else c.error(new Error("connection reset"));
      },
    });
    await expect(store.put(failing)).rejects.toThrow("connection reset");
    expect(await listAll()).toEqual([]);
    expect(tmpFiles()).toEqual([]);
  });
});

describe("FsBlobStore reads and deletes", () => {
  test("open / has / size / delete / list", async () => {
    const a = await store.put("aaa");
    const b = await store.put("bbbb");
    expect(await store.has(a.digest)).toBe(true);
    expect(await store.size(b.digest)).toBe(4);
    expect(await store.open(a.digest)!.text()).toBe("aaa");
    expect(await listAll()).toEqual([a.digest, b.digest].sort());

    expect(await store.delete(a.digest)).toBe(true);
    expect(await store.delete(a.digest)).toBe(false);
    expect(await store.has(a.digest)).toBe(false);
    expect(await store.size(a.digest)).toBeNull();
    expect(store.open(a.digest)).toBeNull();
    expect(await listAll()).toEqual([b.digest]);
  });

  test("anything that is not a digest is refused without touching the disk", async () => {
    for (const bad of ["../../etc/passwd", "ABC", "g".repeat(64), "A".repeat(64)]) {
      expect(isDigest(bad)).toBe(false);
      expect(await store.has(bad)).toBe(false);
      expect(await store.size(bad)).toBeNull();
      expect(store.open(bad)).toBeNull();
      expect(await store.delete(bad)).toBe(false);
      expect(() => store.pathOf(bad)).toThrow(OpsError);
    }
  });

  test("sweepTemp removes temp files older than the cut-off only", async () => {
    const tmp = path.join(dir, "blobs", "tmp");
    writeFileSync(path.join(tmp, "old.part"), "left by a crash");
    writeFileSync(path.join(tmp, "new.part"), "a write in progress");
    const now = Date.now();
    const hourAgo = new Date(now - 3_600_000);
    utimesSync(path.join(tmp, "old.part"), hourAgo, hourAgo);
    expect(store.sweepTemp(600_000, now)).toBe(1);
    expect(tmpFiles()).toEqual(["new.part"]);
    expect(store.sweepTemp(0, now + 1000)).toBe(1);
    expect(tmpFiles()).toEqual([]);
  });
});

describe("FsBlobStore streaming", () => {
  test("a 64 MiB put streams: RSS does not grow by anything near its size", async () => {
    const total = 64 * 1024 * 1024;
    const chunk = 256 * 1024;
    const fill = (i: number) => new Uint8Array(chunk).fill(i % 251);
    const expected = new Bun.CryptoHasher("sha256");
    for (let i = 0; i < total / chunk; i++) expected.update(fill(i));
    const expectedDigest = expected.digest("hex");

    Bun.gc(true);
    const before = process.memoryUsage().rss;
    let peak = before;
    let i = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i === total / chunk) return c.close();
        c.enqueue(fill(i++));
        if (i % 32 === 0) {
          Bun.gc(true);
          peak = Math.max(peak, process.memoryUsage().rss);
        }
      },
    });
    const res = await store.put(source);
    Bun.gc(true);
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(res).toEqual({ digest: expectedDigest, size: total, created: true });
    expect(existsSync(store.pathOf(expectedDigest))).toBe(true);
    // Buffering the whole body would add at least 64 MiB; streaming adds a few chunks.
    expect(peak - before).toBeLessThan(24 * 1024 * 1024);
  });
});
