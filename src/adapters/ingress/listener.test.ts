/**
 * The client side's limits, on the wire: the head deadline (not extended by bytes arriving),
 * the idle timeout, a stalled body, connections per address and in total, and the forwarding
 * fields with and without a trusted proxy. Each limit shows in the ingress's metrics.
 */
import { describe, test, expect, afterEach } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { connect as netConnect } from "node:net";
import { createIngress, type Ingress, type IngressOptions } from "./ingress";

interface Backend {
  port: number;
  heads: string[];
  stop(): void;
}

/** A replica that records each head and answers `ok` (bodies are read by their length). */
function backend(): Backend {
  const b: Backend = { port: 0, heads: [], stop: () => undefined };
  const server: TCPSocketListener<{ buf: string; want: number }> = Bun.listen<{ buf: string; want: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "", want: -1 };
      },
      data(s, bytes) {
        s.data.buf += bytes.toString("latin1");
        for (;;) {
          if (s.data.want < 0) {
            const end = s.data.buf.indexOf("\r\n\r\n");
            if (end < 0) return;
            const head = s.data.buf.slice(0, end);
            b.heads.push(head);
            s.data.buf = s.data.buf.slice(end + 4);
            s.data.want = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
          }
          if (s.data.buf.length < s.data.want) return;
          s.data.buf = s.data.buf.slice(s.data.want);
          s.data.want = -1;
          s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
      },
    },
  });
  b.port = server.port;
  b.stop = () => server.stop(true);
  return b;
}

let ingress: Ingress | null = null;
let up: Backend | null = null;
const sockets: Array<{ end(): void }> = [];

function start(opts: IngressOptions): number {
  up = backend();
  ingress = createIngress(opts);
  const port = ingress.listen("127.0.0.1", 0).port;
  ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: up.port }] });
  return port;
}

afterEach(async () => {
  for (const s of sockets.splice(0)) s.end();
  await ingress?.stop(100);
  up?.stop();
  ingress = null;
});

/** A client connection: what it received, and a promise of its close. */
function open(port: number): Promise<{ s: Socket<undefined>; got: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    let text = "";
    let onClose: (at: number) => void = () => undefined;
    const closed = new Promise<number>((r) => (onClose = r));
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(s) {
          sockets.push(s);
          resolve({ s, got: () => text, closed });
        },
        data(_s, b) {
          text += b.toString("latin1");
        },
        close() {
          onClose(Date.now());
        },
      },
    }).catch(reject);
  });
}

describe("deadlines", () => {
  test("a head sent a byte at a time is cut at the head deadline with a 408, however steadily the bytes come", async () => {
    const port = start({ headerTimeoutMs: 400 });
    const c = await open(port);
    const head = `GET / HTTP/1.1\r\nHost: app.test\r\nX-Slow: ${"x".repeat(300)}\r\n\r\n`;
    const started = Date.now();
    let i = 0;
    const dripping = setInterval(() => {
      if (i < head.length) c.s.write(head[i++]);
    }, 20);
    const closedAt = await c.closed;
    clearInterval(dripping);
    expect(c.got()).toStartWith("HTTP/1.1 408 ");
    // Closed at the deadline, while the head (over 6 s at this pace, longer on a busy machine)
    // was still arriving: the bytes did not extend it.
    expect(i).toBeLessThan(head.length);
    expect(closedAt - started).toBeLessThan(5000);
    expect(up!.heads).toEqual([]);
    expect(ingress!.metrics()).toMatchObject({ headTimeouts: 1, connections: 0 });
  });

  test("a connection that never sends, and a kept-alive one left idle, are closed without a word", async () => {
    const port = start({ headerTimeoutMs: 300, idleTimeoutMs: 300 });
    const silent = await open(port);
    const idle = await open(port);
    idle.s.write("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n");
    await Promise.all([silent.closed, idle.closed]);
    expect(silent.got()).toBe("");
    expect(idle.got()).toEndWith("\r\n\r\nok");
    expect(ingress!.metrics()).toMatchObject({ idleTimeouts: 2, headTimeouts: 0, requests: 1 });
  });

  test("a body that stops arriving ends its exchange with a 408; the replica's connection is not reused", async () => {
    const port = start({ bodyTimeoutMs: 300 });
    const c = await open(port);
    c.s.write("POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Length: 10\r\n\r\nab");
    await c.closed;
    expect(c.got()).toStartWith("HTTP/1.1 408 ");
    expect(ingress!.metrics()).toMatchObject({ bodyTimeouts: 1 });
    expect(ingress!.exchanges()).toBe(0);
    const next = await open(port);
    next.s.write("GET /next HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n");
    await next.closed;
    expect(next.got()).toEndWith("ok");
    expect(up!.heads.map((h) => h.split("\r\n")[0])).toEqual(["POST /upload HTTP/1.1", "GET /next HTTP/1.1"]);
  });
});

