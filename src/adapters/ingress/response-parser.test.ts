/**
 * The response head parser on its own: framing decided once (none, length, chunked, until close),
 * what a replica's answer may not carry to the client, and heads split across reads.
 */
import { describe, test, expect } from "bun:test";
import { Body, parseResponseHead, type ResponseHead } from "./response-parser";
import { HttpError } from "./http-error";

const bytes = new WeakMap<ResponseHead, Buffer>();
function parse(head: string, method = "GET"): ResponseHead {
  const b = Buffer.from(`${head}\r\n\r\n`, "latin1");
  const r = parseResponseHead(b, 0, method);
  if (!r) throw new Error("incomplete");
  bytes.set(r, b);
  return r;
}
const kept = (r: ResponseHead) => {
  const head = bytes.get(r)!.toString("latin1", r.from, r.end - 4);
  let out = "";
  for (let k = 0; k < r.keep.length; k += 2) out += head.slice(r.keep[k], r.keep[k + 1]);
  return out;
};

describe("response heads", () => {
  test("framing: none for HEAD, 1xx, 204, 304; chunked when final; until close otherwise", () => {
    expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 5")).toMatchObject({ status: 200, body: Body.Length, length: 5, reusable: true });
    expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 5", "HEAD")).toMatchObject({ body: Body.None, length: 5 });
    expect(parse("HTTP/1.1 204 No Content\r\nContent-Length: 5").body).toBe(Body.None);
    expect(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 5").body).toBe(Body.None);
    expect(parse("HTTP/1.1 100 Continue").body).toBe(Body.None);
    expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked")).toMatchObject({ body: Body.Chunked, codings: "gzip, ", reusable: true });
    expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9")).toMatchObject({ body: Body.Chunked, reusable: false });
    expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip")).toMatchObject({ body: Body.UntilClose, reusable: false });
    expect(parse("HTTP/1.1 200 OK")).toMatchObject({ body: Body.UntilClose, reusable: false });
    expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5").length).toBe(5);
    expect(parse("HTTP/1.0 200 OK\r\nContent-Length: 1").reusable).toBe(false);
    expect(parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1").reusable).toBe(true);
    expect(parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1").reusable).toBe(false);
  });

  test("hop-by-hop and framing fields are not kept, nor what Connection names; a 101 keeps its Upgrade", () => {
    const r = parse("HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nSet-Cookie: a=1\r\nContent-Length: 0\r\nTrailer: x\r\nUpgrade: h2c\r\nSet-Cookie: b=2");
    expect(kept(r)).toBe("\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2");
    const up = parse("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x");
    expect(kept(up)).toBe("\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: x");
  });

  test("a Set-Cookie for ops's session cookie never passes, in either spelling or case, nor as a nameless cookie; the app's own do", () => {
    const r = parse(
      "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: ops_session=opss_x; Path=/\r\nset-cookie:  __Host-ops_session=y; Secure; Path=/\r\nSET-COOKIE: OPS_SESSION=z\r\nSet-Cookie: =ops_session=w\r\nSet-Cookie: __host-OPS_session =v\r\nSet-Cookie: ops_session_theme=dark\r\nContent-Length: 0\r\nSet-Cookie: b=ops_session",
    );
    expect(kept(r)).toBe("\r\nSet-Cookie: a=1\r\nSet-Cookie: ops_session_theme=dark\r\nSet-Cookie: b=ops_session");
    expect(r.plain).toBe(false);
    expect(parse("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 0").plain).toBe(true);
  });

  test("malformed answers are a 502", () => {
    for (const bad of ["HTTP/1.1 20 OK", "HTTP/2 200 OK", "HTTP/1.1 600 X", "HTTP/1.1 200 OK\r\nBad Field: x", "HTTP/1.1 200 OK\r\nContent-Length: 1x", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2", "HTTP/1.1 200 OK\r\nContent-Length: -1", "HTTP/1.1 200 OK\r\nX: a\nb", "HTTP/1.1 200 OK\r\nX: a\rb", "HTTP/1.1 200 OK\r\nX: a\0b"]) {
      let status = 0;
      try {
        parse(bad);
      } catch (e) {
        status = (e as HttpError).status;
      }
      expect([bad, status]).toEqual([bad, 502]);
    }
  });

  test("incomplete until the blank line, whatever the cut; the body starts after it", () => {
    const whole = Buffer.from("xxHTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabc");
    for (let cut = 2; cut < whole.length - 3; cut++) expect(parseResponseHead(whole.subarray(0, cut), 2, "GET")).toBeNull();
    expect(parseResponseHead(whole, 2, "GET")).toMatchObject({ status: 200, body: Body.Length, length: 3, end: whole.length - 3, from: 2, eol: 15, keep: [34, 42] });
  });

  test("plain: HTTP/1.1 with nothing dropped but one Content-Length written as ops writes it", () => {
    for (const head of ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y", "HTTP/1.1 200 OK\r\ncontent-length: 0", "HTTP/1.1 204 No Content\r\nDate: x", "HTTP/1.1 200 OK\r\nX: y", "HTTP/1.1 200"]) expect([head, parse(head).plain]).toEqual([head, true]);
    for (const head of [
      "HTTP/1.0 200 OK\r\nContent-Length: 5",
      "HTTP/1.1 200 OK\r\nContent-Length:5",
      "HTTP/1.1 200 OK\r\nContent-Length:  5",
      "HTTP/1.1 200 OK\r\nContent-Length: 5 ",
      "HTTP/1.1 200 OK\r\nContent-Length:\t5",
      "HTTP/1.1 200 OK\r\nContent-Length: 05",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked",
      "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5",
      "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 5",
      "HTTP/1.1 200 OK\r\nConnection: x-a\r\nX-A: 1",
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket",
    ])
      expect([head, parse(head).plain]).toEqual([head, false]);
  });
});
