/**
 * A small test image for the runtime and ingress tests, as ops's native builder writes them: one
 * gzip tar layer of a Node HTTP app under `/app`, a config whose Cmd runs it with the host's
 * `node` through `/bin/sh -c`, written as an OCI image layout and pushed into a test app's
 * embedded registry with real `skopeo copy`. Then pulled and unpacked the way ops does it.
 */
import path from "node:path";
import { create as tarCreate } from "tar";
import { expect } from "bun:test";
import { tempDir, type TestApp } from "./harness";
import { registryCast, writeOciLayout, writeTree, type RegistryCast } from "./support/registries";
import { skopeo } from "./support/builds";
import { readImage, type PulledImage } from "../src/domains/registries/oci/pull";
import { unpackImage } from "../src/adapters/runtime/unpack";
import type { RuntimeImage } from "../src/adapters/runtime/types";

/**
 * The app: `/` says who answered and what it sees; `/headers` echoes request headers; `/echo`
 * streams the request body back as it arrives; `/bytes?n=` streams n bytes, pausing after the
 * first chunk until `/release` is called on the same replica; `/crash` exits 3; `/hog` allocates
 * until the memory limit stops it; `/tmp-fill?mb=` writes that many MiB to /tmp and says how far
 * it got and why it stopped; `/connect?host=&port=` tries a TCP connection from inside the sandbox
 * and says whether it opened or why not; WebSocket upgrades on any path echo every message.
 */
export const APP_JS = String.raw`
const http = require("http");
const fs = require("fs");
const crypto = require("crypto");
const started = Date.now();
let release = null;
const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/headers") return res.end(JSON.stringify(req.headers));
  if (url.pathname === "/echo") {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    req.pipe(res);
    return;
  }
  if (url.pathname === "/bytes") {
    const n = Number(url.searchParams.get("n") || "0");
    const chunk = Buffer.alloc(64 * 1024, 97);
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(n) });
    let sent = 0;
    const pump = () => {
      while (sent < n) {
        const part = chunk.subarray(0, Math.min(chunk.length, n - sent));
        sent += part.length;
        if (!res.write(part)) return res.once("drain", pump);
      }
      res.end();
    };
    res.write(chunk.subarray(0, Math.min(chunk.length, n)));
    sent = Math.min(chunk.length, n);
    release = pump;
    return;
  }
  if (url.pathname === "/release") {
    const r = release;
    release = null;
    res.end(r ? "released" : "nothing to release");
    if (r) r();
    return;
  }
  if (url.pathname === "/crash") {
    res.end("bye");
    setTimeout(() => process.exit(3), 10);
    return;
  }
  if (url.pathname === "/tmp-fill") {
    const mb = Number(url.searchParams.get("mb") || "0");
    const chunk = Buffer.alloc(1024 * 1024, 120);
    let written = 0, code = null;
    try {
      const fd = fs.openSync("/tmp/fill.bin", "w");
      try { for (let i = 0; i < mb; i++) written += fs.writeSync(fd, chunk); } finally { fs.closeSync(fd); }
    } catch (e) { code = e.code; }
    try { fs.unlinkSync("/tmp/fill.bin"); } catch {}
    return res.end(JSON.stringify({ written, code }));
  }
  if (url.pathname === "/hog") {
    res.end("eating");
    const keep = [];
    setInterval(() => { for (let i = 0; i < 8; i++) keep.push(Buffer.alloc(4 * 1024 * 1024, i + 1)); }, 20);
    return;
  }
  if (url.pathname === "/connect") {
    const sock = require("net").connect({ host: url.searchParams.get("host"), port: Number(url.searchParams.get("port")), timeout: 3000 });
    const done = (r) => { sock.destroy(); if (!res.headersSent) res.end(JSON.stringify(r)); };
    sock.on("connect", () => done({ ok: true, code: null }));
    sock.on("timeout", () => done({ ok: false, code: "ETIMEDOUT" }));
    sock.on("error", (e) => done({ ok: false, code: e.code }));
    return;
  }
  if (url.pathname === "/slow") {
    setTimeout(() => res.end("slow done " + process.env.REPLICA_NAME), Number(url.searchParams.get("ms") || "300"));
    return;
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({
    replica: process.env.REPLICA_NAME || null,
    port: process.env.PORT,
    greeting: process.env.GREETING,
    secret: process.env.SECRET || null,
    cwd: process.cwd(),
    uid: process.getuid(),
    pid: process.pid,
    env_keys: Object.keys(process.env).sort(),
    sees: Object.fromEntries((process.env.CHECK_PATHS || "").split(":").filter(Boolean).map((p) => [p, fs.existsSync(p)])),
    tmp_writable: (() => { try { fs.writeFileSync("/tmp/x", "1"); return true; } catch { return false; } })(),
    app_writable: (() => { try { fs.writeFileSync("/app/x", "1"); return true; } catch { return false; } })(),
    up_ms: Date.now() - started,
  }));
});
// A minimal RFC 6455 echo: enough for text and binary frames, ping and close.
server.on("upgrade", (req, socket) => {
  const key = req.headers["sec-websocket-key"];
  const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
  const proto = req.headers["sec-websocket-protocol"];
  socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n" + (proto ? "Sec-WebSocket-Protocol: " + proto.split(",")[0].trim() + "\r\n" : "") + "\r\n");
  let buf = Buffer.alloc(0);
  const send = (op, payload) => {
    const len = payload.length;
    const head = len < 126 ? Buffer.from([0x80 | op, len]) : len < 65536 ? Buffer.from([0x80 | op, 126, len >> 8, len & 255]) : (() => { const b = Buffer.alloc(10); b[0] = 0x80 | op; b[1] = 127; b.writeBigUInt64BE(BigInt(len), 2); return b; })();
    socket.write(Buffer.concat([head, payload]));
  };
  socket.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (buf.length < 2) return;
      const op = buf[0] & 15;
      let len = buf[1] & 127;
      let off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      const masked = (buf[1] & 128) !== 0;
      const need = off + (masked ? 4 : 0) + len;
      if (buf.length < need) return;
      const mask = masked ? buf.subarray(off, off + 4) : null;
      const payload = Buffer.from(buf.subarray(off + (masked ? 4 : 0), need));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      buf = buf.subarray(need);
      if (op === 8) { send(8, payload.subarray(0, 2)); socket.end(); return; }
      if (op === 9) { send(10, payload); continue; }
      if (op === 1 || op === 2) send(op, op === 1 ? Buffer.from("echo:" + payload.toString()) : payload);
    }
  });
  socket.on("error", () => {});
});
process.on("SIGTERM", () => {
  console.log("got SIGTERM");
  server.close();
  setTimeout(() => process.exit(0), 100);
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening on " + process.env.PORT));
`;

