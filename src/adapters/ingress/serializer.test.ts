/** The heads the ingress writes: the upstream request and the client's response, framing by ops. */
import { describe, test, expect } from "bun:test";
import { parseRequestHead } from "./request-parser";
import { parseResponseHead } from "./response-parser";
import { requestHeadOut, responseHeadOut, Out } from "./serializer";

const res = (head: string, method = "GET") => parseResponseHead(Buffer.from(`${head}\r\n\r\n`, "latin1"), 0, method)!;

describe("serializer", () => {
  test("requests: HTTP/1.1, the origin-form target, kept fields, then framing and forwarding by ops", () => {
    const fwd = "\r\nx-forwarded-for: 1.2.3.4";
    expect(requestHeadOut(parseRequestHead("POST /x HTTP/1.0\r\nHost: a\r\nContent-Length: 3\r\nX: y"), fwd)).toBe("POST /x HTTP/1.1\r\nHost: a\r\nX: y\r\ncontent-length: 3\r\nx-forwarded-for: 1.2.3.4\r\n\r\n");
    expect(requestHeadOut(parseRequestHead("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: a"), fwd)).toBe("POST /x HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\nx-forwarded-for: 1.2.3.4\r\n\r\n");
    expect(requestHeadOut(parseRequestHead("GET http://b/p HTTP/1.1\r\nHost: a"), "")).toBe("GET /p HTTP/1.1\r\nHost: a\r\n\r\n");
    expect(requestHeadOut(parseRequestHead("GET /s HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade"), "")).toBe("GET /s HTTP/1.1\r\nHost: a\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n");
  });

  test("responses: framing by ops, the client's connection said once", () => {
    expect(responseHeadOut(res("HTTP/1.0 200 OK\r\nContent-Length: 2\r\nX: y"), false, false, "GET")).toEqual({ head: "HTTP/1.1 200 OK\r\nX: y\r\ncontent-length: 2\r\n\r\n", mode: Out.Raw, close: false });
    expect(responseHeadOut(res("HTTP/1.1 200 OK\r\nContent-Length: 2"), true, false, "GET")!.head).toBe("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n");
    expect(responseHeadOut(res("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"), false, false, "GET")).toEqual({ head: "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", mode: Out.Rechunk, close: false });
    expect(responseHeadOut(res("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"), true, false, "GET")).toEqual({ head: "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n", mode: Out.Dechunk, close: true });
    expect(responseHeadOut(res("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked"), true, false, "GET")).toBeNull();
    expect(responseHeadOut(res("HTTP/1.1 200 OK"), false, false, "GET")).toEqual({ head: "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n", mode: Out.Raw, close: true });
    expect(responseHeadOut(res("HTTP/1.1 200 OK\r\nContent-Length: 9", "HEAD"), false, false, "HEAD")).toEqual({ head: "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n", mode: Out.None, close: false });
    expect(responseHeadOut(res("HTTP/1.1 204 No Content\r\nContent-Length: 9"), false, true, "GET")).toEqual({ head: "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n", mode: Out.None, close: true });
    expect(responseHeadOut(res("HTTP/1.1 103 Early Hints\r\nLink: </a>"), false, false, "GET")!.head).toBe("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
  });
});
