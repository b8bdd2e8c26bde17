/**
 * The HTTP/1.1 wire format as the ingress needs it (RFC 9112): request and response heads parsed
 * strictly enough that the ingress and the replica can never disagree on where a message ends
 * (the root of request smuggling), and a chunked-body scanner that finds the end of a chunked
 * message while its bytes are relayed untouched.
 *
 * Heads are handled as latin1 strings (one byte, one char), so bytes above 0x7f in a field value
 * survive the round trip; they are written back with `Buffer.from(s, "latin1")`.
 */

/** tchar (RFC 9110 §5.6.2) by char code: 1 for a token character. */
const TCHAR = new Uint8Array(256);
for (const ch of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[ch.charCodeAt(0)] = 1;
/**
 * The field lines after the start line, each `\r\n` + token + `:` + value (no whitespace before
 * the colon, no obs-fold, no bare CR or LF, no NUL or other controls but tab).
 */
const FIELD_LINES = /(?:\r\n[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*)*$/y;
/** The same, ASCII only (most heads): such a head can be written as a string. */
const ASCII_FIELD_LINES = /(?:\r\n[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e]*)*$/y;
/** Request fields the ingress drops or replaces (hop-by-hop ones, RFC 9110 §7.6.1, and the X-Forwarded-* it sets). */
const REQUEST_DROP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "proxy-authorization", "proxy-authenticate", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"]);
/** Response fields that describe the replica's connection, not the client's. */
const RESPONSE_DROP = new Set(["connection", "keep-alive", "proxy-connection"]);

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Whether the token list `v` (comma-separated, any case) holds `token` (lower case). */
function hasToken(v: string | null, token: string): boolean {
  if (v === null) return false;
  const lower = v.toLowerCase();
  let at = lower.indexOf(token);
  while (at >= 0) {
    let i = at - 1;
    while (i >= 0 && (lower.charCodeAt(i) === 32 || lower.charCodeAt(i) === 9)) i--;
    let j = at + token.length;
    while (j < lower.length && (lower.charCodeAt(j) === 32 || lower.charCodeAt(j) === 9)) j++;
    if ((i < 0 || lower.charCodeAt(i) === 44) && (j >= lower.length || lower.charCodeAt(j) === 44)) return true;
    at = lower.indexOf(token, at + 1);
  }
  return false;
}

function tokens(list: string | null): string[] {
  if (!list) return [];
  const out: string[] = [];
  for (const t of list.split(",")) if (t.trim()) out.push(t.trim().toLowerCase());
  return out;
}

/** A Content-Length that every copy agrees on (`null`: copies disagree), or an error. */
function contentLength(v: string | null, what: string): number {
  if (v === null || v.length === 0 || v.length > 15) throw new HttpError(400, `${what} has an invalid Content-Length`);
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) throw new HttpError(400, `${what} has an invalid Content-Length`);
  }
  return Number(v);
}

/**
 * The fields the ingress looks at, found in one pass over the head without copying the others:
 * a line's name is compared in place (case-insensitively) only when its length is one of theirs.
 * Repeated fields are joined with ", " (a Content-Length repeated with another value reads as null).
 */
interface Fields {
  host: string | null;
  hosts: number;
  contentLength: string | null | undefined;
  transferEncoding: string | null;
  connection: string | null;
  upgrade: string | null;
  forwardedFor: string | null;
  /** A field the ingress drops or replaces is present. */
  rewrite: boolean;
}

/** Whether `head[from, from + name.length)` is `name` (lower case), ignoring ASCII case. */
function nameIs(head: string, from: number, name: string): boolean {
  for (let i = 0; i < name.length; i++) if ((head.charCodeAt(from + i) | 0x20) !== name.charCodeAt(i)) return false;
  return true;
}

const enum F {
  Host,
  ContentLength,
  TransferEncoding,
  Connection,
  Upgrade,
  ForwardedFor,
  /** Dropped from requests (and from responses when `both`). */
  Drop,
}

