/**
 * The ingress's keep-alive client for bodyless requests (src/adapters/ingress/upstream.ts),
 * against raw TCP servers that write exact response bytes: framing (length, chunked with
 * extensions and trailers, until close, none for HEAD/204/304), interim 1xx answers, header
 * relaying, connection reuse, the replay of a request whose idle connection the upstream had
 * closed, a close mid-response, a malformed answer, and backpressure on a streamed body. Then
 * the same through a listening ingress with curl-like fetches.
 */
import { describe, test, expect, afterEach } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { createUpstreamClient, type UpstreamResponse } from "../src/adapters/ingress/upstream";
import { createIngress } from "../src/adapters/ingress/ingress";

interface Raw {
  port: number;
  /** Connections accepted so far. */
  accepted: number;
  /** Request heads received, in order. */
  heads: string[];
  stop(): void;
}

/** A TCP server calling `answer` with each request head (one request at a time per connection). */
function rawServer(answer: (head: string, s: Socket<{ buf: string }>, n: number) => void): Raw {
  const raw: Raw = { port: 0, accepted: 0, heads: [], stop: () => undefined };
  const server: TCPSocketListener<{ buf: string }> = Bun.listen<{ buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "" };
        raw.accepted++;
      },
      data(s, bytes) {
        s.data.buf += bytes.toString("latin1");
        for (;;) {
          const end = s.data.buf.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = s.data.buf.slice(0, end);
          s.data.buf = s.data.buf.slice(end + 4);
          raw.heads.push(head);
          answer(head, s, raw.heads.length);
        }
      },
    },
  });
  raw.port = server.port;
  raw.stop = () => server.stop(true);
  return raw;
}

async function text(r: UpstreamResponse): Promise<string> {
  if (r.body === null) return "";
  if (r.body instanceof ReadableStream) return await new Response(r.body).text();
  return Buffer.from(r.body).toString();
}

const servers: Raw[] = [];
const serve = (answer: Parameters<typeof rawServer>[0]) => {
  const s = rawServer(answer);
  servers.push(s);
  return s;
};
afterEach(() => {
  for (const s of servers.splice(0)) s.stop();
});

