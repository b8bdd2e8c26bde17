/**
 * A replica's response head, parsed straight from its bytes (no string is made for the fields the
 * ingress does not look at), with the body framing decided once (RFC 9112 §6.3): none for HEAD,
 * 1xx, 204 and 304; chunked when chunked is the final transfer coding; until the replica closes
 * for any other coding, or with neither field; else the Content-Length, which must be one decimal
 * value (copies that differ or do not parse are a 502: the response cannot be framed safely).
 * The head sent on to the client is written by serializer.ts from what this returns: the
 * replica's hop-by-hop fields (`Connection` and what it names, `Keep-Alive`, `Proxy-Connection`,
 * `TE`, `Trailer`, `Upgrade` outside a 101) and framing fields never pass as received, nor a
 * `Set-Cookie` for ops's session cookie.
 */
import { HttpError } from "./http-error";
import { TCHAR, tokens } from "./fields";
import { setsSessionCookie } from "./credentials";

/** How a response body ends. */
export const enum Body {
  None = 0,
  Length = 1,
  Chunked = 2,
  UntilClose = 3,
}

export interface ResponseHead {
  status: number;
  http10: boolean;
  body: Body;
  /** The Content-Length the replica sent (-1: none); for a HEAD or 304 answer it describes a body not sent. */
  length: number;
  /** The replica's connection can carry another request after this response. */
  reusable: boolean;
  /** The transfer codings before the final `chunked` (`gzip, ` …), kept for the client; "" when none. */
  codings: string;
  /** Offset of the head (its status line) in the bytes parsed. */
  from: number;
  /** Where the status line ends, from `from` (its CRLF). */
  eol: number;
  /**
   * [start, end) ranges of the head, from `from`, holding the field lines relayed as they are
   * (each starts with CRLF); the head ends 4 bytes before `end`.
   */
  keep: number[];
  /**
   * The head is already what ops writes for it (decision 0246): HTTP/1.1, no field dropped but
   * one Content-Length whose value is the canonical decimal ops would write (`Content-Length: 35`).
   */
  plain: boolean;
  /** Offset of the body in the bytes parsed. */
  end: number;
}

const malformed = (what: string) => new HttpError(502, `the replica sent a malformed ${what}`);

/** Whether bytes `b[from, from + name.length)` are `name` (lower case), ignoring ASCII case. */
function bytesAre(b: Uint8Array, from: number, name: string): boolean {
  for (let i = 0; i < name.length; i++) if ((b[from + i] | 0x20) !== name.charCodeAt(i)) return false;
  return true;
}

const enum R {
  ContentLength,
  TransferEncoding,
  Connection,
  Upgrade,
  SetCookie,
  Drop,
}

const BY_LENGTH: Array<Array<[string, R]>> = [];
for (const [name, kind] of [
  ["content-length", R.ContentLength],
  ["transfer-encoding", R.TransferEncoding],
  ["connection", R.Connection],
  ["upgrade", R.Upgrade],
  ["set-cookie", R.SetCookie],
  ["keep-alive", R.Drop],
  ["proxy-connection", R.Drop],
  ["te", R.Drop],
  ["trailer", R.Drop],
] as Array<[string, R]>)
  (BY_LENGTH[name.length] ??= []).push([name, kind]);

const NONE: readonly string[] = [];
/** Dropped lines of the head being parsed, as [start, end) byte offsets: one array reused (the parse is synchronous). */
const DROPS: number[] = [];

/** Largest response head. */
export const MAX_RESPONSE_HEAD = 64 * 1024;

/**
 * Parse a response head in `b` from `from`; `method` is the request's (a HEAD answer has no
 * body). Returns null while the head is incomplete; throws HttpError(502) when it is malformed.
 */
