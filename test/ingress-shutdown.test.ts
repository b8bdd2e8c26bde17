/**
 * Shutdown with no open client leaves no exchange in flight (issue 20 §6: after an attack run,
 * shutdown logged "ingress requests still in flight" with every socket closed). Clients leave in
 * every way an exchange can be cut: reset in the middle of a body, gone while the replica thinks,
 * gone while a streamed answer waits for them to read, half-closed in a body or after a whole
 * request, pipelined requests left behind, an answer before the body, a replica that cuts its
 * answer, an `Expect: 100-continue` never followed, a WebSocket tunnel. Once every client's socket
 * has closed, no exchange may remain, and `stop` returns at once without that warning.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { connect, type Socket } from "node:net";
import type { TCPSocketListener } from "bun";
import { createIngress, type Ingress } from "../src/adapters/ingress";
import { createLogger } from "../src/core/log";
import { until } from "./runtime-fixtures";

const lines: string[] = [];
let ingress: Ingress;
let port: number;
let replica: ReturnType<typeof Bun.serve>;
let raw: TCPSocketListener<{ buf: string }>;

/** The replica's answers, by path: slow ones never come, streamed ones never end. */
function answer(req: Request): Response | Promise<Response> {
  const path = new URL(req.url).pathname;
  if (path === "/slow") return new Promise(() => undefined);
  if (path === "/stream")
    return new Response(
      new ReadableStream({
        pull(c) {
          c.enqueue(new Uint8Array(64 * 1024));
          return Bun.sleep(1);
        },
      }),
    );
  if (path === "/early") return new Response("no thanks", { status: 413 });
  if (path === "/ws" && replica.upgrade(req, { data: undefined })) return undefined as unknown as Response;
  return req.arrayBuffer().then((b) => new Response(`got ${b.byteLength}`));
}

beforeAll(() => {
  replica = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: answer, websocket: { message: (ws, m) => void ws.send(m) } });
  // A replica that sends half of its answer's length, then closes.
  raw = Bun.listen<{ buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "" };
      },
      data(s, b) {
        s.data.buf += b.toString("latin1");
        if (!s.data.buf.includes("\r\n\r\n")) return;
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf");
        s.end();
      },
    },
  });
  ingress = createIngress({ log: createLogger("debug", (l) => lines.push(l)), headerTimeoutMs: 30_000, bodyTimeoutMs: 30_000, idleTimeoutMs: 30_000 });
  port = ingress.listen("127.0.0.1", 0).port;
  ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: replica.port as number }] });
  ingress.setService({ service: { project: "p", environment: "production", service: "cut" }, routes: [{ hosts: ["cut.test"] }], upstreams: [{ host: "127.0.0.1", port: raw.port }] });
});

afterAll(async () => {
  await ingress.stop(100);
  replica.stop(true);
  raw.stop(true);
});

interface Client {
  socket: Socket;
  got(): string;
  closed: Promise<void>;
}

function open(): Promise<Client> {
  return new Promise((resolve, reject) => {
    let text = "";
    let done: () => void = () => undefined;
    const closed = new Promise<void>((r) => (done = r));
    const socket = connect({ host: "127.0.0.1", port }, () => resolve({ socket, got: () => text, closed }));
    socket.on("data", (b) => (text += b.toString("latin1")));
    socket.on("close", () => done());
    socket.on("error", () => undefined);
    socket.once("error", reject);
  });
}

/** Resolves once the client has received `text`. */
const received = (c: Client, text: string) => until(`the answer holding ${JSON.stringify(text)}`, () => c.got().includes(text));

describe("shutdown after every client has gone", () => {
  test("clients leaving in every way an exchange can be cut leave no exchange behind, and stop returns at once without a warning", async () => {
    const clients: Client[] = [];
    const go = async () => {
      const c = await open();
      clients.push(c);
      return c;
    };

    // Reset in the middle of a body, once the replica has it.
    const reset = await go();
    reset.socket.write("POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Length: 100\r\n\r\n0123456789");
    await until("the body's exchange", () => ingress.exchanges() >= 1);
    reset.socket.resetAndDestroy();

    // Gone while the replica thinks.
    const slow = await go();
    slow.socket.write("GET /slow HTTP/1.1\r\nHost: app.test\r\n\r\n");
    await until("the slow request in flight", () => ingress.inflight({ host: "127.0.0.1", port: replica.port as number }) >= 1);
    slow.socket.destroy();

    // A streamed answer the client stops reading, then leaves.
    const stream = await go();
    stream.socket.write("GET /stream HTTP/1.1\r\nHost: app.test\r\n\r\n");
    await received(stream, "HTTP/1.1 200 ");
    stream.socket.pause();
    stream.socket.destroy();

    // Half-closed in the middle of a body: a 400 at once.
    const halfBody = await go();
    halfBody.socket.end("POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Length: 100\r\n\r\nabc");
    await halfBody.closed;
    expect(halfBody.got()).toStartWith("HTTP/1.1 400 ");

    // Half-closed after a whole request to a slow replica, then reset.
    const halfWhole = await go();
    halfWhole.socket.end("GET /slow HTTP/1.1\r\nHost: app.test\r\n\r\n");
    await until("the half-closed request in flight", () => ingress.inflight({ host: "127.0.0.1", port: replica.port as number }) >= 1);
    halfWhole.socket.resetAndDestroy();

    // Pipelined requests behind a slow one, left behind.
    const pipelined = await go();
    pipelined.socket.write("GET /slow HTTP/1.1\r\nHost: app.test\r\n\r\nGET /a HTTP/1.1\r\nHost: app.test\r\n\r\nPOST /b HTTP/1.1\r\nHost: app.test\r\nContent-Length: 5\r\n\r\nab");
    await until("the pipelined slow request in flight", () => ingress.inflight({ host: "127.0.0.1", port: replica.port as number }) >= 1);
    pipelined.socket.destroy();

    // The replica answers before the body arrived; the client keeps its connection a moment, then leaves.
    const early = await go();
    early.socket.write("POST /early HTTP/1.1\r\nHost: app.test\r\nContent-Length: 1000000\r\n\r\nabc");
    await received(early, "no thanks");
    early.socket.destroy();

    // A replica that cuts its answer: the client's connection is cut after the head.
    const cut = await go();
    cut.socket.write("GET / HTTP/1.1\r\nHost: cut.test\r\n\r\n");
    await cut.closed;
    expect(cut.got()).toContain("half");

    // Expect: 100-continue, and the body never sent.
    const expectContinue = await go();
    expectContinue.socket.write("POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n");
    await received(expectContinue, "100 Continue");
    expectContinue.socket.destroy();

    // A WebSocket tunnel, then the client goes.
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { host: "app.test" } } as unknown as string[]);
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => ws.send("hi");
      ws.onmessage = () => resolve();
      ws.onerror = () => reject(new Error("the WebSocket failed"));
    });
    const wsClosed = new Promise<void>((r) => (ws.onclose = () => r()));
    ws.close();
    await wsClosed;

    // Every client has closed its socket. Those that left with a FIN while their replica thinks
    // look half-closed to the ingress (decision 0248): stop ends their exchanges at once.
    await Promise.all(clients.map((c) => c.closed));
    expect(ingress.websockets({ host: "127.0.0.1", port: replica.port as number })).toBe(0);
    const started = Date.now();
    await ingress.stop(10_000);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(lines.filter((l) => l.includes("still in flight"))).toEqual([]);
    expect(ingress.exchanges()).toBe(0);
    await until("every client connection closed", () => ingress.metrics().connections === 0);
  }, 30_000);
});
