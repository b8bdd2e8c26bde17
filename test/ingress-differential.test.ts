/**
 * The differential smuggling suite: every raw request of the corpus below goes once through ops's
 * ingress and once through nginx (the Debian package, started here on 127.0.0.1 with a config this
 * file writes, stopped by its pid), each in front of its own copy of the same recording backend.
 * For every case the backend behind ops sees exactly the requests it saw behind nginx, or ops
 * answers with one of its refusal pages and the backend sees a prefix of them (nothing at all for
 * a single request). Then a second client sends its own request: it must be answered as itself,
 * and no recorded request may hold its bytes (a smuggled prefix that swallows the next client's
 * request on a shared upstream connection is what this catches).
 *
 * The backend reads requests as a lenient app would (the first Transfer-Encoding naming chunked
 * wins over Content-Length, sizes parsed with parseInt), so a proxy that forwards something two
 * readers could frame differently shows up as a different list of requests. Compared per request:
 * method, target and body (decoded), and the header fields other than those the proxies own
 * (framing, hop-by-hop, Host and forwarding fields, and the fields the client's Connection named).
 *
 * Clients half-close after sending, so each proxy answers what arrived whole and closes: no case
 * waits for a timer.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { mkdtempSync, rmSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createIngress, type Ingress } from "../src/adapters/ingress";
import { freePort } from "./harness";

const NGINX = "/usr/sbin/nginx";

interface Seen {
  method: string;
  target: string;
  headers: Array<[string, string]>;
  body: string;
}

interface Backend {
  port: number;
  seen: Seen[];
  /** Raw bytes received, for the second-client check. */
  raw: string;
  stop(): void;
}