describe("connection caps", () => {
  test("past OPS_INGRESS_MAX_CONN_PER_IP an address gets a 503 and a close; other addresses and later connections are served", async () => {
    const port = start({ maxConnPerIp: 3 });
    const held = await Promise.all([open(port), open(port), open(port)]);
    const over = await open(port);
    await over.closed;
    expect(over.got()).toStartWith("HTTP/1.1 503 ");
    expect(over.got()).toContain("too many connections");
    // Another loopback address is counted on its own.
    const other = await new Promise<string>((resolve) => {
      let text = "";
      const s = netConnect({ host: "127.0.0.1", port, localAddress: "127.0.0.2" }, () => s.write("GET / HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n"));
      s.on("data", (b) => (text += b.toString("latin1")));
      s.on("close", () => resolve(text));
    });
    expect(other).toEndWith("ok");
    held[0].s.end();
    await held[0].closed;
    const again = await open(port);
    again.s.write("GET / HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n");
    await again.closed;
    expect(again.got()).toEndWith("ok");
    expect(ingress!.metrics()).toMatchObject({ refusedPerAddress: 1, refusedTotal: 0 });
  });

  test("past OPS_INGRESS_MAX_CONNECTIONS every address gets a 503", async () => {
    const port = start({ maxConnections: 2 });
    await Promise.all([open(port), open(port)]);
    const over = await open(port);
    await over.closed;
    expect(over.got()).toStartWith("HTTP/1.1 503 ");
    expect(ingress!.metrics()).toMatchObject({ refusedTotal: 1, connections: 2 });
  });
});

describe("forwarding fields", () => {
  const send = async (port: number) => {
    const c = await open(port);
    c.s.write("GET / HTTP/1.1\r\nHost: app.test\r\nX-Forwarded-For: 203.0.113.9\r\nX-Real-IP: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n");
    await c.closed;
    return up!.heads.at(-1)!;
  };

  test("without OPS_TRUSTED_PROXIES the client's own are dropped and the peer's address set", async () => {
    const head = await send(start({}));
    expect(head).toContain("\r\nx-forwarded-for: 127.0.0.1\r\nx-forwarded-proto: http\r\nx-forwarded-host: app.test\r\nx-real-ip: 127.0.0.1\r\nforwarded: for=127.0.0.1;host=app.test;proto=http");
    expect(head).not.toContain("6.6.6.6");
    expect(head).not.toContain("203.0.113.9");
    expect(head).not.toContain("https");
  });

  test("from a trusted proxy the chain is kept and appended to", async () => {
    const head = await send(start({ trustedProxies: ["127.0.0.0/8"] }));
    expect(head).toContain("\r\nx-forwarded-for: 203.0.113.9, 127.0.0.1\r\nx-forwarded-proto: https\r\nx-forwarded-host: app.test\r\nx-real-ip: 203.0.113.9\r\nforwarded: for=6.6.6.6, for=127.0.0.1;host=app.test;proto=http");
  });
});