describe("the upstream client", () => {
  test("length-framed answers reuse one keep-alive connection; the head carries the headers given", async () => {
    const up = serve((head, s, n) => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${String(n).length}\r\nX-N: ${n}\r\n\r\n${n}`));
    const client = createUpstreamClient();
    for (let i = 1; i <= 20; i++) {
      const r = await client.request("127.0.0.1", up.port, "GET", `/n?i=${i}`, { host: "app.test", "x-forwarded-for": "10.0.0.1" });
      expect(r.status).toBe(200);
      expect(new Headers(r.headers).get("x-n")).toBe(String(i));
      expect(await text(r)).toBe(String(i));
    }
    expect(up.accepted).toBe(1);
    expect(up.heads[4]).toBe("GET /n?i=5 HTTP/1.1\r\nhost: app.test\r\nx-forwarded-for: 10.0.0.1");
    client.close();
  });

  test("chunked answers are decoded (extensions, trailers, chunks split across writes) and streamed", async () => {
    const up = serve(async (_h, s) => {
      s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5;ext=1\r\nhel");
      await Bun.sleep(20);
      s.write("lo\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n");
    });
    const client = createUpstreamClient();
    const r = await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" });
    expect(r.body).toBeInstanceOf(ReadableStream);
    expect(new Headers(r.headers).get("transfer-encoding")).toBeNull();
    expect(await text(r)).toBe("hello, world");
    await r.done;
    const again = await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" });
    expect(await text(again)).toBe("hello, world");
    expect(up.accepted).toBe(1);
    client.close();
  });

  test("a body without a length ends when the upstream closes; that connection is not reused", async () => {
    const up = serve((_h, s) => {
      s.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
      s.end();
    });
    const client = createUpstreamClient();
    expect(await text(await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" }))).toBe("until the end");
    expect(await text(await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" }))).toBe("until the end");
    expect(up.accepted).toBe(2);
  });

  test("no body for HEAD, 204 and 304, whatever their headers say; interim 1xx answers are skipped", async () => {
    const up = serve((head, s) => {
      if (head.startsWith("HEAD")) s.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
      else if (head.includes("/204")) s.write("HTTP/1.1 204 No Content\r\n\r\n");
      else if (head.includes("/304")) s.write("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n");
      else s.write("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
    });
    const client = createUpstreamClient();
    const head = await client.request("127.0.0.1", up.port, "HEAD", "/", { host: "a" });
    expect([head.status, head.body, new Headers(head.headers).get("content-length")]).toEqual([200, null, "100"]);
    expect((await client.request("127.0.0.1", up.port, "GET", "/204", { host: "a" })).status).toBe(204);
    const nm = await client.request("127.0.0.1", up.port, "GET", "/304", { host: "a" });
    expect([nm.status, nm.body, new Headers(nm.headers).get("etag")]).toEqual([304, null, '"x"']);
    const created = await client.request("127.0.0.1", up.port, "GET", "/hints", { host: "a" });
    expect([created.status, created.statusText, await text(created)]).toEqual([201, "Created", "ok"]);
    expect(up.accepted).toBe(1);
    client.close();
  });

  test("repeated headers are kept; connection headers are not relayed; Connection: close ends reuse", async () => {
    const up = serve((_h, s) => s.write("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nConnection: close\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n"));
    const client = createUpstreamClient();
    const r = await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" });
    expect(new Headers(r.headers).getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(r.headers.map(([n]) => n)).toEqual(["set-cookie", "set-cookie", "content-length"]);
    await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" });
    expect(up.accepted).toBe(2);
    // Both were closed after their answer: nothing is kept for that port.
    await Bun.sleep(20);
    expect(client.connections("127.0.0.1", up.port)).toBe(0);
  });

  test("an idle connection the upstream closed is replayed once on a fresh one", async () => {
    const up = serve((_h, s) => {
      s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      // Close the kept-alive connection a moment later, as an idle timeout does.
      setTimeout(() => s.end(), 30);
    });
    const client = createUpstreamClient();
    expect(await text(await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" }))).toBe("ok");
    await Bun.sleep(100);
    expect(await text(await client.request("127.0.0.1", up.port, "GET", "/", { host: "a" }))).toBe("ok");
    expect(up.accepted).toBe(2);
  });

  test("a close in the middle of an answer fails it; a malformed answer fails it; a closed port rejects", async () => {
    const cut = serve((_h, s) => {
      s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
      s.end();
    });
    const client = createUpstreamClient();
    await expect(client.request("127.0.0.1", cut.port, "GET", "/", { host: "a" })).rejects.toThrow(/middle of its response/);
    const cutLarge = serve((_h, s) => {
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${1 << 20}\r\n\r\n${"x".repeat(1000)}`);
      s.end();
    });
    const streamed = await client.request("127.0.0.1", cutLarge.port, "GET", "/", { host: "a" });
    await expect(text(streamed)).rejects.toThrow();
    const bad = serve((_h, s) => s.write("SMTP ready\r\n\r\n"));
    await expect(client.request("127.0.0.1", bad.port, "GET", "/", { host: "a" })).rejects.toThrow(/bad status line/);
    const gone = serve(() => undefined);
    const port = gone.port;
    gone.stop();
    await expect(client.request("127.0.0.1", port, "GET", "/", { host: "a" })).rejects.toThrow();
  });

  test("a streamed body is read from the upstream only as fast as the client reads it", async () => {
    const total = 64 << 20;
    let written = 0;
    const block = Buffer.alloc(1 << 16, 120);
    const server = Bun.listen<{ more?: () => void }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(s) {
          s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${total}\r\n\r\n`);
          s.data = {
            more: () => {
              while (written < total) {
                const n = s.write(block.subarray(written % block.length));
                written += n;
                if (n === 0) return;
              }
            },
          };
          s.data.more!();
        },
        drain(s) {
          s.data.more?.();
        },
      },
    });
    try {
      const client = createUpstreamClient();
      const r = await client.request("127.0.0.1", server.port, "GET", "/", { host: "a" });
      const reader = (r.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      await Bun.sleep(300);
      // Not reading: the socket is paused and the upstream's writes stop at the kernel's buffers.
      expect(written).toBeLessThan(total / 2);
      let got = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        got += value.length;
      }
      expect(written).toBe(total);
      expect(got).toBeGreaterThan(total - (1 << 20));
      await r.done;
    } finally {
      server.stop(true);
    }
  });
});

describe("through the ingress", () => {
  test("GETs ride the keep-alive client: chunked and fixed answers, status text, cookies, 502 when the replica cuts an answer", async () => {
    const up = serve((head, s) => {
      if (head.includes("/chunked")) s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
      else if (head.includes("/cut")) {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab");
        s.end();
      } else s.write("HTTP/1.1 418 I'm a teapot\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 3\r\n\r\ntea");
    });
    const ingress = createIngress({ downMs: 10 });
    ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["127.0.0.1"] }], upstreams: [{ host: "127.0.0.1", port: up.port }] });
    const addr = ingress.listen("127.0.0.1", 0);
    try {
      const tea = await fetch(`${addr.url}/`);
      expect([tea.status, await tea.text()]).toEqual([418, "tea"]);
      expect(tea.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
      expect(await (await fetch(`${addr.url}/chunked`)).text()).toBe("abc");
      const cut = await fetch(`${addr.url}/cut`);
      expect(cut.status).toBe(502);
      expect(await cut.text()).toContain("web");
      expect(ingress.inflight({ host: "127.0.0.1", port: up.port })).toBe(0);
      expect(up.heads[0]).toMatch(/^GET \/ HTTP\/1\.1\r\n/);
      expect(up.heads[0].toLowerCase()).toContain("x-forwarded-for: 127.0.0.1");
    } finally {
      await ingress.stop(100);
    }
  });
});
