/** The heads the ingress writes: the upstream request and the client's response, framing by ops. */
import { describe, test, expect } from "bun:test";
import { parseRequestHead } from "./request-parser";
import { parseResponseHead } from "./response-parser";
import { requestHeadOut, responseHeadOut, writeResponseHead, Out } from "./serializer";

/** The head written for `head` (null: sent as received). */
function out(head: string, clientHttp10: boolean, close: boolean, method = "GET") {
  const b = Buffer.from(`${head}\r\n\r\n`, "latin1");
  return responseHeadOut(parseResponseHead(b, 0, method)!, b, clientHttp10, close, method);
}

/** A head's status line and its fields as a sorted list of `name: value` with lower-case names. */
function fieldsOf(head: string): [string, string[]] {
  const [line, ...fields] = head.replace(/\r\n\r\n$/, "").split("\r\n");
  return [line, fields.map((f) => f.slice(0, f.indexOf(":")).toLowerCase() + f.slice(f.indexOf(":"))).sort()];
}

describe("serializer", () => {
  test("requests: HTTP/1.1, the origin-form target, kept fields, then framing and forwarding by ops", () => {
    const fwd = "\r\nx-forwarded-for: 1.2.3.4";
    expect(requestHeadOut(parseRequestHead("POST /x HTTP/1.0\r\nHost: a\r\nContent-Length: 3\r\nX: y"), fwd)).toBe("POST /x HTTP/1.1\r\nHost: a\r\nX: y\r\ncontent-length: 3\r\nx-forwarded-for: 1.2.3.4\r\n\r\n");
    expect(requestHeadOut(parseRequestHead("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: a"), fwd)).toBe("POST /x HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\nx-forwarded-for: 1.2.3.4\r\n\r\n");
    // An absolute-form target's authority replaces the client's Host (RFC 9112 §3.2.2).
    expect(requestHeadOut(parseRequestHead("GET http://b/p HTTP/1.1\r\nHost: a\r\nX: y"), "")).toBe("GET /p HTTP/1.1\r\nX: y\r\nHost: b\r\n\r\n");
    expect(requestHeadOut(parseRequestHead("GET /s HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade"), "")).toBe("GET /s HTTP/1.1\r\nHost: a\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n");
  });

  test("responses: framing by ops, the client's connection said once", () => {
    expect(out("HTTP/1.0 200 OK\r\nContent-Length: 2\r\nX: y", false, false)).toEqual({ head: "HTTP/1.1 200 OK\r\nX: y\r\ncontent-length: 2\r\n\r\n", mode: Out.Raw, close: false });
    expect(out("HTTP/1.1 200 OK\r\nContent-Length: 2", true, false)!.head).toBe("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n");
    expect(out("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", false, false)).toEqual({ head: "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", mode: Out.Rechunk, close: false });
    expect(out("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", true, false)).toEqual({ head: "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n", mode: Out.Dechunk, close: true });
    expect(out("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked", true, false)).toBeNull();
    expect(out("HTTP/1.1 200 OK", false, false)).toEqual({ head: "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n", mode: Out.Raw, close: true });
    expect(out("HTTP/1.1 200 OK\r\nContent-Length:9", false, false, "HEAD")).toEqual({ head: "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n", mode: Out.None, close: false });
    expect(out("HTTP/1.1 204 No Content\r\nContent-Length: 9", false, true)).toEqual({ head: "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n", mode: Out.None, close: true });
    expect(out("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nKeep-Alive: 1", false, false)!.head).toBe("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
  });

  test("a plain head is sent as received only where writing it anew gives the same fields", () => {
    const heads = [
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2",
      "HTTP/1.1 200 OK\r\ncontent-length: 0",
      "HTTP/1.1 404 Not Found\r\nContent-Length: 3",
      "HTTP/1.1 304 Not Modified\r\nETag: x\r\nContent-Length: 40",
      "HTTP/1.1 304 Not Modified\r\nETag: x",
      "HTTP/1.1 204 No Content\r\nDate: x",
      "HTTP/1.1 204 No Content\r\nContent-Length: 3",
      "HTTP/1.1 200 OK\r\nX: y",
      "HTTP/1.1 103 Early Hints\r\nLink: </a>",
      "HTTP/1.1 100 Continue",
    ];
    let asReceived = 0;
    for (const head of heads)
      for (const method of ["GET", "HEAD"])
        for (const [http10, close] of [[false, false], [true, false], [false, true]] as const) {
          const b = Buffer.from(`${head}\r\n\r\n`, "latin1");
          const res = parseResponseHead(b, 0, method)!;
          const fast = responseHeadOut(res, b, http10, close, method);
          const anew = writeResponseHead(res, b, http10, close, method);
          if (fast?.head !== null) {
            expect(fast).toEqual(anew);
            continue;
          }
          asReceived++;
          expect([head, method, http10, close, fieldsOf(`${head}\r\n\r\n`)]).toEqual([head, method, http10, close, fieldsOf(anew!.head)]);
          expect({ ...fast, head: "" }).toEqual({ ...anew!, head: "" });
        }
    // Never for an HTTP/1.0 client or a connection that closes, nor where a length would be added or dropped.
    expect(asReceived).toBe(14);
  });
});