export interface TestImage {
  layout: string;
  manifestDigest: string;
}

/** Write the test image as an OCI layout tagged `tag`. */
export async function writeTestImage(tag = "v1", extraFiles: Record<string, string> = {}): Promise<TestImage> {
  const src = tempDir("ops-image-src-");
  writeTree(src, { "app/server.js": APP_JS, ...extraFiles });
  const chunks: Buffer[] = [];
  const top = [...new Set(["app", ...Object.keys(extraFiles).map((f) => f.split("/")[0])])];
  for await (const c of tarCreate({ cwd: src, portable: true, mtime: new Date(1_700_000_000_000) }, top) as unknown as AsyncIterable<Buffer>) chunks.push(c);
  const tar = new Uint8Array(Buffer.concat(chunks));
  const layout = tempDir("ops-image-layout-");
  const { manifestDigest } = writeOciLayout(
    layout,
    tar,
    {
      architecture: "amd64",
      os: "linux",
      config: {
        Entrypoint: ["/bin/sh", "-c"],
        Cmd: ["exec node server.js"],
        WorkingDir: "/app",
        Env: ["PORT=8080", "GREETING=from-image", "NODE_ENV=production"],
        ExposedPorts: { "8080/tcp": {} },
        Labels: { "org.opencontainers.image.revision": `rev-${tag}`, "dev.ops.runtime": "process" },
      },
    },
    tag,
  );
  return { layout, manifestDigest };
}

/** Push `image` into the app's registry as `<project>/<repo>:<tag>` with real skopeo. */
export async function skopeoPush(t: TestApp, cast: RegistryCast, image: TestImage, repo: string, tag: string): Promise<void> {
  const host = new URL(t.url).host;
  const res = await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `ci:${cast.publisherToken}`, `oci:${image.layout}:${tag}`, `docker://${host}/${cast.project.slug}/${repo}:${tag}`]);
  if (res.code !== 0) throw new Error(`skopeo copy failed (${res.code}): ${res.stderr}`);
}

export interface PreparedImage {
  cast: RegistryCast;
  pulled: PulledImage;
  image: RuntimeImage;
}

/** Build, push, pull and unpack the test image in `t`'s registry; the runtime's input. */
export async function prepareTestImage(t: TestApp, repo = "web", tag = "v1"): Promise<PreparedImage> {
  const cast = await registryCast(t);
  const built = await writeTestImage(tag);
  await skopeoPush(t, cast, built, repo, tag);
  const pulled = await readImage(t.core, `${cast.project.slug}/${repo}`, tag);
  expect(pulled.digest).toBe(built.manifestDigest);
  const unpacked = await unpackImage(path.join(t.dataDir, "run", "images"), pulled.digest, pulled.layers);
  return { cast, pulled, image: { digest: pulled.digest, config: pulled.config, root: unpacked.root } };
}

/** Poll `check` until it returns a value (not undefined/false) or fail after `ms`. */
export async function until<T>(what: string, check: () => T | false | null | undefined | Promise<T | false | null | undefined>, ms = 20_000, every = 50): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined && v !== null && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    await Bun.sleep(every);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
}
