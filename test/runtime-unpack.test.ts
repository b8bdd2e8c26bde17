/**
 * Unpacking image layers (src/adapters/runtime/unpack.ts): layers in order, OCI whiteouts, and
 * hostile layers written byte by byte (a tar writer that does what an attacker's would: absolute
 * paths, `..`, a symlink and then a file through it, links pointing out, devices), none of which
 * may touch anything outside the root. Atomic and idempotent.
 */
import { describe, test as bunTest, expect, afterAll } from "bun:test";
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createHash } from "node:crypto";
import { tempDir } from "./harness";
import { unpackImage, imageRoot, safeLinkTarget, UnpackError, type LayerSource } from "../src/adapters/runtime/unpack";

/** Real processes on a shared 2-core machine: every test gets 90 s, whatever default the run has. */
const test = (name: string, fn: () => unknown) => bunTest(name, fn as () => Promise<void>, 90_000);

interface TarEntry {
  path: string;
  /** "0" file, "1" hard link, "2" symlink, "3" char device, "5" directory, "6" fifo. */
  type?: string;
  body?: string;
  linkpath?: string;
  mode?: number;
}

function octal(n: number, len: number): string {
  return n.toString(8).padStart(len - 1, "0") + "\0";
}

/** A ustar archive of `entries`, written as given (no sanitising). */
export function rawTar(entries: TarEntry[]): Uint8Array<ArrayBuffer> {
  const blocks: Uint8Array[] = [];
  const enc = new TextEncoder();
  for (const e of entries) {
    const body = enc.encode(e.body ?? "");
    const h = new Uint8Array(512);
    const put = (s: string, off: number, len: number) => h.set(enc.encode(s).slice(0, len), off);
    const type = e.type ?? "0";
    put(e.path, 0, 100);
    put(octal(e.mode ?? (type === "5" ? 0o755 : 0o644), 8), 100, 8);
    put(octal(0, 8), 108, 8);
    put(octal(0, 8), 116, 8);
    put(octal(type === "0" ? body.byteLength : 0, 12), 124, 12);
    put(octal(1_700_000_000, 12), 136, 12);
    put("        ", 148, 8);
    put(type, 156, 1);
    put(e.linkpath ?? "", 157, 100);
    put("ustar\u000000", 257, 8);
    let sum = 0;
    for (const b of h) sum += b;
    put(octal(sum, 7) + " ", 148, 8);
    blocks.push(h);
    if (type === "0" && body.byteLength > 0) {
      const padded = new Uint8Array(Math.ceil(body.byteLength / 512) * 512);
      padded.set(body);
      blocks.push(padded);
    }
  }
  blocks.push(new Uint8Array(1024));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.byteLength, 0));
  let off = 0;
  for (const b of blocks) {
    out.set(b, off);
    off += b.byteLength;
  }
  return out;
}

function layer(bytes: Uint8Array<ArrayBuffer>, mediaType = "application/vnd.oci.image.layer.v1.tar+gzip"): LayerSource {
  return { digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, mediaType, open: () => new Blob([bytes]) };
}

const gz = (entries: TarEntry[]) => layer(Bun.gzipSync(rawTar(entries)));
const plain = (entries: TarEntry[]) => layer(rawTar(entries), "application/vnd.oci.image.layer.v1.tar");

let n = 0;
const digest = () => `sha256:${createHash("sha256").update(`image-${n++}-${Math.random()}`).digest("hex")}`;

