/**
 * The image writer: the layer read back with GNU tar (owner, paths, modes, mtimes, long names,
 * links), the same digest for the same commit however the files were made, the config and
 * manifest fields, and the refusals (escaping symlinks, absolute symlinks, FIFOs).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, linkSync, mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { tempDir } from "../../../test/harness";
import { run } from "../../../test/support/registries";
import { packImage, packLayer, ImageRefused, type ImageSpec } from "./image";

let root: string;
const COMMIT_TIME = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const OLD = Date.UTC(1985, 9, 26, 8, 15) / 1000;

function tree(name: string, files: Array<[string, string]>): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [rel, text] of files) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

function spec(outputDir: string, over: Partial<ImageSpec> = {}): ImageSpec {
  return { outputDir, layerFile: path.join(root, `${path.basename(outputDir)}-${Math.random().toString(36).slice(2)}.tar.gz`), start: "node server.js", port: 8080, commit: "0123456789abcdef0123456789abcdef01234567", commitTime: COMMIT_TIME, source: "shop/web", ...over };
}

const LONG = `node_modules/${"a".repeat(60)}/${"b".repeat(60)}/index.js`;
const FILES: Array<[string, string]> = [
  ["server.js", "require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT)\n"],
  ["public/index.html", "<h1>hi</h1>\n"],
  ["bin/run", "#!/bin/sh\nexec node server.js\n"],
  [LONG, "module.exports = 1;\n"],
  ["node_modules/dep/package.json", '{"name":"dep"}\n'],
];

beforeAll(() => {
  root = tempDir("ops-image-");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("packImage", () => {
  test("the layer holds the output under /app, owned by 1000, sorted, mtimes clamped to the commit", async () => {
    const dir = tree("a", FILES);
    chmodSync(path.join(dir, "bin/run"), 0o755);
    utimesSync(path.join(dir, "node_modules/dep/package.json"), OLD, OLD);
    symlinkSync("../server.js", path.join(dir, "bin/server"));
    linkSync(path.join(dir, "server.js"), path.join(dir, "server-copy.js"));
    const img = await packImage(spec(dir));
    const listing = await run(["tar", "--numeric-owner", "--full-time", "-tvzf", img.layer.file], { cwd: root, env: { TZ: "UTC" } });
    expect(listing.code).toBe(0);
    const rows = listing.stdout.trim().split("\n").map((l) => l.split(/\s+/));
    const names = rows.map((r) => r.slice(5).join(" "));
    expect(names).toEqual([
      "app/",
      "app/bin/",
      "app/bin/run",
      "app/bin/server -> ../server.js",
      "app/node_modules/",
      `app/node_modules/${"a".repeat(60)}/`,
      // A directory name split into ustar's prefix and name fields loses its trailing slash.
      `app/node_modules/${"a".repeat(60)}/${"b".repeat(60)}`,
      `app/${LONG}`,
      "app/node_modules/dep/",
      "app/node_modules/dep/package.json",
      "app/public/",
      "app/public/index.html",
      "app/server-copy.js",
      "app/server.js link to app/server-copy.js",
    ]);
    for (const r of rows) expect(r[1]).toBe("1000/1000");
    const byName = new Map(rows.map((r) => [r.slice(5).join(" "), r]));
    expect(byName.get("app/bin/run")![0]).toBe("-rwxr-xr-x");
    expect(byName.get(`app/node_modules/${"a".repeat(60)}/${"b".repeat(60)}`)![0]).toStartWith("d");
    expect(byName.get("app/server-copy.js")![3] + " " + byName.get("app/server-copy.js")![4]).toBe("2026-01-02 03:04:05");
    expect(byName.get("app/node_modules/dep/package.json")![3]).toBe("1985-10-26");
    expect(img.entries).toBe(14);

    const out = tempDir("ops-image-x-");
    const x = await run(["tar", "-xzf", img.layer.file, "-C", out], { cwd: root });
    expect(x.code).toBe(0);
    expect(await Bun.file(path.join(out, "app", LONG)).text()).toBe("module.exports = 1;\n");
    rmSync(out, { recursive: true, force: true });
  });

  test("the same commit gives the same digests, whatever order and time the files were written in", async () => {
    const a = tree("same-a", FILES);
    await Bun.sleep(1100);
    const b = tree("same-b", [...FILES].reverse());
    utimesSync(path.join(b, "server.js"), new Date(), new Date(Date.now() + 3600_000));
    const [ia, ib] = [await packImage(spec(a)), await packImage(spec(b))];
    expect(ib.layer.digest).toBe(ia.layer.digest);
    expect(ib.layer.diffId).toBe(ia.layer.diffId);
    expect(ib.manifest.digest).toBe(ia.manifest.digest);
    const other = await packImage(spec(a, { commit: "fedcba9876543210fedcba9876543210fedcba98" }));
    expect(other.layer.digest).toBe(ia.layer.digest);
    expect(other.manifest.digest).not.toBe(ia.manifest.digest);
    writeFileSync(path.join(b, "server.js"), "changed\n");
    expect((await packImage(spec(b))).layer.digest).not.toBe(ia.layer.digest);
  });

  test("a layer of one stream chunk, compressed in one call, has the bytes the stream gives", async () => {
    const body = Array.from({ length: 5_000 }, (_, i) => `line ${i} ${(i * 7919) % 10007}`).join("\n");
    for (const [name, files] of [
      ["one-chunk-small", FILES],
      ["one-chunk-large", [...FILES, ["dist/bundle.js", body.slice(0, 50_000)]]],
    ] as Array<[string, Array<[string, string]>]>) {
      const dir = tree(name, files);
      const streamed = await packLayer(dir, path.join(root, `${name}-streamed.tar.gz`), COMMIT_TIME, { stream: true });
      const oneCall = await packLayer(dir, path.join(root, `${name}-one-call.tar.gz`), COMMIT_TIME);
      expect(oneCall).toMatchObject({ digest: streamed.digest, diffId: streamed.diffId, size: streamed.size, entries: streamed.entries });
      const bytes = await Bun.file(oneCall.file).bytes();
      expect(Buffer.compare(Buffer.from(bytes), Buffer.from(await Bun.file(streamed.file).bytes()))).toBe(0);
      expect(Bun.gunzipSync(bytes).length).toBeLessThanOrEqual(64 * 1024);
    }
    expect(Bun.gunzipSync(await Bun.file(path.join(root, "one-chunk-large-one-call.tar.gz")).bytes()).length).toBeGreaterThan(50_000);
  });

  test("config and manifest: entrypoint, command, working dir, port, labels, one gzip layer", async () => {
    const img = await packImage(spec(tree("cfg", FILES), { port: 3000, start: "npm start" }));
    const cfg = JSON.parse(new TextDecoder().decode(img.config.bytes));
    expect(cfg.os).toBe("linux");
    expect(cfg.created).toBe("2026-01-02T03:04:05.000Z");
    expect(cfg.config).toEqual({
      User: "1000:1000",
      Env: ["PORT=3000"],
      Entrypoint: ["/bin/sh", "-c"],
      Cmd: ["npm start"],
      WorkingDir: "/app",
      ExposedPorts: { "3000/tcp": {} },
      Labels: { "org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567", "org.opencontainers.image.source": "shop/web", "dev.ops.runtime": "process" },
    });
    expect(cfg.rootfs).toEqual({ type: "layers", diff_ids: [img.layer.diffId] });
    const man = JSON.parse(new TextDecoder().decode(img.manifest.bytes));
    expect(man).toMatchObject({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: img.config.digest, size: img.config.size },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: img.layer.digest, size: img.layer.size }],
    });
    expect(img.layer.size).toBe(Bun.file(img.layer.file).size);
    expect(`sha256:${new Bun.CryptoHasher("sha256").update(await Bun.file(img.layer.file).arrayBuffer()).digest("hex")}`).toBe(img.layer.digest);
  });

  test("refused: a symlink out of the output, an absolute symlink, a FIFO; the message names the path", async () => {
    const up = tree("esc", [["x", "1"]]);
    symlinkSync("../../etc/passwd", path.join(up, "leak"));
    await expect(packImage(spec(up))).rejects.toThrow("the symlink leak points outside the output directory");
    const abs = tree("abs", [["x", "1"]]);
    symlinkSync("/etc/shadow", path.join(abs, "shadow"));
    await expect(packImage(spec(abs))).rejects.toBeInstanceOf(ImageRefused);
    await expect(packImage(spec(abs))).rejects.toThrow("shadow points to the absolute path /etc/shadow");
    const dotted = tree("dotted", [["x", "1"]]);
    symlinkSync("/usr/../etc/shadow", path.join(dotted, "shadow"));
    await expect(packImage(spec(dotted))).rejects.toThrow("shadow points to the absolute path /usr/../etc/shadow");
    const fifo = tree("fifo", [["x", "1"]]);
    expect((await run(["mkfifo", path.join(fifo, "pipe")], { cwd: root })).code).toBe(0);
    await expect(packImage(spec(fifo))).rejects.toThrow("pipe is a FIFO");
    await expect(packImage(spec(fifo, { layerFile: path.join(fifo, "layer.tgz") }))).rejects.toThrow("outside the directory it packs");
  });

  test("a venv's link into the host's toolchain is packed as that link (it resolves inside the sandbox)", async () => {
    const venv = tree("venv", [["x", "1"]]);
    mkdirSync(path.join(venv, ".venv/bin"), { recursive: true });
    symlinkSync("/usr/bin/python3", path.join(venv, ".venv/bin/python3"));
    symlinkSync("python3", path.join(venv, ".venv/bin/python"));
    const img = await packImage(spec(venv));
    const listed = await run(["tar", "-tvzf", img.layer.file], { cwd: root });
    expect(listed.stdout).toContain("app/.venv/bin/python3 -> /usr/bin/python3");
    expect(listed.stdout).toContain("app/.venv/bin/python -> python3");
  });

  test("refused: a character device, a block device and a socket, each named (ops is root: it could read a device)", async () => {
    const chr = tree("chr", [["x", "1"]]);
    expect((await run(["mknod", path.join(chr, "null"), "c", "1", "3"], { cwd: root })).code).toBe(0);
    await expect(packImage(spec(chr))).rejects.toThrow("null is a device; only files, directories and symlinks can be packed");
    const blk = tree("blk", [["x", "1"]]);
    expect((await run(["mknod", path.join(blk, "disk"), "b", "7", "0"], { cwd: root })).code).toBe(0);
    await expect(packImage(spec(blk))).rejects.toThrow("disk is a device");
    const sock = tree("sock", [["x", "1"]]);
    const server = Bun.listen({ unix: path.join(sock, "app.sock"), socket: { data() {} } });
    try {
      await expect(packImage(spec(sock))).rejects.toThrow("app.sock is a socket");
    } finally {
      server.stop(true);
    }
  });

  test("setuid and setgid bits are dropped from files and directories (the sticky bit stays)", async () => {
    const dir = tree("suid", [["bin/tool", "#!/bin/sh\n"], ["shared/x", "1"]]);
    chmodSync(path.join(dir, "bin/tool"), 0o6755);
    chmodSync(path.join(dir, "shared"), 0o3775);
    const img = await packImage(spec(dir));
    const listing = await run(["tar", "--numeric-owner", "-tvzf", img.layer.file], { cwd: root });
    const modes = new Map(listing.stdout.trim().split("\n").map((l) => l.split(/\s+/)).map((r) => [r.at(-1)!, r[0]]));
    expect(modes.get("app/bin/tool")).toBe("-rwxr-xr-x");
    expect(modes.get("app/shared/")).toBe("drwxrwxr-t");
  });

  test("a hard link to a file outside the output is refused; hard links inside it are packed as links", async () => {
    const ctx = tree("hl-ctx", [["secret.txt", "outside the output\n"], ["dist/a.js", "1"]]);
    linkSync(path.join(ctx, "dist/a.js"), path.join(ctx, "dist/b.js"));
    expect((await packImage(spec(path.join(ctx, "dist")))).entries).toBe(3);
    linkSync(path.join(ctx, "secret.txt"), path.join(ctx, "dist/copy.txt"));
    await expect(packImage(spec(path.join(ctx, "dist")))).rejects.toThrow("copy.txt is a hard link to a file outside the output directory (2 links, 1 inside it)");
  });
});
