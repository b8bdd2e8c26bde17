/**
 * The ingress's HTTPS listener on the wire, with curl and openssl as the clients: the certificate
 * chosen by SNI, a certificate added while a kept-alive connection stays open, TLS below 1.2 and
 * weak suites refused, an unknown name refused at the handshake, the same request handling as on
 * the plain listener (X-Forwarded-Proto https), and the plain listener's ACME challenge answers
 * and 308 redirects.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import { createIngress, type Ingress } from "./ingress";

const dir = mkdtempSync(path.join(tmpdir(), "ops-ingress-tls-"));

/** A self-signed P-256 certificate for `host`, written to <dir>/<host>.{crt,key}. */
function selfSigned(host: string): { cert: string; key: string; file: string } {
  const base = path.join(dir, host.replace("*", "_"));
  const r = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", `/CN=${host}`, "-addext", `subjectAltName=DNS:${host}`, "-keyout", `${base}.key`, "-out", `${base}.crt`], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  return { cert: readFileSync(`${base}.crt`, "utf8"), key: readFileSync(`${base}.key`, "utf8"), file: `${base}.crt` };
}

let ingress: Ingress;
let plainPort = 0;
let tlsPort = 0;
let upstream: ReturnType<typeof Bun.serve>;
const a = selfSigned("a.test");
const b = selfSigned("b.test");

async function curl(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(["curl", "-sS", "--max-time", "10", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

async function sClient(args: string[]): Promise<string> {
  const p = Bun.spawn(["sh", "-c", `echo | timeout 10 openssl s_client -connect 127.0.0.1:${tlsPort} ${args.join(" ")} 2>&1`], { stdout: "pipe" });
  return await new Response(p.stdout).text();
}

beforeAll(async () => {
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req, server) => {
      if (new URL(req.url).pathname === "/ws" && server.upgrade(req, { data: undefined })) return undefined;
      return new Response(`${new URL(req.url).pathname} proto=${req.headers.get("x-forwarded-proto")} host=${req.headers.get("host")}`);
    },
    websocket: {
      message(ws, m) {
        ws.send(`echo ${m}`);
      },
    },
  });
  ingress = createIngress({});
  plainPort = ingress.listen("127.0.0.1", 0).port;
  tlsPort = (await ingress.listenTls("127.0.0.1", 0)).port;
  ingress.certificates.set("a.test", a);
  const up = [{ host: "127.0.0.1", port: upstream.port! }];
  ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["a.test", "b.test"], redirectHttp: true }], upstreams: up });
  ingress.setService({ service: { project: "p", environment: "production", service: "plain" }, routes: [{ hosts: ["plain.test"], redirectHttp: false }], upstreams: up });
});

