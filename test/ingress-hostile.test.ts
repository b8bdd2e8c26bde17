/**
 * The ingress against hostile visitors and out-of-step apps, on raw sockets (issue 32): an
 * absolute-form request naming one host in its target and another in Host, and one with no Host
 * at all; a malformed chunked body that arrives with its head while a fresh replica connection
 * is still opening; forwarding fields spelled with underscores; an app that writes a response
 * nobody asked for on a pooled connection; a client that never reads what it asked for.
 */
import { describe, test, expect, afterEach, beforeEach } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { createIngress, type Ingress, type IngressOptions } from "../src/adapters/ingress/ingress";
import type { ServiceRef } from "../src/adapters/ingress/table";
import { rawServer, streamingReplica, talk, type Raw } from "./support/ingress";
import { until } from "./runtime-fixtures";

const servers: Raw[] = [];
const serve = (answer: Parameters<typeof rawServer>[0]) => {
  const s = rawServer(answer);
  servers.push(s);
  return s;
};
const ok = (body: string) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const web = (project: string): ServiceRef => ({ project, environment: "production", service: "web" });
const logged: string[] = [];
const log = { debug: () => undefined, info: () => undefined, warn: (m: string) => void logged.push(m), error: (m: string) => void logged.push(m), child: () => log };

let ingress: Ingress;
let port: number;
const rejections: unknown[] = [];
const onRejection = (e: unknown) => void rejections.push(e);

function start(opts: IngressOptions = {}): void {
  ingress = createIngress({ downMs: 10, log: log as unknown as IngressOptions["log"], ...opts });
  port = ingress.listen("127.0.0.1", 0).port;
}
const route = (up: { port: number }, hosts = ["app.test"]) => ingress.setService({ service: web("p"), routes: [{ hosts }], upstreams: [{ host: "127.0.0.1", port: up.port }] });

beforeEach(() => {
  logged.length = 0;
  rejections.length = 0;
  process.on("unhandledRejection", onRejection);
});
afterEach(async () => {
  process.off("unhandledRejection", onRejection);
  await ingress?.stop(100);
  for (const s of servers.splice(0)) s.stop();
});

/** A client connection kept open: what it received, and whether the ingress closed it. */
function client(at: number): Promise<{ s: Socket<undefined>; got: () => string; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    let text = "";
    let closed = false;
    Bun.connect({
      hostname: "127.0.0.1",
      port: at,
      socket: {
        open(s) {
          resolve({ s, got: () => text, closed: () => closed });
        },
        data(_s, b) {
          text += b.toString("latin1");
        },
        close() {
          closed = true;
        },
      },
    }).catch(reject);
  });
}

describe("absolute-form targets and Host (RFC 9112 §3.2)", () => {
  beforeEach(() => start());

  test("an absolute-form request reaches the app of its target with that target's Host, whatever Host the client sent", async () => {
    const alpha = serve((_h, s) => s.write(ok("alpha")));
    const beta = serve((_h, s) => s.write(ok("beta")));
    ingress.setService({ service: web("alpha"), routes: [], upstreams: [{ host: "127.0.0.1", port: alpha.port }] });
    ingress.setService({ service: web("beta"), routes: [], upstreams: [{ host: "127.0.0.1", port: beta.port }] });
    const res = await talk(port, "GET http://web.production.beta.localhost/x?q=1 HTTP/1.1\r\nHost: evil.example\r\nX-A: 1\r\n\r\n", (g) => g.endsWith("beta"));
    expect(res.text).toStartWith("HTTP/1.1 200 ");
    expect(alpha.heads).toEqual([]);
    const head = beta.heads[0];
    expect(head).toStartWith("GET /x?q=1 HTTP/1.1\r\n");
    expect(head.match(/^host:.*$/gim)).toEqual(["Host: web.production.beta.localhost"]);
    expect(head).toContain("\r\nX-A: 1");
    expect(head).toContain("\r\nx-forwarded-host: web.production.beta.localhost");
    expect(head).not.toContain("evil.example");
    // HTTP/1.0 too, and a Host that names the other project.
    await talk(port, "GET http://web.production.beta.localhost/old HTTP/1.0\r\nHost: web.production.alpha.localhost\r\n\r\n", (g) => g.endsWith("beta"));
    expect(beta.heads[1].match(/^host:.*$/gim)).toEqual(["Host: web.production.beta.localhost"]);
    expect(alpha.heads).toEqual([]);
  });

  test("an HTTP/1.1 request without a Host field is a 400 and reaches no app, in absolute form too", async () => {
    const up = serve((_h, s) => s.write(ok("reached")));
    route(up);
    for (const req of ["GET http://app.test/x HTTP/1.1\r\n\r\n", "GET http://app.test/x HTTP/1.1\r\nX-A: 1\r\n\r\n", "GET /x HTTP/1.1\r\nX-A: 1\r\n\r\n"]) {
      const res = await talk(port, req);
      expect([req, res.text.slice(0, 12), res.closed]).toEqual([req, "HTTP/1.1 400", true]);
    }
    expect(up.heads).toEqual([]);
  });
});

