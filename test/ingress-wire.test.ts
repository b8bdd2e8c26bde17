/**
 * The ingress's HTTP/1.1 relay on the wire (src/adapters/ingress/ingress.ts, http1.ts), between
 * raw TCP replicas that write exact response bytes and clients that send exact request bytes
 * (or fetch): response framing (length, chunked with extensions and trailers, until close, none
 * for HEAD/204/304), interim 1xx answers, connection fields, keep-alive reuse of replica
 * connections and the replay of a request whose idle connection the replica had closed, request
 * bodies (length and chunked), pipelined requests, `Expect: 100-continue`, an early answer, a
 * close mid-answer, malformed answers, backpressure both ways, HTTP/1.0 clients, and hostile
 * requests that must get a 4xx and never reach the replica.
 */
import { describe, test, expect, afterEach, beforeEach } from "bun:test";
import type { Socket } from "bun";
import { createHash } from "node:crypto";
import { createIngress, type Ingress } from "../src/adapters/ingress/ingress";
import { FrameTracker } from "../src/adapters/ingress/ws-frames";
import { until } from "./runtime-fixtures";
import { rawServer, streamingReplica, talk, type Raw } from "./support/ingress";

const servers: Raw[] = [];
const serve = (answer: Parameters<typeof rawServer>[0]) => {
  const s = rawServer(answer);
  servers.push(s);
  return s;
};
let ingress: Ingress;
let port: number;
const route = (up: Raw) => ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test", "127.0.0.1"] }], upstreams: [{ host: "127.0.0.1", port: up.port }] });
const url = (p: string) => `http://127.0.0.1:${port}${p}`;

beforeEach(() => {
  ingress = createIngress({ downMs: 10 });
  port = ingress.listen("127.0.0.1", 0).port;
});
afterEach(async () => {
  await ingress.stop(100);
  for (const s of servers.splice(0)) s.stop();
});