export function parseResponseHead(b: Buffer, from: number, method: string): ResponseHead | null {
  const n = b.length;
  if (n - from < 12) return null;
  const minor = b[from + 7];
  const d0 = b[from + 9] - 48;
  const d1 = b[from + 10] - 48;
  const d2 = b[from + 11] - 48;
  if (
    b[from] !== 72 || b[from + 1] !== 84 || b[from + 2] !== 84 || b[from + 3] !== 80 || b[from + 4] !== 47 || b[from + 5] !== 49 || b[from + 6] !== 46 ||
    (minor !== 48 && minor !== 49) ||
    b[from + 8] !== 32 ||
    !(d0 >= 1 && d0 <= 5 && d1 >= 0 && d1 <= 9 && d2 >= 0 && d2 <= 9)
  )
    throw malformed("status line");
  let i = from + 12;
  if (i < n && b[i] === 32) {
    for (i++; i < n; i++) {
      const c = b[i];
      if (c === 13) break;
      if ((c < 32 && c !== 9) || c === 127) throw malformed("status line");
    }
  } else if (i < n && b[i] !== 13) throw malformed("status line");
  const status = d0 * 100 + d1 * 10 + d2;
  const eol = i - from;
  let contentLength = -1;
  let canonical = false;
  let lengths = 0;
  let te: string | null = null;
  let connection: string | null = null;
  // Dropped lines as [start, end) byte offsets; most heads drop one or two.
  const drops = DROPS;
  drops.length = 0;
  for (;;) {
    if (i + 1 >= n) return null;
    if (b[i] !== 13 || b[i + 1] !== 10) throw malformed("header field");
    const lineStart = i;
    i += 2;
    if (i + 1 >= n) return null;
    if (b[i] === 13) {
      if (b[i + 1] !== 10) throw malformed("header field");
      i += 2;
      break;
    }
    const name = i;
    while (i < n && TCHAR[b[i]] === 1) i++;
    if (i >= n) return null;
    if (i === name || b[i] !== 58) throw malformed("header field");
    const nameLen = i - name;
    const value = ++i;
    for (; i < n; i++) {
      const c = b[i];
      if (c === 13) break;
      if ((c < 32 && c !== 9) || c === 127) throw malformed("header field");
    }
    if (i >= n) return null;
    if (i - from > MAX_RESPONSE_HEAD) throw malformed("head: it is larger than 64 KiB");
    const candidates = BY_LENGTH[nameLen];
    if (candidates === undefined) continue;
    for (let k = 0; k < candidates.length; k++) {
      const field = candidates[k][0];
      const kind = candidates[k][1];
      if (!bytesAre(b, name, field)) continue;
      if (kind === R.SetCookie) {
        // An app never sets ops's session cookie (decision 0520); its other cookies pass.
        if (setsSessionCookie(b.toString("latin1", value, i))) drops.push(lineStart, i);
        break;
      }
      if (kind === R.ContentLength) {
        let v = 0;
        let digits = 0;
        let j = value;
        while (j < i && (b[j] === 32 || b[j] === 9)) j++;
        const first = j;
        for (; j < i && b[j] >= 48 && b[j] <= 57; j++) {
          v = v * 10 + b[j] - 48;
          if (++digits > 15) throw malformed("Content-Length");
        }
        // One space, the digits without a leading zero, nothing after: the line ops would write.
        canonical = first === value + 1 && b[value] === 32 && j === i && (digits === 1 || b[first] !== 48);
        while (j < i && (b[j] === 32 || b[j] === 9)) j++;
        if (digits === 0 || j !== i || (lengths > 0 && v !== contentLength)) throw malformed("Content-Length");
        contentLength = v;
        lengths++;
      } else if (kind === R.TransferEncoding) te = te === null ? b.toString("latin1", value, i).trim() : `${te}, ${b.toString("latin1", value, i).trim()}`;
      else if (kind === R.Connection) connection = connection === null ? b.toString("latin1", value, i) : `${connection}, ${b.toString("latin1", value, i)}`;
      // A 101 keeps its Upgrade: it is the switch itself.
      if (kind !== R.Upgrade || status !== 101) drops.push(lineStart, i);
      break;
    }
  }
  const end = i;
  const http10 = minor === 48;
  const conn = connection === null ? NONE : tokens(connection);
  let reusable = http10 ? conn.includes("keep-alive") : !conn.includes("close");
  let body: Body;
  let codings = "";
  if (method === "HEAD" || status < 200 || status === 204 || status === 304) body = Body.None;
  else if (te !== null) {
    const list = tokens(te);
    if (list[list.length - 1] === "chunked" && list.indexOf("chunked") === list.length - 1) {
      body = Body.Chunked;
      codings = list.slice(0, -1).map((c) => `${c}, `).join("");
    } else body = Body.UntilClose;
    // Transfer-Encoding beside Content-Length: the length is ignored, and the connection is not trusted again.
    if (lengths > 0) reusable = false;
  } else if (lengths > 0) body = Body.Length;
  else body = Body.UntilClose;
  if (body === Body.UntilClose) reusable = false;

  // Lines named by the replica's Connection field go too (not in a 101, whose fields are the switch).
  const extra = status === 101 || conn === NONE ? NONE : conn.filter((t) => t !== "close" && t !== "keep-alive");
  if (extra.length > 0) {
    const head = b.toString("latin1", from, end - 4);
    for (let at = head.indexOf("\r\n"); at >= 0; ) {
      const next = head.indexOf("\r\n", at + 2);
      if (extra.includes(head.slice(at + 2, head.indexOf(":", at + 2)).toLowerCase())) drops.push(from + at, from + (next < 0 ? head.length : next));
      at = next;
    }
  }
  const plain = !http10 && status !== 101 && (drops.length === 0 || (drops.length === 2 && lengths === 1 && canonical));
  return { status, http10, body, length: lengths > 0 ? contentLength : -1, reusable, codings, from, eol, keep: keptRanges(eol, end - 4 - from, from, drops), plain, end };
}

/** The ranges of a head of `length` bytes after its status line (offsets from `from`) outside the dropped [start, end) byte ranges. */
function keptRanges(eol: number, length: number, from: number, drops: number[]): number[] {
  if (eol >= length) return [];
  if (drops.length === 0) return [eol, length];
  if (drops.length === 2) {
    const s = drops[0] - from;
    const e = drops[1] - from;
    return s > eol ? (e < length ? [eol, s, e, length] : [eol, s]) : e < length ? [e, length] : [];
  }
  const sorted: Array<[number, number]> = [];
  for (let k = 0; k < drops.length; k += 2) sorted.push([drops[k] - from, drops[k + 1] - from]);
  sorted.sort((x, y) => x[0] - y[0]);
  const keep: number[] = [];
  let at = eol;
  for (const [s, e] of sorted) {
    if (s > at) keep.push(at, s);
    if (e > at) at = e;
  }
  if (length > at) keep.push(at, length);
  return keep;
}