describe("request bodies ops cannot frame", () => {
  beforeEach(() => start());

  test("a malformed chunk that arrives with its head while a fresh replica connection opens: an immediate 400, nothing thrown, the replica sees nothing", async () => {
    const up = serve((_h, s) => s.write(ok("reached")));
    route(up);
    const started = Date.now();
    const res = await talk(port, "POST /c HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", () => false, 10_000);
    expect([res.text.slice(0, 12), res.closed]).toEqual(["HTTP/1.1 400", true]);
    expect(res.text).toContain("a chunk size line is malformed");
    expect(Date.now() - started).toBeLessThan(5000);
    expect(up.heads).toEqual([]);
    expect(ingress.metrics().badRequests).toBe(1);
    expect(ingress.exchanges()).toBe(0);
    expect(ingress.inflight({ host: "127.0.0.1", port: up.port })).toBe(0);
    // The same on a pooled connection (attached at once), and the pool is not poisoned by either.
    expect(await (await fetch(`http://127.0.0.1:${port}/`, { headers: { host: "app.test" } })).text()).toBe("reached");
    const pooled = await talk(port, "POST /c HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n-1\r\n\r\n", () => false, 10_000);
    expect(pooled.text.slice(0, 12)).toBe("HTTP/1.1 400");
    expect(await (await fetch(`http://127.0.0.1:${port}/`, { headers: { host: "app.test" } })).text()).toBe("reached");
    expect(rejections).toEqual([]);
  });
});

describe("forwarding fields spelled with underscores", () => {
  beforeEach(() => start());

  test("names that read as a forwarding or framing field once `_` is `-` are dropped; other underscore names pass", async () => {
    const up = serve((_h, s) => s.write(ok("ok")));
    route(up);
    const spoofed = ["X_Forwarded_For: 6.6.6.1", "X-Forwarded_For: 6.6.6.2", "x_forwarded-for: 6.6.6.3", "X_Real_IP: 6.6.6.4", "X_Real-Ip: 6.6.6.5", "X_Forwarded_Host: evil.example", "X_FORWARDED_PROTO: gopher", "Transfer_Encoding: chunked", "Content_Length: 5", "Proxy_Connection: x"];
    await talk(port, `GET /u HTTP/1.1\r\nHost: app.test\r\n${spoofed.join("\r\n")}\r\nX_Under: kept\r\n\r\n`, (g) => g.endsWith("ok"));
    const head = up.heads[0];
    for (const line of spoofed) expect(head.toLowerCase()).not.toContain(line.slice(0, line.indexOf(":")).toLowerCase());
    expect(head).not.toMatch(/6\.6\.6|evil|gopher|chunked/);
    expect(head).toContain("\r\nX_Under: kept");
    expect(head.match(/^x[-_]forwarded[-_]for:.*$/gim)).toEqual(["x-forwarded-for: 127.0.0.1"]);
    expect(head.match(/^x[-_]real[-_]ip:.*$/gim)).toEqual(["x-real-ip: 127.0.0.1"]);
  });

  test("from a trusted proxy, the underscore spellings are dropped too (only the real fields' chain is kept)", async () => {
    start({ trustedProxies: ["127.0.0.1"] });
    const up = serve((_h, s) => s.write(ok("ok")));
    route(up);
    await talk(port, "GET /u HTTP/1.1\r\nHost: app.test\r\nX-Forwarded-For: 10.0.0.9\r\nX_Forwarded_For: 6.6.6.6\r\n\r\n", (g) => g.endsWith("ok"));
    expect(up.heads[0].match(/^x[-_]forwarded[-_]for:.*$/gim)).toEqual(["x-forwarded-for: 10.0.0.9, 127.0.0.1"]);
  });
});