/** The fields by name length: [name, kind, looked at in responses too]. */
const BY_LENGTH: Array<Array<[string, F, boolean]>> = [];
for (const [name, kind, both] of [
  ["host", F.Host, false],
  ["content-length", F.ContentLength, true],
  ["transfer-encoding", F.TransferEncoding, true],
  ["connection", F.Connection, true],
  ["upgrade", F.Upgrade, false],
  ["x-forwarded-for", F.ForwardedFor, false],
  ["keep-alive", F.Drop, true],
  ["proxy-connection", F.Drop, true],
  ["te", F.Drop, false],
  ["trailer", F.Drop, false],
  ["proxy-authorization", F.Drop, false],
  ["proxy-authenticate", F.Drop, false],
  ["x-forwarded-proto", F.Drop, false],
  ["x-forwarded-host", F.Drop, false],
] as Array<[string, F, boolean]>) (BY_LENGTH[name.length] ??= []).push([name, kind, both]);

function join(prior: string | null, v: string): string {
  return prior === null ? v : `${prior}, ${v}`;
}

/** The request fields of `head` (field lines from `from`). */
function scan(head: string, from: number): Fields {
  const f: Fields = { host: null, hosts: 0, contentLength: undefined, transferEncoding: null, connection: null, upgrade: null, forwardedFor: null, rewrite: false };
  let at = from;
  while (at >= 0) {
    const next = head.indexOf("\r\n", at + 2);
    const colon = head.indexOf(":", at + 2);
    const candidates = BY_LENGTH[colon - at - 2];
    if (candidates !== undefined) {
      for (const [name, kind] of candidates) {
        if (!nameIs(head, at + 2, name)) continue;
        if (kind === F.Drop) {
          f.rewrite = true;
          break;
        }
        const v = head.slice(colon + 1, next < 0 ? head.length : next).trim();
        if (kind === F.Host) {
          f.host = v;
          f.hosts++;
        } else if (kind === F.ContentLength) f.contentLength = f.contentLength === undefined || f.contentLength === v ? v : null;
        else if (kind === F.TransferEncoding) f.transferEncoding = join(f.transferEncoding, v);
        else if (kind === F.Connection) {
          f.connection = join(f.connection, v);
          f.rewrite = true;
        } else if (kind === F.Upgrade) {
          f.upgrade = join(f.upgrade, v);
          f.rewrite = true;
        } else {
          f.forwardedFor = join(f.forwardedFor, v);
          f.rewrite = true;
        }
        break;
      }
    }
    at = next;
  }
  return f;
}

/** `head` without the field lines whose lower-cased name `drop` holds (keeping the start line). */
function without(head: string, eol: number, drop: (name: string) => boolean): string {
  let out = head.slice(0, eol);
  let at = eol;
  while (at >= 0) {
    const next = head.indexOf("\r\n", at + 2);
    const end = next < 0 ? head.length : next;
    const name = head.slice(at + 2, head.indexOf(":", at + 2)).toLowerCase();
    if (!drop(name)) out += head.slice(at, end);
    at = next;
  }
  return out;
}

export interface RequestHead {
  method: string;
  /** The request target as sent (origin form `/path?q`, or absolute form). */
  target: string;
  /** The path and query the route table matches (`/` for `*`). */
  path: string;
  http10: boolean;
  /** The Host field as sent (null when absent), or the host of an absolute-form target. */
  host: string | null;
  /** Body framing: -1 chunked, else the length (0: none). */
  body: number;
  /** The client asked to close the connection after this exchange (or is HTTP/1.0 without keep-alive). */
  close: boolean;
  /** An `Upgrade: websocket` request. */
  websocket: boolean;
  /** The head is ASCII (no obs-text bytes): its string form is its bytes. */
  ascii: boolean;
  /**
   * The head sent to the replica, X-Forwarded-* fields and blank line included, when it differs
   * from the head received; null: the head as received, then `forwardedFields(null, ip, host)`.
   */
  forward: string | null;
}

