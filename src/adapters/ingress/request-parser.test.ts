/**
 * The request head parser on its own: framing decided once, every ambiguity a 400 (the requests
 * of the smuggling issue first), hop-by-hop and forwarding fields out of what is kept, ops's
 * credentials out, and bytes above 0x7f kept.
 */
import { describe, test, expect } from "bun:test";
import { parseRequestHead, type RequestHead } from "./request-parser";
import { HttpError } from "./http-error";

const kept = (r: RequestHead) => {
  let out = "";
  for (let k = 0; k < r.keep.length; k += 2) out += r.head.slice(r.keep[k], r.keep[k + 1]);
  return out;
};

function refused(head: string): number {
  try {
    parseRequestHead(head);
  } catch (e) {
    if (e instanceof HttpError) return e.status;
    throw e;
  }
  return 0;
}

describe("request heads", () => {
  test("a Connection token naming Content-Length, Transfer-Encoding, Host or a field ops sets is a 400", () => {
    for (const tok of ["content-length", "Content-Length", "transfer-encoding", "host", "x-forwarded-for", "X-Forwarded-Proto", "x-forwarded-host", "x-real-ip", "forwarded", "keep-alive, content-length", " content-length "]) {
      expect([tok, refused(`POST / HTTP/1.1\r\nHost: a\r\nConnection: ${tok}\r\nContent-Length: 3`)]).toEqual([tok, 400]);
    }
    // Spread over two Connection fields too.
    expect(refused("POST / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked")).toBe(400);
  });

  test("framing is decided once: the ambiguous forms are 400, the plain ones read", () => {
    const bad = [
      "Content-Length: 3\r\nTransfer-Encoding: chunked",
      "Transfer-Encoding: chunked\r\nContent-Length: 0",
      "Content-Length: 3\r\nContent-Length: 3",
      "Content-Length: 3\r\nContent-Length: 4",
      "Content-Length: 3, 3",
      "Content-Length: +3",
      "Content-Length: -3",
      "Content-Length: 0x3",
      "Content-Length: 3a",
      "Content-Length:\t3",
      "Content-Length: 1234567890123456",
      "Content-Length:",
      "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
      "Transfer-Encoding: gzip, chunked",
      "Transfer-Encoding: chunked, identity",
      "Transfer-Encoding: xchunked",
      'Transfer-Encoding: "chunked"',
      "Transfer-Encoding:\tchunked",
      "Transfer-Encoding: \x0bchunked",
      "Transfer-Encoding : chunked",
      "Transfer-Encoding:\r\n chunked",
      "X: a\nTransfer-Encoding: chunked",
      "X: a\rb",
      "X: a\0b",
      "X A: b",
      "Host: b",
      "Host: a/../b",
    ];
    for (const f of bad) expect([f, refused(`POST / HTTP/1.1\r\nHost: a\r\n${f}`)]).toEqual([f, 400]);
    expect(refused("POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked")).toBe(400);
    expect(parseRequestHead("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked ").body).toBe(-1);
    expect(parseRequestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 05 ").body).toBe(5);
    const none = parseRequestHead("GET / HTTP/1.1\r\nHost: a");
    expect([none.body, none.hasLength]).toEqual([0, false]);
    const zero = parseRequestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0");
    expect([zero.body, zero.hasLength]).toEqual([0, true]);
  });

  test("the connection's previous Host is reused only when the value is the same text; any other is checked", () => {
    const last = parseRequestHead("GET / HTTP/1.1\r\nHost: shop.test:8081").host!;
    expect(parseRequestHead("GET /next HTTP/1.1\r\nHost:  shop.test:8081 ", last).host).toBe(last);
    expect(parseRequestHead("GET / HTTP/1.1\r\nHost: other.test", last).host).toBe("other.test");
    for (const h of ["shop.test:8081/x", "shop.test:8081:1", "shop.test:8081 x", "a b"]) {
      let status = 0;
      try {
        parseRequestHead(`GET / HTTP/1.1\r\nHost: ${h}`, last);
      } catch (e) {
        status = (e as { status: number }).status;
      }
      expect([h, status]).toEqual([h, 400]);
    }
  });

  test("request lines: methods in upper case, HTTP/1.0 or 1.1, origin or absolute form; CONNECT and TRACE are 405", () => {
    for (const l of ["get / HTTP/1.1", "GET  / HTTP/1.1", "GET\t/ HTTP/1.1", "GET / HTTP/1.2", "GET / HTTP/2.0", "GET /", "GET / http/1.1", "GET foo HTTP/1.1", "GET * HTTP/1.1", "GET http://a@b/ HTTP/1.1"]) expect([l, refused(`${l}\r\nHost: a`)]).toEqual([l, 400]);
    expect(refused("CONNECT a:443 HTTP/1.1\r\nHost: a")).toBe(405);
    expect(refused("TRACE / HTTP/1.1\r\nHost: a")).toBe(405);
    expect(refused("GET / HTTP/1.1")).toBe(400);
    const abs = parseRequestHead("GET http://b.test:81/p?q HTTP/1.1\r\nHost: ignored");
    expect([abs.host, abs.target, abs.path]).toEqual(["b.test:81", "/p?q", "/p?q"]);
    const star = parseRequestHead("OPTIONS * HTTP/1.1\r\nHost: a");
    expect([star.target, star.path]).toEqual(["*", "/"]);
    const old = parseRequestHead("GET / HTTP/1.0");
    expect([old.http10, old.close, old.host]).toEqual([true, true, null]);
    expect(parseRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive").close).toBe(false);
    expect(parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close").close).toBe(true);
  });

  test("hop-by-hop, forwarding and named fields are not kept; the rest is, as sent", () => {
    const r = parseRequestHead(
      "GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 300\r\nTE: trailers\r\nX-Forwarded-For: 6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\nProxy-Authorization: Basic x\r\nUpgrade: h2c\r\nX-Keep:  2 ",
    );
    expect(kept(r)).toBe("\r\nHost: a.test\r\nAccept: */*\r\nX-Keep:  2 ");
    expect(r.forwarding).toEqual({ forwardedFor: "6.6.6.6", realIp: "6.6.6.6", forwarded: "for=6.6.6.6", forwardedProto: "https", forwardedHost: "evil" });
    expect(r.websocket).toBe(false);
    const ws = parseRequestHead("GET /s HTTP/1.1\r\nHost: a\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: k");
    expect([ws.websocket, kept(ws)]).toEqual([true, "\r\nHost: a\r\nSec-WebSocket-Key: k"]);
  });

  test("ops's session cookie and Authorization carrying an ops token are removed, other cookies kept", () => {
    const token = `opss_${"A".repeat(49)}`;
    const r = parseRequestHead(`GET / HTTP/1.1\r\nHost: a\r\nCookie: theme=dark; ops_session=${token}; cart=3\r\nAuthorization: Bearer ${token}`);
    expect(kept(r) + r.rewritten).toBe("\r\nHost: a\r\nCookie: theme=dark; cart=3");
    expect(r.strippedCredential).toBe(true);
    const basic = Buffer.from(`x:opst_${"b".repeat(49)}`).toString("base64");
    expect(kept(parseRequestHead(`GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic ${basic}`))).toBe("\r\nHost: a");
    const only = parseRequestHead(`GET / HTTP/1.1\r\nHost: a\r\ncookie: ops_session=x`);
    expect(kept(only) + only.rewritten).toBe("\r\nHost: a");
    const app = parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nCookie: session=abc\r\nAuthorization: Bearer app-token");
    expect([kept(app), app.strippedCredential]).toEqual(["\r\nHost: a\r\nCookie: session=abc\r\nAuthorization: Bearer app-token", false]);
  });

  test("an Authorization ops would accept is removed however it is spelled: any whitespace after the scheme, stray characters in base64, split over two fields", () => {
    const token = `opst_${"c".repeat(49)}`;
    const b64 = Buffer.from(`git:${token}`).toString("base64");
    const forms = [`Basic\t${b64}`, `basic   ${b64}`, `Basic ${b64.slice(0, 8)}!*${b64.slice(8)}`, `Basic ${b64.slice(0, 10)}\t${b64.slice(10)}`, `BASIC ${b64}\xa0`, `Bearer\t${token}`];
    for (const f of forms) {
      const r = parseRequestHead(`GET / HTTP/1.1\r\nHost: a\r\nAuthorization: ${f}\r\nX: 1`);
      expect([f, kept(r), r.strippedCredential]).toEqual([f, "\r\nHost: a\r\nX: 1", true]);
    }
    // ops joins two Authorization fields with ", " and decodes the base64 across them.
    const split = parseRequestHead(`GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic ${b64.slice(0, 12)}\r\nX: 1\r\nAuthorization: ${b64.slice(12)}`);
    expect([kept(split), split.strippedCredential]).toEqual(["\r\nHost: a\r\nX: 1", true]);
    const two = parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer one\r\nAuthorization: Bearer two");
    expect([kept(two), two.strippedCredential]).toEqual(["\r\nHost: a\r\nAuthorization: Bearer one\r\nAuthorization: Bearer two", false]);
  });

  test("the session cookie is removed in its HTTPS spelling too", () => {
    const r = parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1; __Host-ops_session=x; ops_session=y; b=2");
    expect(kept(r) + r.rewritten).toBe("\r\nHost: a\r\nCookie: a=1; b=2");
  });

  test("an absolute-form target's authority replaces Host; an HTTP/1.1 request without Host is a 400", () => {
    const r = parseRequestHead("GET http://b.test:81/p?q HTTP/1.1\r\nHost: evil.example\r\nX: 1");
    expect([r.host, r.target, r.path, kept(r), r.rewritten]).toEqual(["b.test:81", "/p?q", "/p?q", "\r\nX: 1", "\r\nHost: b.test:81"]);
    const cookie = parseRequestHead("GET http://b/ HTTP/1.1\r\nCookie: ops_session=x; a=1\r\nHost: c");
    expect([kept(cookie), cookie.rewritten]).toEqual(["", "\r\nHost: b\r\nCookie: a=1"]);
    expect(parseRequestHead("GET http://b/ HTTP/1.0").host).toBe("b");
    for (const h of ["GET http://b/ HTTP/1.1", "GET / HTTP/1.1\r\nX: 1", "GET http://b/ HTTP/1.1\r\nHost: a\r\nHost: b", "OPTIONS * HTTP/1.1", "GET * HTTP/1.1\r\nHost: a"]) expect([h, refused(h)]).toEqual([h, 400]);
    expect(parseRequestHead("OPTIONS * HTTP/1.1\r\nHost: a").path).toBe("/");
  });

  test("a field ops owns spelled with underscores (read as `-` by CGI, WSGI, Rack) is dropped; other underscore names are kept", () => {
    const r = parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nX_Forwarded_For: 1\r\nx-forwarded_for: 2\r\nX_REAL_IP: 3\r\nX_Forwarded_Proto: 4\r\nX_Forwarded-Host: 5\r\nContent_Length: 6\r\nTransfer_Encoding: chunked\r\nKeep_Alive: 7\r\nProxy_Authorization: 8\r\nX_Under: 9\r\nX-Forwarded_For_: 10");
    expect([kept(r), r.body, r.forwarding.forwardedFor]).toEqual(["\r\nHost: a\r\nX_Under: 9\r\nX-Forwarded_For_: 10", 0, null]);
  });

  test("bytes above 0x7f in the target and values are kept; the head is then not ASCII", () => {
    const r = parseRequestHead("GET /caf\xe9 HTTP/1.1\r\nHost: a\r\nX: \xe9");
    expect([r.target, r.ascii, kept(r)]).toEqual(["/caf\xe9", false, "\r\nHost: a\r\nX: \xe9"]);
  });

  test("every field line is a token, a colon and a value of tab, visible ASCII or obs-text, whatever line it is on", () => {
    const bad = ["X: a\x7fb", "X: a\x01b", "X: a\x1fb", ": v", "X", "X\r\n", "X: a\r", "X: a\r\r\nY: b", "X: a\n", "X: \u0100", "X\u0100: a", "X(: a", "X: a\r\n\r\nY: b", "X: a\r\n"];
    for (const f of bad) {
      expect([f, refused(`GET / HTTP/1.1\r\n${f}\r\nHost: a`)]).toEqual([f, 400]);
      expect([f, refused(`GET / HTTP/1.1\r\nHost: a\r\n${f}`)]).toEqual([f, 400]);
    }
    // A malformed field line is refused as such before the method is looked at.
    expect(refused("CONNECT a:443 HTTP/1.1\r\nHost: a\r\nX: a\0b")).toBe(400);
    const ok = parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nX:\r\nY:\t tab\t\r\nZ: ~!\x80\xff");
    expect([ok.ascii, kept(ok)]).toEqual([false, "\r\nHost: a\r\nX:\r\nY:\t tab\t\r\nZ: ~!\x80\xff"]);
    expect(parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nX: ~").ascii).toBe(true);
  });
});