const dirs: string[] = [];
function sandbox() {
  const base = tempDir("ops-unpack-");
  dirs.push(base);
  // Things outside the images dir a hostile layer would like to reach.
  writeFileSync(path.join(base, "outside.txt"), "precious\n");
  return { base, images: path.join(base, "images") };
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("layers and whiteouts", () => {
  test("layers apply in order; .wh. removes, .wh..wh..opq empties; gzip and plain tar", async () => {
    const { images } = sandbox();
    const d = digest();
    const l1 = gz([
      { path: "app/", type: "5" },
      { path: "app/server.js", body: "v1", mode: 0o755 },
      { path: "app/old.txt", body: "old" },
      { path: "app/cache/", type: "5" },
      { path: "app/cache/a", body: "a" },
      { path: "app/cache/b", body: "b" },
      { path: "etc/", type: "5" },
      { path: "etc/motd", body: "hello" },
    ]);
    const l2 = plain([
      { path: "app/server.js", body: "v2", mode: 0o4755 },
      { path: "app/.wh.old.txt" },
      { path: "app/cache/.wh..wh..opq" },
      { path: "app/cache/c", body: "c" },
      { path: "etc/.wh.motd" },
      { path: "app/link", type: "2", linkpath: "server.js" },
      { path: "app/hard", type: "1", linkpath: "app/server.js" },
    ]);
    const r = await unpackImage(images, d, [l1, l2]);
    expect(r.created).toBe(true);
    expect(r.refused).toEqual([]);
    expect(r.root).toBe(imageRoot(images, d));
    expect(readFileSync(path.join(r.root, "app/server.js"), "utf8")).toBe("v2");
    const mode = statSync(path.join(r.root, "app/server.js")).mode;
    expect(mode & 0o7000).toBe(0); // setuid dropped
    expect(mode & 0o111).toBe(0o111);
    expect(existsSync(path.join(r.root, "app/old.txt"))).toBe(false);
    expect(readdirSync(path.join(r.root, "app/cache")).sort()).toEqual(["c"]);
    expect(existsSync(path.join(r.root, "etc/motd"))).toBe(false);
    expect(readlinkSync(path.join(r.root, "app/link"))).toBe("server.js");
    expect(statSync(path.join(r.root, "app/hard")).ino).toBe(statSync(path.join(r.root, "app/server.js")).ino);
    // Whiteout markers are never materialised.
    expect(readdirSync(path.join(r.root, "app")).some((f) => f.startsWith(".wh."))).toBe(false);
  });

  test("an opaque whiteout keeps what its own layer wrote, whatever the order", async () => {
    const { images } = sandbox();
    const l1 = gz([{ path: "d/", type: "5" }, { path: "d/lower", body: "x" }, { path: "d/sub/", type: "5" }, { path: "d/sub/lower", body: "y" }]);
    const l2 = gz([{ path: "d/sub/mine", body: "z" }, { path: "d/.wh..wh..opq" }, { path: "d/after", body: "w" }]);
    const r = await unpackImage(images, digest(), [l1, l2]);
    expect(readdirSync(path.join(r.root, "d")).sort()).toEqual(["after", "sub"]);
    expect(readdirSync(path.join(r.root, "d/sub"))).toEqual(["mine"]);
  });

  test("idempotent: a second unpack of the digest reads nothing", async () => {
    const { images } = sandbox();
    const d = digest();
    const first = await unpackImage(images, d, [gz([{ path: "a", body: "1" }])]);
    let opened = false;
    const second = await unpackImage(images, d, [{ digest: "sha256:" + "0".repeat(64), mediaType: "x", open: () => ((opened = true), new Blob([])) }]);
    expect(second).toEqual({ root: first.root, created: false, refused: [] });
    expect(opened).toBe(false);
    // Concurrent calls share one unpack.
    const d2 = digest();
    const l = gz([{ path: "b", body: "2" }]);
    const [x, y] = await Promise.all([unpackImage(images, d2, [l]), unpackImage(images, d2, [l])]);
    expect(x).toBe(y);
  });
});

describe("hostile layers", () => {
  test("absolute paths stay inside; .. is refused; nothing outside changes", async () => {
    const { base, images } = sandbox();
    const r = await unpackImage(images, digest(), [
      gz([
        { path: "/abs.txt", body: "inside" },
        { path: "../outside.txt", body: "pwned" },
        { path: "a/../../outside.txt", body: "pwned" },
        { path: "../../escape.txt", body: "pwned" },
      ]),
    ]);
    expect(readFileSync(path.join(r.root, "abs.txt"), "utf8")).toBe("inside");
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("precious\n");
    expect(existsSync(path.join(path.dirname(base), "escape.txt"))).toBe(false);
    expect(r.refused.map((x) => x.path).sort()).toEqual(["../../escape.txt", "../outside.txt", "a/../../outside.txt"]);
  });

  test("a symlink pointing out is refused, and no file is written through a symlink", async () => {
    const { base, images } = sandbox();
    const r = await unpackImage(images, digest(), [
      gz([
        { path: "out", type: "2", linkpath: "../../.." },
        { path: "evil", type: "2", linkpath: base },
        { path: "evil/outside.txt", body: "pwned" },
        { path: "ok", type: "2", linkpath: "/usr/bin/node" },
      ]),
      // A later layer tries the same through a link an earlier layer left.
      gz([{ path: "ok/../../x", body: "pwned" }, { path: "evil/new.txt", body: "pwned" }]),
    ]);
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("precious\n");
    expect(existsSync(path.join(base, "new.txt"))).toBe(false);
    expect(existsSync(path.join(r.root, "out"))).toBe(false);
    // An absolute target inside the root is kept, made relative.
    expect(readlinkSync(path.join(r.root, "ok"))).toBe("usr/bin/node");
    expect(lstatSync(path.join(r.root, "evil")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(r.root, "evil"))).toBe(path.relative("/", base));
    const reasons = Object.fromEntries(r.refused.map((x) => [x.path, x.reason]));
    expect(reasons.out).toContain("outside the image root");
    expect(reasons["evil/outside.txt"]).toContain("symlink");
    expect(reasons["evil/new.txt"]).toContain("symlink");
    expect(reasons["ok/../../x"]).toContain("leaves the image root");
  });

  test("a directory replaced by a symlink in the same layer is not written through", async () => {
    const { images } = sandbox();
    const r = await unpackImage(images, digest(), [
      gz([
        { path: "a/", type: "5" },
        { path: "a/x", body: "first" },
        { path: "b/", type: "5" },
        // `a` becomes a link to `b` after files went into it: what follows must not land in `b`.
        { path: "a", type: "2", linkpath: "b" },
        { path: "a/y", body: "through the link" },
        { path: "a/deep/z", body: "through the link" },
      ]),
    ]);
    expect(lstatSync(path.join(r.root, "a")).isSymbolicLink()).toBe(true);
    expect(readdirSync(path.join(r.root, "b"))).toEqual([]);
    const reasons = Object.fromEntries(r.refused.map((x) => [x.path, x.reason]));
    expect(reasons["a/y"]).toContain("symlink");
    expect(reasons["a/deep/z"]).toContain("symlink");
  });

  test("hard links may only name files already in the root; devices and FIFOs are not made", async () => {
    const { base, images } = sandbox();
    const r = await unpackImage(images, digest(), [
      gz([
        { path: "h1", type: "1", linkpath: "../outside.txt" },
        { path: "h2", type: "1", linkpath: path.join(base, "outside.txt") },
        { path: "dir/", type: "5" },
        { path: "h3", type: "1", linkpath: "dir" },
        { path: "dev", type: "3" },
        { path: "fifo", type: "6" },
        { path: "l", type: "2", linkpath: "dir" },
        { path: "h4", type: "1", linkpath: "l" },
      ]),
    ]);
    for (const f of ["h1", "h2", "h3", "h4", "dev", "fifo"]) expect(existsSync(path.join(r.root, f))).toBe(false);
    expect(r.refused.map((x) => x.path).sort()).toEqual(["dev", "fifo", "h1", "h2", "h3", "h4"]);
    // The host file was never linked: it still has one name.
    expect(statSync(path.join(base, "outside.txt")).nlink).toBe(1);
  });

  test("a whiteout cannot delete through a symlink", async () => {
    const { base, images } = sandbox();
    const r = await unpackImage(images, digest(), [gz([{ path: "evil", type: "2", linkpath: base }]), gz([{ path: "evil/.wh.outside.txt" }, { path: "evil/.wh..wh..opq" }])]);
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("precious\n");
    expect(r.refused.length).toBe(2);
  });

  test("a corrupt archive, a wrong digest or a tar bomb fail whole and leave nothing", async () => {
    const { images } = sandbox();
    const good = gz([{ path: "a", body: "1" }]);
    const d1 = digest();
    const bytes = Bun.gzipSync(rawTar([{ path: "a", body: "x".repeat(5000) }]));
    const truncated = bytes.slice(0, Math.floor(bytes.byteLength / 2));
    await expect(unpackImage(images, d1, [good, layer(truncated)])).rejects.toThrow(UnpackError);
    const lie: LayerSource = { ...good, digest: "sha256:" + "1".repeat(64) };
    await expect(unpackImage(images, d1, [lie])).rejects.toThrow(/hash to/);
    await expect(unpackImage(images, d1, [gz([{ path: "big", body: "x".repeat(4096) }])], { maxBytes: 1024 })).rejects.toThrow(/more than 1024 bytes/);
    await expect(unpackImage(images, d1, [gz([{ path: "a" }, { path: "b" }, { path: "c" }])], { maxEntries: 2 })).rejects.toThrow(/more than 2 entries/);
    await expect(unpackImage(images, d1, [layer(new TextEncoder().encode("this is not a tar archive at all"))])).rejects.toThrow(UnpackError);
    expect(existsSync(imageRoot(images, d1))).toBe(false);
    expect(readdirSync(images)).toEqual([]);
  });
});

describe("symlink targets", () => {
  test("relative targets are kept, absolute ones made relative, escapes refused", () => {
    expect(safeLinkTarget(["app", "x"], "y")).toBe("y");
    expect(safeLinkTarget(["app", "x"], "../etc/passwd")).toBe("../etc/passwd");
    expect(safeLinkTarget(["app", "x"], "../../etc/passwd")).toBeNull();
    expect(safeLinkTarget(["app", "x"], "/etc/passwd")).toBe("../etc/passwd");
    expect(safeLinkTarget(["x"], "/")).toBe(".");
    expect(safeLinkTarget(["x"], "/../../etc")).toBeNull();
  });
});