/** A lenient HTTP/1.1 app: records each request it reads, answers `seen:<method> <target>`. */
function recordingBackend(): Backend {
  const b: Backend = { port: 0, seen: [], raw: "", stop: () => undefined };
  const server: TCPSocketListener<{ buf: string }> = Bun.listen<{ buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "" };
      },
      data(s, bytes) {
        const text = bytes.toString("latin1");
        b.raw += text;
        s.data.buf += text;
        for (;;) {
          const r = readOne(s.data.buf);
          if (r === null) return;
          if (r === "bad") {
            s.data.buf = "";
            s.end();
            return;
          }
          s.data.buf = s.data.buf.slice(r.used);
          b.seen.push(r.req);
          const tag = `seen:${r.req.method} ${r.req.target}`;
          s.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${tag.length}\r\n\r\n${tag}`);
        }
      },
    },
  });
  b.port = server.port;
  b.stop = () => server.stop(true);
  return b;
}

/** One request from the front of `buf`: null while incomplete, "bad" when unreadable. */
function readOne(buf: string): { req: Seen; used: number } | null | "bad" {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = buf.slice(0, end).split("\r\n");
  const m = /^(\S+) (\S+) HTTP\/1\.[01]$/.exec(lines[0]);
  if (!m) return "bad";
  const headers: Array<[string, string]> = [];
  for (const l of lines.slice(1)) {
    const c = l.indexOf(":");
    if (c <= 0) return "bad";
    headers.push([l.slice(0, c).trim().toLowerCase(), l.slice(c + 1).trim()]);
  }
  const te = headers.find(([n, v]) => n === "transfer-encoding" && v.toLowerCase().includes("chunked"));
  let at = end + 4;
  let body = "";
  if (te) {
    for (;;) {
      const nl = buf.indexOf("\r\n", at);
      if (nl < 0) return null;
      const size = parseInt(buf.slice(at, nl), 16);
      if (Number.isNaN(size)) return "bad";
      at = nl + 2;
      if (size === 0) {
        const fin = buf.indexOf("\r\n\r\n", at - 2);
        if (fin < 0) return null;
        at = fin + 4;
        break;
      }
      if (buf.length < at + size + 2) return null;
      body += buf.slice(at, at + size);
      at += size + 2;
    }
  } else {
    const cl = headers.find(([n]) => n === "content-length");
    const n = cl ? parseInt(cl[1], 10) : 0;
    if (Number.isNaN(n) || n < 0) return "bad";
    if (buf.length < at + n) return null;
    body = buf.slice(at, at + n);
    at += n;
  }
  return { req: { method: m[1], target: m[2], headers, body }, used: at };
}

/** Send `bytes`, half-close, and collect the answer until the proxy closes (or `ms` pass). */
function exchange(port: number, bytes: string, ms = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = "";
    let done = false;
    const finish = (s?: Socket<undefined>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s?.end();
      resolve(got);
    };
    const timer = setTimeout(() => finish(), ms);
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(s) {
          s.write(Buffer.from(bytes, "latin1"));
          s.shutdown();
        },
        data(_s, b) {
          got += b.toString("latin1");
        },
        close() {
          finish();
        },
        error() {
          finish();
        },
      },
    }).catch(reject);
  });
}

/** Fields the proxies own: framing, hop-by-hop, Host and forwarding. */
const OWNED = new Set(["host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "transfer-encoding", "content-length", "expect", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "forwarded", "proxy-authorization"]);
const FORWARDING = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "forwarded"];
/** A field name as servers that read `_` as `-` (CGI, WSGI, Rack) read it: ops drops the underscore spellings of the fields it owns, nginx here forwards them. */
const dashed = (n: string) => n.replace(/_/g, "-");

function comparable(s: Seen, named: ReadonlySet<string>) {
  const headers = s.headers.filter(([n]) => !OWNED.has(dashed(n)) && !named.has(n)).map(([n, v]) => `${n}: ${v}`);
  return { method: s.method, target: s.target, body: s.body, headers };
}

/** Field names the case's own Connection fields name (hop-by-hop for both proxies to drop, or not). */
function connectionNamed(bytes: string): Set<string> {
  const out = new Set<string>();
  for (const m of bytes.matchAll(/\r\nConnection:([^\r\n]*)/gi)) for (const t of m[1].split(",")) out.add(t.trim().toLowerCase());
  return out;
}

const H = "Host: app.test\r\n";
const SMUGGLED = `GET /SMUGGLED HTTP/1.1\r\n${H}X-Forwarded-For: 6.6.6.6\r\n\r\n`;
const CAPTURE = `POST /capture HTTP/1.1\r\n${H}Content-Length: 300\r\n\r\nstolen=`;
const big = (n: number) => "a".repeat(n);

/** The corpus: [name, raw bytes]. */
const CASES: Array<[string, string]> = [
  // The cases: a Connection token naming framing, Host or a field ops sets.
  ["issue: Connection names Content-Length", `POST /first HTTP/1.1\r\n${H}Connection: content-length\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`],
  ["issue: Connection names Content-Length, an unfinished request smuggled", `POST /first HTTP/1.1\r\n${H}Connection: Content-Length\r\nContent-Length: ${CAPTURE.length}\r\n\r\n${CAPTURE}`],
  ["issue: Connection names Transfer-Encoding", `POST /first HTTP/1.1\r\n${H}Connection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`],
  ["Connection: keep-alive, content-length", `POST /first HTTP/1.1\r\n${H}Connection: keep-alive, content-length\r\nContent-Length: 5\r\n\r\nhello`],
  ["Connection names Host", `GET /h HTTP/1.1\r\n${H}Connection: host\r\n\r\n`],
  ["Connection names X-Forwarded-For", `GET /x HTTP/1.1\r\n${H}Connection: x-forwarded-for\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n`],
  ["Connection names X-Real-IP", `GET /x HTTP/1.1\r\n${H}Connection: X-Real-IP\r\n\r\n`],
  ["Connection names Forwarded", `GET /x HTTP/1.1\r\n${H}Connection: forwarded\r\n\r\n`],
  ["Connection names an ordinary field", `GET /x HTTP/1.1\r\n${H}Connection: x-hop\r\nX-Hop: 1\r\nX-Keep: 2\r\n\r\n`],
  // CL.TE, TE.CL, TE.TE.
  ["CL.TE", `POST /a HTTP/1.1\r\n${H}Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG`],
  ["TE.CL", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n`],
  ["TE.TE: a second Transfer-Encoding", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: xchunked", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE.TE: space before the colon", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE.TE: trailing space", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked \r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: tab before the value", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding:\tchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: vertical tab", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: \x0bchunked\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE.TE: upper case", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: chunked, identity", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: identity, chunked", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: identity, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: gzip, chunked", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["TE.TE: folded onto a second line", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE.TE: quoted", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: "chunked"\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE.TE: bare LF before the field", `POST /a HTTP/1.1\r\n${H}X-A: 1\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE.TE: underscore name", `POST /a HTTP/1.1\r\n${H}Transfer_Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello`],
  ["TE with Content-Length: 0", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  // Lengths: duplicate, signed, odd.
  ["Content-Length twice, same value", `POST /a HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello`],
  ["Content-Length twice, different values", `POST /a HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`],
  ["Content-Length: 5, 5", `POST /a HTTP/1.1\r\n${H}Content-Length: 5, 5\r\n\r\nhello`],
  ["Content-Length: +5", `POST /a HTTP/1.1\r\n${H}Content-Length: +5\r\n\r\nhello`],
  ["Content-Length: -1", `POST /a HTTP/1.1\r\n${H}Content-Length: -1\r\n\r\nhello`],
  ["Content-Length: 0x5", `POST /a HTTP/1.1\r\n${H}Content-Length: 0x5\r\n\r\nhello`],
  ["Content-Length: 05 (leading zero)", `POST /a HTTP/1.1\r\n${H}Content-Length: 05\r\n\r\nhello`],
  ["Content-Length with trailing space", `POST /a HTTP/1.1\r\n${H}Content-Length: 5 \r\n\r\nhello`],
  ["Content-Length: 5a", `POST /a HTTP/1.1\r\n${H}Content-Length: 5a\r\n\r\nhello`],
  ["Content-Length: 1e1", `POST /a HTTP/1.1\r\n${H}Content-Length: 1e1\r\n\r\nhelloworld`],
  ["Content-Length overflows", `POST /a HTTP/1.1\r\n${H}Content-Length: 99999999999999999999\r\n\r\nhello`],
  ["Content-Length empty", `POST /a HTTP/1.1\r\n${H}Content-Length:\r\n\r\nhello`],
  ["Content-Length: space before the colon", `POST /a HTTP/1.1\r\n${H}Content-Length : 5\r\n\r\nhello`],
  ["Content-Length folded", `POST /a HTTP/1.1\r\n${H}Content-Length:\r\n 5\r\n\r\nhello`],
  // Obs-fold and odd bytes in heads.
  ["obs-fold in an ordinary field", `GET /a HTTP/1.1\r\n${H}X-A: a\r\n b\r\n\r\n`],
  ["obs-fold with a tab after Host", `GET /a HTTP/1.1\r\nHost: app.test\r\n\tx\r\n\r\n`],
  ["NUL in a field value", `GET /a HTTP/1.1\r\n${H}X-A: a\0b\r\n\r\n`],
  ["bare CR in a field value", `GET /a HTTP/1.1\r\n${H}X-A: a\rb\r\n\r\n`],
  ["space in a field name", `GET /a HTTP/1.1\r\n${H}X A: b\r\n\r\n`],
  ["two Host fields", `GET /a HTTP/1.1\r\n${H}Host: other.test\r\n\r\n`],
  ["Host with a path in it", `GET /a HTTP/1.1\r\nHost: app.test/../x\r\n\r\n`],
  ["no Host", "GET /a HTTP/1.1\r\nX-A: 1\r\n\r\n"],
  ["lower-case method", `get /a HTTP/1.1\r\n${H}\r\n`],
  ["HTTP/1.2", `GET /a HTTP/1.2\r\n${H}\r\n`],
  ["a tab in the request line", `GET\t/a HTTP/1.1\r\n${H}\r\n`],
  ["absolute-form target", "GET http://app.test/abs?q=1 HTTP/1.1\r\nHost: app.test\r\n\r\n"],
  ["absolute-form target, another Host", "GET http://app.test/abs HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
  ["absolute-form target, no Host", "GET http://app.test/abs HTTP/1.1\r\nX-A: 1\r\n\r\n"],
  ["absolute-form target, HTTP/1.0, another Host", "GET http://app.test/abs HTTP/1.0\r\nHost: evil.example\r\n\r\n"],
  ["bytes above 0x7f in target and value", `GET /caf\xe9 HTTP/1.1\r\n${H}X-A: caf\xe9\r\n\r\n`],
  ["underscore in a field name", `GET /a HTTP/1.1\r\n${H}X_Under: 1\r\n\r\n`],
  ["X_Forwarded_For", `GET /a HTTP/1.1\r\n${H}X_Forwarded_For: 6.6.6.6\r\n\r\n`],
  ["X-Forwarded_For", `GET /a HTTP/1.1\r\n${H}X-Forwarded_For: 6.6.6.6\r\n\r\n`],
  ["X_Real_IP", `GET /a HTTP/1.1\r\n${H}X_Real_IP: 6.6.6.6\r\n\r\n`],
  ["X_Forwarded_Host and X_Forwarded_Proto", `GET /a HTTP/1.1\r\n${H}X_Forwarded_Host: evil.example\r\nX_Forwarded_Proto: https\r\n\r\n`],
  ["an empty field value", `GET /a HTTP/1.1\r\n${H}X-Empty:\r\n\r\n`],
  ["lines ending in bare LF", "GET /a HTTP/1.1\nHost: app.test\n\n"],
  // Chunk-size oddities.
  ["chunk size 0x5", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n`],
  ["chunk size followed by a space", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n`],
  ["chunk extension", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n0\r\n\r\n`],
  ["chunk size -5", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n`],
  ["chunk size +5", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n`],
  ["chunk size overflows", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nfffffffffffffffff5\r\nhello\r\n0\r\n\r\n`],
  ["chunk data longer than its size", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n`],
  ["bare LF after a chunk size", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n`],
  ["bare LF after chunk data", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n`],
  ["upper-case hex size", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n`],
  ["trailer fields", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n`],
  ["a Content-Length in the trailer", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n`],
  ["a chunked body that never ends", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n`],
  ["a body shorter than its length", `POST /c HTTP/1.1\r\n${H}Content-Length: 50\r\n\r\nhello`],
  // Pipelining.
  ["two GETs pipelined", `GET /p1 HTTP/1.1\r\n${H}\r\nGET /p2 HTTP/1.1\r\n${H}\r\n`],
  ["a POST with a length, then a GET", `POST /p1 HTTP/1.1\r\n${H}Content-Length: 5\r\n\r\nhelloGET /p2 HTTP/1.1\r\n${H}\r\n`],
  ["a chunked POST, then a GET", `POST /p1 HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /p2 HTTP/1.1\r\n${H}\r\n`],
  ["a GET, then a malformed request", `GET /p1 HTTP/1.1\r\n${H}\r\nGET /p2 HTTP/1.1\r\n${H}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`],
  ["three requests, the middle one refused", `GET /p1 HTTP/1.1\r\n${H}\r\nPOST /p2 HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /p3 HTTP/1.1\r\n${H}\r\n`],
  ["a GET with a body, then a GET", `GET /p1 HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabcGET /p2 HTTP/1.1\r\n${H}\r\n`],
  // HTTP/1.0.
  ["HTTP/1.0 GET", `GET /old HTTP/1.0\r\n${H}\r\n`],
  ["HTTP/1.0 keep-alive, then a second request", `GET /old1 HTTP/1.0\r\n${H}Connection: keep-alive\r\n\r\nGET /old2 HTTP/1.0\r\n${H}\r\n`],
  ["HTTP/1.0 with Transfer-Encoding", `POST /old HTTP/1.0\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  ["HTTP/1.0 POST with a length", `POST /old HTTP/1.0\r\n${H}Content-Length: 5\r\n\r\nhello`],
  // Expect: 100-continue.
  ["Expect: 100-continue with the body sent at once", `PUT /e HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello`],
  ["Expect: 100-continue with a chunked body", `PUT /e HTTP/1.1\r\n${H}Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`],
  // Oversized heads.
  ["a 70 KB field", `GET /big HTTP/1.1\r\n${H}X-Big: ${big(70_000)}\r\n\r\n`],
  ["100 fields of 1 KB", `GET /big HTTP/1.1\r\n${H}${Array.from({ length: 100 }, (_, i) => `X-F${i}: ${big(1000)}\r\n`).join("")}\r\n`],
  ["a 70 KB target", `GET /${big(70_000)} HTTP/1.1\r\n${H}\r\n`],
  ["a 30 KB field (under both limits)", `GET /big HTTP/1.1\r\n${H}X-Big: ${big(30_000)}\r\n\r\n`],
  // Ordinary requests, as a baseline.
  ["a plain GET", `GET /plain?x=1 HTTP/1.1\r\n${H}Accept: */*\r\nX-Case: plain\r\n\r\n`],
  ["a POST with a length", `POST /form HTTP/1.1\r\n${H}Content-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world`],
  ["a chunked POST in three chunks", `POST /form HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n1\r\nh\r\n0\r\n\r\n`],
];

let opsBackend: Backend;
let nginxBackend: Backend;
let ingress: Ingress;
let opsPort: number;
let nginxPort: number;
let nginx: Bun.Subprocess | null = null;
let dir: string;

function nginxConf(backendPort: number, port: number): string {
  return `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_header_buffer_size 64k;
  large_client_header_buffers 8 64k;
  underscores_in_headers on;
  ignore_invalid_headers off;
  client_body_timeout 5s;
  client_header_timeout 5s;
  upstream app { server 127.0.0.1:${backendPort}; keepalive 8; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      # The test's clients half-close after sending: nginx must not take that for an abort.
      proxy_ignore_client_abort on;
    }
  }
}
`;
}

beforeAll(async () => {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: apt-get install nginx (.ci/run installs it)`);
  dir = mkdtempSync(path.join(tmpdir(), "ops-differential-"));
  opsBackend = recordingBackend();
  nginxBackend = recordingBackend();
  ingress = createIngress({ downMs: 10 });
  opsPort = ingress.listen("127.0.0.1", 0).port;
  ingress.setService({ service: { project: "p", environment: "production", service: "web" }, routes: [{ hosts: ["app.test"] }], upstreams: [{ host: "127.0.0.1", port: opsBackend.port }] });
  nginxPort = freePort();
  writeFileSync(path.join(dir, "nginx.conf"), nginxConf(nginxBackend.port, nginxPort));
  nginx = Bun.spawn([NGINX, "-p", dir, "-c", path.join(dir, "nginx.conf")], { stdout: "ignore", stderr: "pipe" });
  let ready = false;
  for (let i = 0; i < 200 && !ready; i++) {
    const answer = await exchange(nginxPort, `GET /ready HTTP/1.1\r\n${H}Connection: close\r\n\r\n`, 500).catch(() => "");
    ready = answer.startsWith("HTTP/1.1 200");
    if (!ready) await Bun.sleep(25);
  }
  if (!ready) throw new Error(`nginx did not answer on 127.0.0.1:${nginxPort}`);
  nginxBackend.seen.length = 0;
}, 30_000);

afterAll(async () => {
  await ingress?.stop(100);
  if (nginx) {
    // The master's pid: it stops its worker and removes its pid file.
    nginx.kill("SIGTERM");
    await nginx.exited;
  }
  opsBackend?.stop();
  nginxBackend?.stop();
  if (existsSync(path.join(dir, "error.log")) && process.env.OPS_TEST_KEEP_NGINX_LOG) console.log(readFileSync(path.join(dir, "error.log"), "utf8"));
  rmSync(dir, { recursive: true, force: true });
});

const VICTIM = `GET /victim HTTP/1.1\r\n${H}Cookie: victim=secret-cookie\r\nAuthorization: Bearer victim-token\r\nConnection: close\r\n\r\n`;

/** Run a case through one proxy: what its backend recorded, what the client got, and how the next client fared. */
async function through(port: number, backend: Backend, bytes: string) {
  backend.seen.length = 0;
  backend.raw = "";
  const answer = await exchange(port, bytes);
  const seen = [...backend.seen];
  const victim = await exchange(port, VICTIM);
  const afterVictim = backend.seen.slice(seen.length);
  return { answer, seen, victim, afterVictim, raw: backend.raw };
}

describe("differential: ops's ingress against nginx, same backend", () => {
  test("the corpus has at least 60 cases", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(60);
  });

  for (const [name, bytes] of CASES) {
    test(name, async () => {
      const viaNginx = await through(nginxPort, nginxBackend, bytes);
      const viaOps = await through(opsPort, opsBackend, bytes);
      const named = connectionNamed(bytes);
      const ops = viaOps.seen.map((s) => comparable(s, named));
      const ngx = viaNginx.seen.map((s) => comparable(s, named));
      const refused = /^HTTP\/1\.1 (4\d\d|5\d\d) [^\r]*\r\n[\s\S]*ops ingress/m.test(viaOps.answer);
      if (process.env.OPS_TEST_DIFFERENTIAL_REPORT) console.log(`${name}: ops ${ops.length}${refused ? " (refused)" : ""}, nginx ${ngx.length}`);
      if (ops.length < ngx.length || JSON.stringify(ops) !== JSON.stringify(ngx)) {
        // Fewer requests than nginx forwarded is allowed only as a refusal, and what went through must match.
        expect({ name, refused, ops }).toEqual({ name, refused: true, ops: ngx.slice(0, ops.length) });
      }
      // Never more than nginx forwarded, never a request nginx did not.
      expect(ops.length).toBeLessThanOrEqual(ngx.length);
      // The next client is answered as itself, and its bytes sit in no other request.
      expect(viaOps.victim).toStartWith("HTTP/1.1 200 ");
      expect(viaOps.victim).toEndWith("seen:GET /victim");
      expect(viaOps.afterVictim.map((s) => `${s.method} ${s.target}`)).toEqual(["GET /victim"]);
      expect(viaOps.seen.some((s) => s.body.includes("victim") || s.headers.some(([, v]) => v.includes("victim")))).toBe(false);
      // Whatever the case: one Host, the target's own for an absolute-form target, and no
      // forwarding field but the ones ops wrote, in no spelling.
      const authority = /^[A-Z]+ https?:\/\/([^/ ]+)/.exec(bytes)?.[1];
      for (const seen of viaOps.seen) {
        const hosts = seen.headers.filter(([n]) => n === "host").map(([, v]) => v);
        expect(hosts.length).toBe(1);
        if (authority !== undefined && seen === viaOps.seen[0]) expect(hosts[0]).toBe(authority);
        const fwd = seen.headers.filter(([n]) => FORWARDING.includes(dashed(n)));
        expect(fwd.map(([n]) => n).sort()).toEqual([...FORWARDING].sort());
        expect(fwd.filter(([n]) => n === "x-forwarded-for" || n === "x-real-ip").map(([, v]) => v)).toEqual(["127.0.0.1", "127.0.0.1"]);
      }
      // The smuggled request of the issue never reaches the app.
      expect(viaOps.seen.some((s) => s.target === "/SMUGGLED" || s.target === "/capture")).toBe(false);
    });
  }

  test("after the corpus, with every client gone, no exchange is left in flight and shutdown logs none", async () => {
    expect(ingress.exchanges()).toBe(0);
    expect(ingress.metrics().connections).toBe(0);
  });
});