/** The request line's parts: [method end, target end, minor version char, 1 if ASCII], or null when malformed. */
function requestLine(head: string, eol: number): [number, number, number, number] | null {
  let i = 0;
  while (i < eol && TCHAR[head.charCodeAt(i)] === 1) i++;
  if (i === 0 || head.charCodeAt(i) !== 32) return null;
  const m = i;
  i++;
  const t = i;
  let ascii = 1;
  for (; i < eol; i++) {
    const c = head.charCodeAt(i);
    if (c <= 32 || c === 127 || c > 255) break;
    if (c > 127) ascii = 0;
  }
  if (i === t || head.charCodeAt(i) !== 32 || eol - i !== 9 || !head.startsWith(" HTTP/1.", i)) return null;
  const minor = head.charCodeAt(i + 8);
  if (minor !== 48 && minor !== 49) return null;
  return [m, i, minor, ascii];
}

/**
 * Parse a request head (`head` = the bytes before the blank line, as latin1) and build the head
 * sent to the replica: the client's fields less the hop-by-hop ones, then `X-Forwarded-For`
 * (the client's chain plus `ip`), `-Proto` and `-Host`. Throws HttpError(400/405/501) for
 * anything malformed or ambiguous.
 */
export function parseRequest(head: string, ip: string): RequestHead {
  const nl = head.indexOf("\r\n");
  const eol = nl < 0 ? head.length : nl;
  const line = requestLine(head, eol);
  if (!line) throw new HttpError(400, "the request line is malformed");
  let ascii = line[3] === 1;
  if (nl >= 0) {
    ASCII_FIELD_LINES.lastIndex = nl;
    if (!ASCII_FIELD_LINES.test(head)) {
      FIELD_LINES.lastIndex = nl;
      if (!FIELD_LINES.test(head)) throw new HttpError(400, "a header field is malformed");
      ascii = false;
    }
  }
  const method = head.slice(0, line[0]);
  const sent = head.slice(line[0] + 1, line[1]);
  let target = sent;
  const http10 = line[2] === 48;
  const f = nl < 0 ? null : scan(head, nl);
  if (f !== null && f.hosts > 1) throw new HttpError(400, "the request has more than one Host field");
  let host = f?.host ?? null;
  if (!host && !http10) throw new HttpError(400, "the request named no host");
  if (method === "CONNECT") throw new HttpError(405, "the ingress does not tunnel CONNECT");
  let path = target;
  if (target.charCodeAt(0) !== 47 /* / */) {
    if (target === "*") path = "/";
    else {
      const abs = /^https?:\/\/([^/?#]+)([^#]*)/i.exec(target);
      if (!abs) throw new HttpError(400, "the request target is malformed");
      host = abs[1];
      path = abs[2] || "/";
      target = path;
    }
  }

  let body = 0;
  if (f?.transferEncoding) {
    if (f.contentLength !== undefined) throw new HttpError(400, "the request has both Transfer-Encoding and Content-Length");
    if (http10) throw new HttpError(400, "an HTTP/1.0 request cannot use Transfer-Encoding");
    const codings = tokens(f.transferEncoding);
    if (codings.length !== 1 || codings[0] !== "chunked") throw new HttpError(501, "only the chunked transfer coding is understood");
    body = -1;
  } else if (f !== null && f.contentLength !== undefined) body = contentLength(f.contentLength, "the request");

  const connection = f?.connection ?? null;
  const close = http10 ? !hasToken(connection, "keep-alive") : hasToken(connection, "close");
  const websocket = !http10 && hasToken(f?.upgrade ?? null, "websocket") && hasToken(connection, "upgrade");

  // Most heads go out as they came, followed by forwardedFields (the caller appends them to the
  // bytes it has); the others are rebuilt here.
  let forward: string | null = null;
  const absolute = target !== sent;
  if (f?.rewrite || absolute) {
    let out = head;
    if (f?.rewrite || (absolute && f !== null && f.hosts > 0)) {
      // An absolute-form target names the host: the Host field sent with it is replaced (RFC 9112 §3.2.2).
      const extra = connection === null ? null : new Set(tokens(connection));
      out = without(head, nl, (name) => (name === "host" ? absolute : REQUEST_DROP.has(name) || (extra !== null && extra.has(name))));
      if (websocket) out += "\r\nupgrade: websocket\r\nconnection: upgrade";
    }
    if (absolute) out = `${method} ${target}${out.slice(line[1])}\r\nhost: ${host}`;
    forward = out + forwardedFields(f?.forwardedFor ?? null, ip, host);
  }
  return { method, target, path, http10, host, body, close, websocket, ascii, forward };
}

/** The X-Forwarded-* fields and the blank line that ends a forwarded head (`prior`: the client's own X-Forwarded-For). */
export function forwardedFields(prior: string | null, ip: string, host: string | null): string {
  return `\r\nx-forwarded-for: ${prior ? `${prior}, ${ip}` : ip}\r\nx-forwarded-proto: http${host ? `\r\nx-forwarded-host: ${host}` : ""}\r\n\r\n`;
}

export interface ResponseHead {
  status: number;
  http10: boolean;
  /** Body framing: -1 chunked, -2 until the replica closes, else the length (0: none). */
  body: number;
  /** The replica's connection can carry another request after this response. */
  reusable: boolean;
  /** The head to send the client, when it differs from the replica's (connection fields removed). */
  rewritten: string | null;
}

/** Whether bytes `b[from, from + name.length)` are `name` (lower case), ignoring ASCII case. */
function bytesAre(b: Uint8Array, from: number, name: string): boolean {
  for (let i = 0; i < name.length; i++) if ((b[from + i] | 0x20) !== name.charCodeAt(i)) return false;
  return true;
}

const malformed = (what: string) => new HttpError(502, `the replica sent a malformed ${what}`);

/**
 * Parse a response head from a replica straight from its bytes (no string is made unless a field
 * must be removed): `b` from `from`; `method` is the request's (HEAD answers have no body).
 * Returns null while the head is incomplete, else the head and `end`, the offset of its body.
 */
export function parseResponseHead(b: Buffer, from: number, method: string): (ResponseHead & { end: number }) | null {
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
    !(d0 >= 1 && d0 <= 9 && d1 >= 0 && d1 <= 9 && d2 >= 0 && d2 <= 9)
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
  let contentLength = -1;
  let lengths = 0;
  let te: string | null = null;
  let connection: string | null = null;
  let rewrite = false;
  // Each field line: CRLF, token, ":", value; the head ends at an empty line.
  for (;;) {
    if (i + 1 >= n) return null;
    if (b[i] !== 13 || b[i + 1] !== 10) throw malformed("header field");
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
    if (i - from > 64 * 1024) throw malformed("head: it is larger than 64 KiB");
    const candidates = BY_LENGTH[nameLen];
    if (candidates === undefined) continue;
    for (const [field, kind, both] of candidates) {
      if (!both || !bytesAre(b, name, field)) continue;
      if (kind === F.ContentLength) {
        let v = 0;
        let digits = 0;
        let j = value;
        while (j < i && (b[j] === 32 || b[j] === 9)) j++;
        for (; j < i && b[j] >= 48 && b[j] <= 57; j++) {
          v = v * 10 + b[j] - 48;
          if (++digits > 15) throw malformed("Content-Length");
        }
        while (j < i && (b[j] === 32 || b[j] === 9)) j++;
        if (digits === 0 || j !== i || (lengths > 0 && v !== contentLength)) throw malformed("Content-Length");
        contentLength = v;
        lengths++;
      } else if (kind === F.TransferEncoding) te = join(te, b.toString("latin1", value, i).trim());
      else if (kind === F.Connection) {
        connection = join(connection, b.toString("latin1", value, i).trim());
        rewrite = true;
      } else rewrite = true;
      break;
    }
  }
  const http10 = minor === 48;
  let reusable = http10 ? hasToken(connection, "keep-alive") : !hasToken(connection, "close");
  let body: number;
  if (method === "HEAD" || status < 200 || status === 204 || status === 304) body = 0;
  else if (te) {
    const codings = tokens(te);
    body = codings[codings.length - 1] === "chunked" ? -1 : -2;
  } else if (lengths > 0) body = contentLength;
  else body = -2;
  if (body === -2) reusable = false;
  let rewritten: string | null = null;
  // A 101 keeps its Connection/Upgrade: they are the switch itself.
  if (rewrite && status !== 101) {
    const head = b.toString("latin1", from, i - 4);
    const extra = tokens(connection).filter((t) => t !== "close" && t !== "keep-alive");
    rewritten = `${without(head, head.indexOf("\r\n"), (name) => RESPONSE_DROP.has(name) || extra.includes(name))}\r\n\r\n`;
  }
  return { status, http10, body, reusable, rewritten, end: i };
}

const enum C {
  Size,
  Ext,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  TrailerStart,
  Trailer,
  EndLf,
  Done,
}

/**
 * Follows a chunked body (RFC 9112 §7.1) byte by byte across reads without copying it: `scan`
 * returns where the message ends in `bytes` (just past the last CRLF), or -1 when it goes on.
 * Chunk extensions and trailer fields are passed through; a malformed size line throws.
 */
export class ChunkedScanner {
  private state = C.Size;
  private left = 0;
  private digits = 0;
  private trailerBytes = 0;

  get done(): boolean {
    return this.state === C.Done;
  }

  scan(bytes: Uint8Array, from = 0): number {
    let i = from;
    const n = bytes.length;
    while (i < n) {
      switch (this.state) {
        case C.Data: {
          const take = Math.min(this.left, n - i);
          i += take;
          this.left -= take;
          if (this.left === 0) this.state = C.DataCr;
          continue;
        }
        case C.Size: {
          const b = bytes[i++];
          const d = b >= 48 && b <= 57 ? b - 48 : b >= 97 && b <= 102 ? b - 87 : b >= 65 && b <= 70 ? b - 55 : -1;
          if (d >= 0) {
            if (++this.digits > 12) throw new HttpError(400, "a chunk size is too large");
            this.left = this.left * 16 + d;
          } else if (this.digits > 0 && (b === 59 /* ; */ || b === 32 || b === 9)) this.state = C.Ext;
          else if (this.digits > 0 && b === 13) this.state = C.SizeLf;
          else throw new HttpError(400, "a chunk size line is malformed");
          continue;
        }
        case C.Ext: {
          const b = bytes[i++];
          if (b === 13) this.state = C.SizeLf;
          else if (b === 10 || b === 0 || ++this.trailerBytes > 4096) throw new HttpError(400, "a chunk extension is malformed");
          continue;
        }
        case C.SizeLf:
          if (bytes[i++] !== 10) throw new HttpError(400, "a chunk size line is malformed");
          this.digits = 0;
          this.state = this.left === 0 ? C.TrailerStart : C.Data;
          continue;
        case C.DataCr:
          if (bytes[i++] !== 13) throw new HttpError(400, "a chunk is longer than its size");
          this.state = C.DataLf;
          continue;
        case C.DataLf:
          if (bytes[i++] !== 10) throw new HttpError(400, "a chunk is longer than its size");
          this.state = C.Size;
          continue;
        case C.TrailerStart:
          this.state = bytes[i++] === 13 ? C.EndLf : C.Trailer;
          continue;
        case C.Trailer: {
          const b = bytes[i++];
          if (++this.trailerBytes > 64 * 1024) throw new HttpError(400, "the trailer fields are too large");
          if (b === 10) this.state = C.TrailerStart;
          continue;
        }
        case C.EndLf:
          if (bytes[i++] !== 10) throw new HttpError(400, "the chunked body ends malformed");
          this.state = C.Done;
          return i;
        case C.Done:
          return i;
      }
    }
    return -1;
  }
}