describe("an app that answers what nobody asked", () => {
  beforeEach(() => start());

  /** A replica answering `ok-N` to the N-th request head, keeping its sockets so the test can write on them. */
  function app(): { port: number; accepted: () => number; gone: () => number; sockets: Array<Socket<{ buf: string }>>; stop(): void } {
    let n = 0;
    let gone = 0;
    const sockets: Array<Socket<{ buf: string }>> = [];
    const server: TCPSocketListener<{ buf: string }> = Bun.listen<{ buf: string }>({
      hostname: "127.0.0.1",
      port: 0,
      allowHalfOpen: true,
      socket: {
        open(s) {
          s.data = { buf: "" };
          sockets.push(s);
        },
        data(s, b) {
          s.data.buf += b.toString("latin1");
          for (let end = s.data.buf.indexOf("\r\n\r\n"); end >= 0; end = s.data.buf.indexOf("\r\n\r\n")) {
            s.data.buf = s.data.buf.slice(end + 4);
            s.write(ok(`ok-${++n}`));
          }
        },
        end() {
          gone++;
        },
        close() {
          gone++;
        },
      },
    });
    const a = { port: server.port, accepted: () => sockets.length, gone: () => gone, sockets, stop: () => server.stop(true) };
    servers.push({ ...a, heads: [], bodies: [] } as unknown as Raw);
    return a;
  }

  test("a late response that reaches the ingress in the same turn as the next client's request is never that client's answer", async () => {
    const up = app();
    route(up);
    expect((await talk(port, "GET /1 HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("ok-1"))).text).toEndWith("ok-1");
    await until("client 1's connection closed", () => ingress.metrics().connections === 0);
    const second = await client(port);
    await until("client 2 accepted", () => ingress.metrics().connections === 1);
    // Both land before the ingress's next turn: the request first, then the app's unsolicited answer.
    second.s.write("GET /2 HTTP/1.1\r\nHost: app.test\r\n\r\n");
    up.sockets[0].write(ok("LATE"));
    await until("client 2's answer", () => /ok-\d+$/.test(second.got()) || second.got().includes("LATE") || second.closed(), 10_000);
    expect(second.got()).not.toContain("LATE");
    expect(second.got()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*ok-\d+$/);
    second.s.end();
    // The out-of-step connection is never used again.
    expect((await talk(port, "GET /3 HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => /ok-\d+$/.test(g))).text).not.toContain("LATE");
    expect(up.accepted()).toBeGreaterThanOrEqual(2);
  });

  test("a late response on an idle pooled connection retires it at once, even when the app keeps it open", async () => {
    const up = app();
    route(up);
    await talk(port, "GET /1 HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("ok-1"));
    up.sockets[0].write(ok("LATE"));
    await until("the ingress closing the out-of-step connection", () => up.gone() > 0);
    const next = await talk(port, "GET /2 HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => /ok-\d+$/.test(g) || g.includes("LATE"));
    expect(next.text).not.toContain("LATE");
    expect(up.accepted()).toBe(2);
  });

  test("an answer that starts before the request was written whole retires the connection", async () => {
    // The replica stops reading after the first request, then answers the second one at once.
    let paused = false;
    const up = serve((head, s) => {
      if (head.startsWith("GET")) return void s.write(ok("first"));
      paused = true;
      s.pause();
      s.write(ok("early"));
    });
    route(up);
    await talk(port, "GET /1 HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("first"));
    const big = Buffer.alloc(32 << 20, 97);
    const res = await talk(port, Buffer.concat([Buffer.from(`POST /2 HTTP/1.1\r\nHost: app.test\r\nContent-Length: ${big.length}\r\n\r\n`), big]), () => false, 20_000);
    expect(paused).toBe(true);
    expect(res.text).toEndWith("early");
    expect(res.closed).toBe(true);
    expect((await talk(port, "GET /3 HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("first"))).text).toEndWith("first");
    expect(up.accepted).toBe(2);
  }, 30_000);
});

describe("a client that never reads its answer", () => {
  test("is cut after the send timeout without progress, and its replica connection is released", async () => {
    start({ sendTimeoutMs: 1000 });
    const total = 256 << 20;
    const server = streamingReplica(total);
    try {
      route({ port: server.port });
      const c = await client(port);
      c.s.write("GET /big HTTP/1.1\r\nHost: app.test\r\n\r\n");
      c.s.pause();
      await until("the replica writing into full buffers", () => server.written() > 0);
      const started = Date.now();
      // A paused client does not see its own socket close: the ingress's count says it.
      await until("the ingress closed the client that does not read", () => ingress.metrics().connections === 0, 15_000).catch(() => undefined);
      expect(ingress.metrics().connections).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
      await until("the replica's connection closed", () => server.closed(), 5000);
      expect(server.written()).toBeLessThan(total);
      expect(ingress.exchanges()).toBe(0);
      expect(ingress.inflight({ host: "127.0.0.1", port: server.port })).toBe(0);
      expect(ingress.metrics().sendTimeouts).toBe(1);
    } finally {
      server.stop();
    }
  }, 30_000);

  test("a client that reads slowly but keeps reading is not cut: each byte it takes starts the timeout again", async () => {
    start({ sendTimeoutMs: 1000 });
    const total = 16 << 20;
    const server = streamingReplica(total);
    try {
      route({ port: server.port });
      let got = 0;
      let closed = false;
      const s = await Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          data(_s, b) {
            got += b.length;
          },
          close() {
            closed = true;
          },
        },
      });
      s.write("GET /big HTTP/1.1\r\nHost: app.test\r\n\r\n");
      // Read for a moment, then nothing for 600 ms (under the timeout), over and over.
      const started = Date.now();
      while (got < total && !closed && Date.now() - started < 40_000) {
        s.pause();
        await Bun.sleep(600);
        s.resume();
        await Bun.sleep(5);
      }
      s.resume();
      await until("the whole answer", () => got >= total || closed, 20_000);
      expect([closed, got > total]).toEqual([false, true]);
      expect(ingress.metrics().sendTimeouts).toBe(0);
      s.end();
    } finally {
      server.stop();
    }
  }, 60_000);
});
