/**
 * The pool of replica connections: one carries request after request only while every exchange on
 * it completed; an early answer, bytes past a response's end, a response framed until close or a
 * client that left mid-request each retire the connection.
 */
import { describe, test, expect, afterEach } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { createIngress, type Ingress } from "./ingress";

let ingress: Ingress;
let server: TCPSocketListener<{ conn: number; buf: string }> | null = null;
let accepted = 0;

/** A replica whose answer to each head is `answer(firstLine)` (a trailing NUL: then close); bodies are not read. */
function replica(answer: (line: string) => string): number {
  accepted = 0;
  server = Bun.listen<{ conn: number; buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { conn: accepted++, buf: "" };
      },
      data(s: Socket<{ conn: number; buf: string }>, b) {
        s.data.buf += b.toString("latin1");
        for (let end = s.data.buf.indexOf("\r\n\r\n"); end >= 0; end = s.data.buf.indexOf("\r\n\r\n")) {
          const line = s.data.buf.slice(0, s.data.buf.indexOf("\r\n"));
          s.data.buf = s.data.buf.slice(end + 4);
          if (!/^[A-Z]+ /.test(line)) continue;
          const a = answer(line);
          if (a.endsWith("\0")) {
            s.write(a.slice(0, -1));
            s.end();
          } else s.write(a);
        }
      },
    },
  });
  ingress = createIngress();
  const port = ingress.listen("127.0.0.1", 0).port;
  ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: server.port }] });
  return port;
}

afterEach(async () => {
  await ingress.stop(100);
  server?.stop(true);
});

function send(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = "";
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(s) {
          s.write(bytes);
        },
        data(_s, b) {
          got += b.toString("latin1");
        },
        close() {
          resolve(got);
        },
      },
    }).catch(reject);
  });
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n`;

describe("replica connections", () => {
  test("complete exchanges share one connection", async () => {
    const port = replica(() => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    for (let i = 0; i < 5; i++) expect(await send(port, get(`/${i}`))).toEndWith("ok");
    expect(accepted).toBe(1);
  });

  test("an answer before the request body arrived retires the connection (and closes the client's)", async () => {
    const port = replica((line) => (line.startsWith("POST") ? "HTTP/1.1 413 Content Too Large\r\nContent-Length: 3\r\n\r\nbig" : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    expect(await send(port, "POST /up HTTP/1.1\r\nHost: app.test\r\nContent-Length: 100\r\n\r\nGET /smuggled HTTP/1.1\r\n")).toEndWith("big");
    expect(await send(port, get("/next"))).toEndWith("ok");
    expect(accepted).toBe(2);
  });

  test("bytes past the end of a response retire the connection; the extra bytes reach no one", async () => {
    const port = replica((line) => (line.includes("/extra") ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged" : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    expect(await send(port, get("/extra"))).toEndWith("\r\n\r\nok");
    const next = await send(port, get("/next"));
    expect(next).not.toContain("forged");
    expect(accepted).toBe(2);
  });

  test("a response that ends with the replica's close is relayed to its end; the next request gets a new connection", async () => {
    const port = replica((line) => (line.includes("/a") ? "HTTP/1.1 200 OK\r\n\r\nuntil close\0" : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    expect(await send(port, get("/a"))).toEndWith("\r\nconnection: close\r\n\r\nuntil close");
    expect(await send(port, get("/b"))).toEndWith("ok");
    expect(accepted).toBe(2);
    expect(ingress.exchanges()).toBe(0);
  });
});
