/**
 * Every limit the ingress enforces is counted, and an estate admin reads the counts on
 * `GET /api/v1/admin/ingress` (decision 0247): a head past OPS_INGRESS_HEADER_TIMEOUT (408), a
 * connection past OPS_INGRESS_MAX_CONN_PER_IP and one past OPS_INGRESS_MAX_CONNECTIONS (503), a
 * body that stops arriving (408), and requests ops cannot frame (400: a malformed head, a
 * malformed chunk in the middle of a body). The ingress is the app's own (`ingressOf`), configured
 * by the OPS_INGRESS_* settings; every wait is on a connection's close, never a sleep.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { connect, type Socket } from "node:net";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, type Person } from "./fixtures";
import { ingressOf } from "../src/adapters/ingress";

let t: TestApp;
let admin: Person;
let port: number;
let app: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  t = await createTestApp({
    env: { OPS_INGRESS_HEADER_TIMEOUT: "1", OPS_INGRESS_BODY_TIMEOUT: "1", OPS_INGRESS_MAX_CONN_PER_IP: "2", OPS_INGRESS_MAX_CONNECTIONS: "3" },
  });
  admin = await makeOwner(t);
  // The replica reads bodies whole before answering, so a stalled body stalls with it.
  app = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => new Response(`got ${(await req.arrayBuffer()).byteLength}`) });
  const ingress = ingressOf(t.core);
  port = ingress.listen("127.0.0.1", 0).port;
  ingress.setService({ service: { project: "shop", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: app.port as number }] });
});

afterAll(async () => {
  await ingressOf(t.core).stop(100);
  app.stop(true);
  await t.close();
});

interface Conn {
  socket: Socket;
  got(): string;
  /** Resolves once the ingress has closed the connection. */
  closed: Promise<void>;
}

/** A client connection from `from` (a loopback address), open once it resolves. */
function open(from = "127.0.0.1"): Promise<Conn> {
  return new Promise((resolve, reject) => {
    let text = "";
    let done: () => void = () => undefined;
    const closed = new Promise<void>((r) => (done = r));
    const socket = connect({ host: "127.0.0.1", port, localAddress: from }, () => resolve({ socket, got: () => text, closed }));
    socket.on("data", (b) => (text += b.toString("latin1")));
    socket.on("close", () => done());
    socket.on("error", reject);
  });
}

/** Send `bytes` on a new connection and return what came back once the ingress closed it. */
async function exchange(bytes: string): Promise<string> {
  const c = await open();
  c.socket.write(bytes);
  await c.closed;
  return c.got();
}

const report = async () => expectStatus(await t.request("GET", "/api/v1/admin/ingress", { token: admin.session }), 200);

describe("the ingress's limits, counted and reported", () => {
  test("a fresh ingress reports where it listens and nothing counted; only an estate admin may read it", async () => {
    expect(await report()).toEqual({
      listen: `http://127.0.0.1:${port}`,
      tls_listen: null,
      connections_open: 0,
      connections_accepted: 0,
      refused_per_address: 0,
      refused_total: 0,
      requests: 0,
      bad_requests: 0,
      head_timeouts: 0,
      idle_timeouts: 0,
      body_timeouts: 0,
      credentials_stripped: 0,
      upstream_failures: 0,
    });
    const member = await makePerson(t);
    await expectStatus(await t.request("GET", "/api/v1/admin/ingress", { token: member.session }), 403);
    await expectStatus(await t.request("GET", "/api/v1/admin/ingress"), 401);
  });

  test("bad framing: a malformed head and a malformed chunk in a body are each a 400 and a bad request", async () => {
    expect(await exchange("GET / HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n")).toEndWith("got 0");
    expect(await exchange("POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")).toStartWith("HTTP/1.1 400 ");
    expect(await exchange("POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n")).toStartWith("HTTP/1.1 400 ");
    expect(await report()).toMatchObject({ requests: 2, bad_requests: 2, connections_accepted: 3 });
  });

  test("a head not whole within OPS_INGRESS_HEADER_TIMEOUT is a 408 and a head timeout", async () => {
    const c = await open();
    c.socket.write("GET / HTTP/1.1\r\nHost: app.te");
    await c.closed;
    expect(c.got()).toStartWith("HTTP/1.1 408 ");
    expect(await report()).toMatchObject({ head_timeouts: 1, requests: 2 });
  });

  test("a body that sends nothing for OPS_INGRESS_BODY_TIMEOUT is a 408 and a body timeout", async () => {
    const c = await open();
    c.socket.write("POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Length: 10\r\n\r\nab");
    await c.closed;
    expect(c.got()).toStartWith("HTTP/1.1 408 ");
    expect(await report()).toMatchObject({ body_timeouts: 1, requests: 3 });
  });

  test("past OPS_INGRESS_MAX_CONN_PER_IP, then past OPS_INGRESS_MAX_CONNECTIONS: a 503 each, counted apart", async () => {
    const held = [await open(), await open()];
    const overAddress = await open();
    await overAddress.closed;
    expect(overAddress.got()).toStartWith("HTTP/1.1 503 ");
    held.push(await open("127.0.0.2"));
    const overTotal = await open("127.0.0.3");
    await overTotal.closed;
    expect(overTotal.got()).toStartWith("HTTP/1.1 503 ");
    expect(await report()).toMatchObject({ refused_per_address: 1, refused_total: 1, connections_open: 3 });
    for (const c of held) c.socket.end();
    await Promise.all(held.map((c) => c.closed));
    expect(await report()).toMatchObject({ connections_open: 0, refused_per_address: 1, refused_total: 1, head_timeouts: 1, body_timeouts: 1, bad_requests: 2 });
  });
});