const ok = (body: string, extra = "") => `HTTP/1.1 200 OK\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;

describe("responses", () => {
  test("length-framed answers: one replica connection carries every request; hop-by-hop fields dropped, X-Forwarded-* set", async () => {
    const up = serve((_head, s, n) => s.write(ok(String(n), `X-N: ${n}\r\n`)));
    route(up);
    for (let i = 1; i <= 20; i++) {
      const res = await fetch(url(`/n?i=${i}`), { headers: { host: "app.test" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-n")).toBe(String(i));
      expect(await res.text()).toBe(String(i));
    }
    expect(up.accepted).toBe(1);
    const sent = await talk(port, "GET /exact?q=1 HTTP/1.1\r\nHost: App.Test:8080\r\nX-Forwarded-For: 10.0.0.1\r\nConnection: keep-alive, X-Secret\r\nKeep-Alive: 300\r\nX-Secret: s\r\nTE: trailers\r\nAccept: */*\r\n\r\n", (g) => g.endsWith("21"));
    expect(sent.text).toStartWith("HTTP/1.1 200 OK\r\n");
    expect(up.heads[20]).toBe(
      'GET /exact?q=1 HTTP/1.1\r\nHost: App.Test:8080\r\nAccept: */*\r\nx-forwarded-for: 127.0.0.1\r\nx-forwarded-proto: http\r\nx-forwarded-host: App.Test:8080\r\nx-real-ip: 127.0.0.1\r\nforwarded: for=127.0.0.1;host="App.Test:8080";proto=http',
    );
  });

  test("chunked answers are relayed as they come, chunked anew (no extensions, no trailers, split writes); the connection is reused", async () => {
    const up = serve(async (_h, s) => {
      s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5;ext=1\r\nhel");
      await Bun.sleep(20);
      s.write("lo\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n");
    });
    route(up);
    const raw = await talk(port, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("0\r\n\r\n"));
    expect(raw.text).toEndWith("\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n7\r\n, world\r\n0\r\n\r\n");
    expect(raw.text).toContain("\r\ntransfer-encoding: chunked\r\n");
    expect(raw.closed).toBe(false);
    expect(await (await fetch(url("/"), { headers: { host: "app.test" } })).text()).toBe("hello, world");
    expect(up.accepted).toBe(1);
  });

  test("a body without a length ends when the replica closes: the client's connection closes too, the replica's is not reused", async () => {
    const up = serve((_h, s) => {
      s.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
      s.end();
    });
    route(up);
    const raw = await talk(port, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n");
    expect(raw.closed).toBe(true);
    expect(raw.text).toEndWith("\r\n\r\nuntil the end");
    expect(await (await fetch(url("/"), { headers: { host: "app.test" } })).text()).toBe("until the end");
    expect(up.accepted).toBe(2);
  });

  test("no body for HEAD, 204 and 304 whatever their fields say; interim 1xx answers are relayed before the final one", async () => {
    const up = serve((head, s) => {
      if (head.startsWith("HEAD")) s.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
      else if (head.includes("/204")) s.write("HTTP/1.1 204 No Content\r\n\r\n");
      else if (head.includes("/304")) s.write('HTTP/1.1 304 Not Modified\r\nETag: "x"\r\nContent-Length: 5\r\n\r\n');
      else s.write("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
    });
    route(up);
    // Four requests pipelined on one connection: each answer ends where its framing says.
    const all = await talk(port, ["HEAD / HTTP/1.1", "GET /204 HTTP/1.1", "GET /304 HTTP/1.1", "GET /hints HTTP/1.1"].map((l) => `${l}\r\nHost: app.test\r\n\r\n`).join(""), (g) => g.endsWith("ok"));
    expect(all.text.match(/^HTTP\/1\.1 \d+/gm)).toEqual(["HTTP/1.1 200", "HTTP/1.1 204", "HTTP/1.1 304", "HTTP/1.1 103", "HTTP/1.1 201"]);
    expect(all.text).toContain("Link: </a.css>");
    const created = await fetch(url("/hints"), { headers: { host: "app.test" } });
    expect([created.status, created.statusText, await created.text()]).toEqual([201, "Created", "ok"]);
    expect(up.accepted).toBe(1);
  });

  test("the replica's connection fields are not relayed; repeated fields are; Connection: close ends reuse", async () => {
    const up = serve((_h, s) => s.write("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nConnection: close\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n"));
    route(up);
    const raw = await talk(port, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("\r\n\r\n"));
    expect(raw.text).toBe("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\ncontent-length: 0\r\n\r\n");
    const res = await fetch(url("/"), { headers: { host: "app.test" } });
    expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(up.accepted).toBe(2);
  });

  test("an idle connection the replica closed is replayed once on a fresh one", async () => {
    let closedByReplica = 0;
    const up = serve((_h, s) => {
      s.write(ok("ok"));
      // Close the kept-alive connection a moment later, as an idle timeout does.
      setTimeout(() => {
        s.end();
        closedByReplica++;
      }, 30);
    });
    route(up);
    expect(await (await fetch(url("/"), { headers: { host: "app.test" } })).text()).toBe("ok");
    // Whether the ingress has seen the close yet (a fresh connection) or not (a replay), the next request is answered on a second connection.
    await until("the replica's close", () => closedByReplica === 1);
    expect(await (await fetch(url("/"), { headers: { host: "app.test" } })).text()).toBe("ok");
    expect(up.accepted).toBe(2);
  });

  test("a replica that cuts its answer: 502 before the head, the client's connection cut after it; malformed answers and closed ports are 502", async () => {
    const up = serve((head, s) => {
      if (head.includes("/before")) s.end();
      else if (head.includes("/after")) {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        s.end();
      } else if (head.includes("/smtp")) s.write("SMTP ready\r\n\r\n");
      else if (head.includes("/length")) s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc");
      else s.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n");
    });
    route(up);
    const before = await fetch(url("/before"), { headers: { host: "app.test" } });
    expect(before.status).toBe(502);
    expect(await before.text()).toContain("<strong>web</strong>");
    const after = await talk(port, "GET /after HTTP/1.1\r\nHost: app.test\r\n\r\n");
    expect([after.closed, after.text.endsWith("\r\n\r\nabc")]).toEqual([true, true]);
    for (const p of ["/smtp", "/length", "/switch"]) {
      const res = await fetch(url(p), { headers: { host: "app.test" } });
      expect([p, res.status]).toEqual([p, 502]);
      await res.text();
    }
    expect(ingress.inflight({ host: "127.0.0.1", port: up.port })).toBe(0);
    const gone = serve(() => undefined);
    route(gone);
    gone.stop();
    const refused = await fetch(url("/"), { headers: { host: "app.test" } });
    expect(refused.status).toBe(502);
    expect(await refused.text()).toContain("The last replica tried failed");
  });

  test("a streamed answer is read from the replica only as fast as the client reads it", async () => {
    const total = 64 << 20;
    const server = streamingReplica(total);
    try {
      ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: server.port }] });
      let got = 0;
      let client!: Socket<undefined>;
      const finished = new Promise<void>((resolve) => {
        void Bun.connect({
          hostname: "127.0.0.1",
          port,
          socket: {
            open(s) {
              client = s;
              s.write("GET /big HTTP/1.1\r\nHost: app.test\r\n\r\n");
              // Not reading at first.
              s.pause();
            },
            data(_s, b) {
              got += b.length;
              if (got >= total) resolve();
            },
          },
        });
      });
      // The client does not read: the ingress stops reading the replica, whose writes stall at
      // what the kernel's buffers hold. Wait until they have stalled (no byte written across 20
      // looks), however slowly the machine gets there; a relay that kept reading would let the
      // replica write on to the end.
      let at = -1;
      let still = 0;
      await until("the replica's writes stalled", () => {
        still = server.written() === at ? still + 1 : 0;
        at = server.written();
        return still >= 20 || server.written() === total;
      }, 60_000, 5);
      expect(server.written()).toBeLessThan(total / 2);
      client.resume();
      await finished;
      expect(server.written()).toBe(total);
      client.end();
    } finally {
      server.stop();
    }
  });
});

describe("requests", () => {
  test("bytes above 0x7f in a field value or the target reach the replica unchanged", async () => {
    const up = serve((_h, s) => s.write(ok("ok")));
    route(up);
    const head = Buffer.concat([Buffer.from("GET /caf"), Buffer.from([0xc3, 0xa9]), Buffer.from(" HTTP/1.1\r\nHost: app.test\r\nX-Latin: caf"), Buffer.from([0xe9]), Buffer.from("\r\nX-Utf: "), Buffer.from("é✓"), Buffer.from("\r\n\r\n")]);
    await talk(port, head, (g) => g.endsWith("ok"));
    await talk(port, Buffer.concat([head.subarray(0, head.length - 2), Buffer.from("Connection: keep-alive\r\n\r\n")]), (g) => g.endsWith("ok"));
    for (const seen of up.heads) {
      expect(Buffer.from(seen, "latin1").subarray(0, head.length - 4)).toEqual(head.subarray(0, head.length - 4));
    }
    expect(up.heads.length).toBe(2);
  });

  test("bodies with a length reach the replica byte for byte, chunked ones chunked anew; pipelined requests are answered in order", async () => {
    const up = serve((head, s, n) => s.write(ok(`r${n}`)));
    route(up);
    const chunked = "4\r\nwiki\r\n5;x=y\r\npedia\r\n0\r\nT: 1\r\n\r\n";
    const reqs =
      "POST /a HTTP/1.1\r\nHost: app.test\r\nContent-Length: 5\r\n\r\nhello" +
      `POST /b HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}` +
      "GET /c HTTP/1.1\r\nHost: app.test\r\n\r\n";
    const res = await talk(port, reqs, (g) => g.endsWith("r3"));
    expect(res.text.match(/r\d$|r\d(?=HTTP)/g)).toEqual(["r1", "r2", "r3"]);
    expect(up.heads.map((h) => h.split("\r\n")[0])).toEqual(["POST /a HTTP/1.1", "POST /b HTTP/1.1", "GET /c HTTP/1.1"]);
    expect(up.heads[1]).toContain("\r\ntransfer-encoding: chunked");
    expect(up.heads[1]).not.toContain("Transfer-Encoding");
    expect(up.bodies[0]).toBe("hello4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n");
  });

  test("Expect: 100-continue: the replica's 100 reaches the client, which then sends the body", async () => {
    const up: Raw = serve((head, s) => {
      if (head.toLowerCase().includes("expect: 100-continue")) s.write("HTTP/1.1 100 Continue\r\n\r\n");
      // The answer once the body is in, as a server that reads it first.
      void until("the body", () => up.bodies[s.data.conn] === "data").then(() => s.write(ok("stored")));
    });
    route(up);
    const got = await new Promise<string>((resolve) => {
      let text = "";
      void Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          open(s) {
            s.write("PUT /f HTTP/1.1\r\nHost: app.test\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
          },
          data(s, b) {
            text += b.toString("latin1");
            if (text === "HTTP/1.1 100 Continue\r\n\r\n") s.write("data");
            if (text.endsWith("stored")) {
              s.end();
              resolve(text);
            }
          },
        },
      });
    });
    expect(got).toStartWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n");
    expect(up.bodies[0]).toBe("data");
  });

  test("a replica that answers before the whole body arrived: the answer is relayed and the connection closed", async () => {
    const up = serve((_h, s) => s.write("HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\r\ntoo big!"));
    route(up);
    const res = await talk(port, "POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Length: 1000000\r\n\r\nstart");
    expect(res.closed).toBe(true);
    expect(res.text).toStartWith("HTTP/1.1 413 Content Too Large\r\n");
    expect(res.text).toEndWith("too big!");
  });

  test("an HTTP/1.0 client: relayed as HTTP/1.1, its connection closed after the answer", async () => {
    const up = serve((_h, s) => s.write("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    route(up);
    const res = await talk(port, "GET / HTTP/1.0\r\nHost: app.test\r\n\r\n");
    expect(res.closed).toBe(true);
    expect(res.text).toEndWith("\r\nconnection: close\r\n\r\nok");
    expect(up.heads[0]).toStartWith("GET / HTTP/1.1\r\n");
    const nohost = await talk(port, "GET / HTTP/1.0\r\n\r\n");
    expect(nohost.text).toStartWith("HTTP/1.1 404 ");
    expect(nohost.text).toContain("The request named no host.");
  });

  test("hostile requests get a 4xx page, their connection is closed, and the replica never sees them", async () => {
    const up = serve((_h, s) => s.write(ok("reached")));
    route(up);
    const cases: Array<[string, string]> = [
      ["GET / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcd", "400"],
      ["GET / HTTP/1.1\r\nHost: app.test\r\nContent-Length: -1\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\nHost: app.test\r\nX-Folded: a\r\n b\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\nHost : app.test\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\nHost: app.test\r\nHost: other.test\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\nX-Nul: a\0b\r\nHost: app.test\r\n\r\n", "400"],
      ["GET  / HTTP/1.1\r\nHost: app.test\r\n\r\n", "400"],
      ["GET / HTTP/2.0\r\nHost: app.test\r\n\r\n", "400"],
      ["GET /\r\n\r\n", "400"],
      ["GET / HTTP/1.1\r\n\r\n", "400"],
      ["CONNECT app.test:443 HTTP/1.1\r\nHost: app.test\r\n\r\n", "405"],
      [`GET / HTTP/1.1\r\nHost: app.test\r\nX-Big: ${"x".repeat(70_000)}\r\n\r\n`, "431"],
    ];
    for (const [req, status] of cases) {
      const res = await talk(port, req);
      expect([JSON.stringify(req.slice(0, 60)), res.text.slice(0, 12), res.closed]).toEqual([JSON.stringify(req.slice(0, 60)), `HTTP/1.1 ${status}`, true]);
      expect(res.text).toContain("ops ingress");
    }
    expect(up.heads).toEqual([]);
    // The same connection rules for a well-formed request still hold afterwards.
    expect(await (await fetch(url("/"), { headers: { host: "app.test" } })).text()).toBe("reached");
  });
});

describe("websocket tunnels", () => {
  test("a 101 turns both connections into a tunnel; at shutdown the client gets 1001 between frames", async () => {
    const up = serve((head, s) => {
      const key = /sec-websocket-key: *(\S+)/i.exec(head)![1];
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      // The handshake and a first frame in one write, then a frame with a 16-bit length.
      s.write(Buffer.from(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n\x81\x02hi`, "latin1"));
      s.write(Buffer.concat([Buffer.from([0x82, 126, 0x01, 0x00]), Buffer.alloc(256, 7)]));
    });
    route(up);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { host: "app.test" } } as unknown as string[]);
    ws.binaryType = "arraybuffer";
    const got: Array<string | number> = [];
    const closed = new Promise<CloseEvent>((resolve) => (ws.onclose = resolve));
    await new Promise<void>((resolve) => {
      ws.onmessage = (e) => {
        got.push(typeof e.data === "string" ? e.data : (e.data as ArrayBuffer).byteLength);
        if (got.length === 2) resolve();
      };
    });
    expect(got).toEqual(["hi", 256]);
    expect(ingress.websockets({ host: "127.0.0.1", port: up.port })).toBe(1);
    expect(up.heads[0]).toContain("\r\nupgrade: websocket\r\nconnection: upgrade");
    await ingress.stop(100);
    expect((await closed).code).toBe(1001);
  });

  test("the frame tracker follows 7-, 16- and 64-bit lengths and masked frames across any split", () => {
    const frames = Buffer.concat([
      Buffer.from([0x81, 0x03, 0x61, 0x62, 0x63]),
      Buffer.concat([Buffer.from([0x82, 126, 0x01, 0x2c]), Buffer.alloc(300)]),
      Buffer.concat([Buffer.from([0x82, 127, 0, 0, 0, 0, 0, 0, 0x00, 0x0a]), Buffer.alloc(10)]),
      Buffer.concat([Buffer.from([0x81, 0x82, 1, 2, 3, 4]), Buffer.alloc(2)]),
    ]);
    for (let cut = 0; cut <= frames.length; cut++) {
      const t = new FrameTracker();
      t.feed(frames.subarray(0, cut));
      t.feed(frames.subarray(cut));
      expect(t.atBoundary).toBe(true);
    }
    const mid = new FrameTracker();
    mid.feed(frames.subarray(0, 7));
    expect(mid.atBoundary).toBe(false);
  });
});

describe("idle connections", () => {
  test("a client that sends nothing is closed at the head deadline, a half-sent head gets 408, a slow answer is waited for", async () => {
    const idle = createIngress({ headerTimeoutMs: 1000, idleTimeoutMs: 1000 });
    const at = idle.listen("127.0.0.1", 0).port;
    const up = serve((head, s) => setTimeout(() => s.write(ok("slow")), head.includes("/slow") ? 2500 : 0));
    idle.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: up.port }] });
    try {
      const started = Date.now();
      const [quiet, half, slow] = await Promise.all([
        talk(at, "", () => false, 10_000),
        talk(at, "GET / HTTP/1.1\r\nHost: app", () => false, 10_000),
        talk(at, "GET /slow HTTP/1.1\r\nHost: app.test\r\n\r\n", (g) => g.endsWith("slow"), 10_000),
      ]);
      expect([quiet.closed, quiet.text]).toEqual([true, ""]);
      expect(half.text).toStartWith("HTTP/1.1 408 ");
      expect(half.closed).toBe(true);
      expect(slow.text).toEndWith("slow");
      expect(Date.now() - started).toBeLessThan(8000);
    } finally {
      await idle.stop(100);
    }
  }, 20_000);
});
