/**
 * The heads the ingress writes, from what the parsers returned: the upstream request (request
 * line, the client's fields less hop-by-hop, forwarding and credential fields, then framing ops
 * computed and the forwarding fields ops sets) and the client's response (status line, the
 * replica's fields less hop-by-hop and framing ones, then framing ops computed and its own
 * `Connection`). Field lines pass as the parser validated them; nothing else of a head is copied.
 */
import type { RequestHead } from "./request-parser";
import { Body, type ResponseHead } from "./response-parser";

/** Append the kept ranges of `head` to `out`. */
function kept(head: string, keep: readonly number[], out: string): string {
  for (let k = 0; k < keep.length; k += 2) out += head.slice(keep[k], keep[k + 1]);
  return out;
}

/**
 * The request head sent upstream (blank line included): always HTTP/1.1, the origin-form
 * target, `forwarded` = the forwarding field lines (forwarded.ts).
 */
export function requestHeadOut(req: RequestHead, forwarded: string): string {
  const { head, keep } = req;
  let out: string;
  if (!req.lineKept) out = kept(head, keep, `${req.method} ${req.target} HTTP/1.1`);
  else {
    // The request line as received, and most often every field line after it: one piece.
    const eol = req.method.length + req.target.length + 10;
    out = keep.length === 2 && keep[0] === eol && keep[1] === head.length ? head : kept(head, keep, head.slice(0, eol));
  }
  out += req.rewritten;
  if (req.body === -1) out += "\r\ntransfer-encoding: chunked";
  else if (req.hasLength) out += `\r\ncontent-length: ${req.body}`;
  if (req.websocket) out += "\r\nupgrade: websocket\r\nconnection: upgrade";
  return `${out}${forwarded}\r\n\r\n`;
}

/** How the response body is written to the client. */
export const enum Out {
  /** No body. */
  None,
  /** The bytes as they come, up to the length (or the close). */
  Raw,
  /** Decoded and chunked anew. */
  Rechunk,
  /** Decoded; the body ends with the connection (an HTTP/1.0 client). */
  Dechunk,
}

export interface ResponseOut {
  /** The head to write (blank line included); null: the replica's head bytes, as they are, are that head (decision 0246). */
  head: string | null;
  mode: Out;
  /** The client's connection closes after this response. */
  close: boolean;
}

/** The answers for a head sent as received (shared: one per response would be garbage). */
const AS_RECEIVED_RAW: ResponseOut = Object.freeze({ head: null, mode: Out.Raw, close: false });
const AS_RECEIVED_NONE: ResponseOut = Object.freeze({ head: null, mode: Out.None, close: false });

/**
 * The response head for the client (blank line included), from the bytes `b` the head was parsed
 * from. `close`: the client's connection closes after this response whatever the replica said; an
 * HTTP/1.0 client that asked for keep-alive is told it is kept.
 *
 * A plain head (response-parser.ts) whose framing ops writes as the replica wrote it (a length,
 * or the length a HEAD or 304 answer describes) and that needs no `Connection` field is already
 * what this would write, field for field: `head` is then null and the replica's bytes are sent
 * (decision 0246). Writing the same fields in another order or case would cost a string and a
 * copy per response and change nothing a client can read.
 */
export function responseHeadOut(res: ResponseHead, b: Buffer, clientHttp10: boolean, close: boolean, method: string): ResponseOut | null {
  if (res.plain && !close && !clientHttp10) {
    if (res.body === Body.Length) return res.length > 0 ? AS_RECEIVED_RAW : AS_RECEIVED_NONE;
    if (res.body === Body.None && (res.length >= 0) === (res.status >= 200 && (method === "HEAD" || res.status === 304))) return AS_RECEIVED_NONE;
  }
  return writeResponseHead(res, b, clientHttp10, close, method);
}

/** The response head written anew, whatever the replica's looked like (responseHeadOut's arguments). */
export function writeResponseHead(res: ResponseHead, b: Buffer, clientHttp10: boolean, close: boolean, method: string): (ResponseOut & { head: string }) | null {
  const head = b.toString("latin1", res.from, res.end - 4);
  let out = kept(head, res.keep, `HTTP/1.1${head.slice(8, res.eol)}`);
  let mode = Out.None;
  if (res.status === 101) return { head: `${out}\r\nconnection: upgrade\r\n\r\n`, mode: Out.Raw, close: false };
  switch (res.body) {
    case Body.None:
      if ((method === "HEAD" || res.status === 304) && res.length >= 0) out += `\r\ncontent-length: ${res.length}`;
      break;
    case Body.Length:
      out += `\r\ncontent-length: ${res.length}`;
      mode = res.length > 0 ? Out.Raw : Out.None;
      break;
    case Body.Chunked:
      if (clientHttp10) {
        // A transfer coding an HTTP/1.0 client cannot be told about: not relayable.
        if (res.codings !== "") return null;
        mode = Out.Dechunk;
        close = true;
      } else {
        out += `\r\ntransfer-encoding: ${res.codings}chunked`;
        mode = Out.Rechunk;
      }
      break;
    case Body.UntilClose:
      mode = Out.Raw;
      close = true;
      break;
  }
  if (res.status < 200) return { head: `${out}\r\n\r\n`, mode: Out.None, close: false };
  if (close) out += "\r\nconnection: close";
  else if (clientHttp10) out += "\r\nconnection: keep-alive";
  return { head: `${out}\r\n\r\n`, mode, close };
}