afterAll(async () => {
  await ingress.stop(1000);
  upstream.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe("ingress TLS listener", () => {
  test("the certificate is chosen by SNI and the request takes the plain listener's path, told it came over https", async () => {
    const r = await curl(["--cacert", a.file, "--resolve", `a.test:${tlsPort}:127.0.0.1`, `https://a.test:${tlsPort}/hello?x=1`]);
    expect(r.err).toBe("");
    expect(r.out).toBe(`/hello proto=https host=a.test:${tlsPort}`);
    expect(ingress.metrics().requests).toBeGreaterThan(0);
  });

  test("a name with no certificate is refused at the handshake, never answered with another name's", async () => {
    const r = await curl(["--cacert", b.file, "--resolve", `b.test:${tlsPort}:127.0.0.1`, `https://b.test:${tlsPort}/`]);
    expect(r.code).not.toBe(0);
    const none = await sClient(["-noservername"]);
    expect(none).not.toContain("CN = a.test");
  });

  test("a certificate added while a kept-alive connection is open serves the next handshake; the open connection goes on", async () => {
    const sock = tls.connect({ host: "127.0.0.1", port: tlsPort, servername: "a.test", ca: a.cert });
    await new Promise<void>((res, rej) => sock.once("secureConnect", () => res()).once("error", rej));
    const ask = () =>
      new Promise<string>((res) => {
        sock.once("data", (d: Buffer) => res(d.toString()));
        sock.write("GET /one HTTP/1.1\r\nhost: a.test\r\n\r\n");
      });
    expect(await ask()).toContain("/one proto=https");
    ingress.certificates.set("b.test", b);
    const r = await curl(["--cacert", b.file, "--resolve", `b.test:${tlsPort}:127.0.0.1`, `https://b.test:${tlsPort}/two`]);
    expect(r.out).toBe(`/two proto=https host=b.test:${tlsPort}`);
    expect(await ask()).toContain("/one proto=https");
    sock.destroy();
  });

  test("TLS 1.1 and a suite without forward secrecy are refused; TLS 1.2 and 1.3 are spoken", async () => {
    expect(await sClient(["-servername", "a.test", "-tls1_1"])).toMatch(/alert protocol version|no protocols available|Cipher is \(NONE\)/);
    expect(await sClient(["-servername", "a.test", "-tls1_2", "-cipher", "AES128-SHA"])).toContain("Cipher is (NONE)");
    expect(await sClient(["-servername", "a.test", "-tls1_2"])).toMatch(/TLSv1\.2, Cipher is ECDHE-ECDSA-/);
    expect(await sClient(["-servername", "a.test", "-tls1_3"])).toContain("TLSv1.3, Cipher is TLS_");
  });

  test("plain HTTP to a host with a certificate and redirect_http gets a 308 keeping path and query", async () => {
    const r = await curl(["-i", "-H", "host: a.test", `http://127.0.0.1:${plainPort}/shop/cart?id=7&x=%20`]);
    expect(r.out).toMatch(/^HTTP\/1\.1 308 /);
    expect(r.out).toContain(`location: https://a.test:${tlsPort}/shop/cart?id=7&x=%20\r\n`);
    const followed = await curl(["-L", "--cacert", a.file, "--resolve", `a.test:${plainPort}:127.0.0.1`, "--resolve", `a.test:${tlsPort}:127.0.0.1`, `http://a.test:${plainPort}/x`]);
    expect(followed.out).toBe(`/x proto=https host=a.test:${tlsPort}`);
  });

  test("no redirect for a domain with redirect_http false, nor for a host without a certificate yet", async () => {
    const off = await curl(["-H", "host: plain.test", `http://127.0.0.1:${plainPort}/p`]);
    expect(off.out).toBe("/p proto=http host=plain.test");
    ingress.certificates.delete("b.test");
    const noCert = await curl(["-H", "host: b.test", `http://127.0.0.1:${plainPort}/q`]);
    expect(noCert.out).toBe("/q proto=http host=b.test");
  });

  test("the plain listener answers ACME HTTP-01 challenges it holds, and 404s others without routing them", async () => {
    ingress.setChallenges((token) => (token === "tok-1" ? "tok-1.thumb" : null));
    const hit = await curl(["-i", "-H", "host: a.test", `http://127.0.0.1:${plainPort}/.well-known/acme-challenge/tok-1`]);
    expect(hit.out).toMatch(/^HTTP\/1\.1 200 /);
    expect(hit.out).toContain("content-type: text/plain");
    expect(hit.out.endsWith("\r\n\r\ntok-1.thumb")).toBe(true);
    const miss = await curl(["-i", "-H", "host: a.test", `http://127.0.0.1:${plainPort}/.well-known/acme-challenge/other`]);
    expect(miss.out).toMatch(/^HTTP\/1\.1 404 /);
    // Over HTTPS the path is the app's.
    const overTls = await curl(["--cacert", a.file, "--resolve", `a.test:${tlsPort}:127.0.0.1`, `https://a.test:${tlsPort}/.well-known/acme-challenge/tok-1`]);
    expect(overTls.out).toBe(`/.well-known/acme-challenge/tok-1 proto=https host=a.test:${tlsPort}`);
    ingress.setChallenges(null);
  });

  test("a WebSocket upgrade over TLS is relayed like on the plain listener", async () => {
    const sock = tls.connect({ host: "127.0.0.1", port: tlsPort, servername: "a.test", ca: a.cert });
    await new Promise<void>((res, rej) => sock.once("secureConnect", () => res()).once("error", rej));
    let got = Buffer.alloc(0);
    const until = async (ok: () => boolean) => {
      for (let i = 0; i < 200 && !ok(); i++) await Bun.sleep(10);
    };
    sock.on("data", (d: Buffer) => (got = Buffer.concat([got, d])));
    sock.write("GET /ws HTTP/1.1\r\nhost: a.test\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n");
    await until(() => got.includes("\r\n\r\n"));
    expect(got.toString("latin1")).toMatch(/^HTTP\/1\.1 101 /);
    got = Buffer.alloc(0);
    // A masked text frame "hi" (FIN, opcode 1, mask key 1 2 3 4).
    const mask = [1, 2, 3, 4];
    const payload = Buffer.from("hi").map((b, i) => b ^ mask[i % 4]!);
    sock.write(Buffer.concat([Buffer.from([0x81, 0x80 | 2, ...mask]), payload]));
    await until(() => got.length >= 9);
    expect(got.subarray(2).toString()).toBe("echo hi");
    sock.destroy();
  });

  test("a wildcard certificate serves one label below it", async () => {
    const w = selfSigned("*.w.test");
    ingress.certificates.set("*.w.test", w);
    expect(ingress.certificates.context("x.w.test")).not.toBeNull();
    expect(ingress.certificates.context("y.x.w.test")).toBeNull();
  });
});
