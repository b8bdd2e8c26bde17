/**
 * The request head as the ingress reads it (RFC 9112 §2–§7, RFC 9110 §7.6.1), decided once: the
 * head is parsed strictly, its body framing is decided here and nowhere else, and the upstream
 * request is later written from what this returns (serializer.ts), never relayed as received.
 * Anything that two HTTP implementations could read two ways is refused with a 400 (the
 * connection is then closed): a `Transfer-Encoding` other than exactly `chunked`, one with a
 * `Content-Length`, a repeated or non-decimal `Content-Length`, obs-fold, whitespace before a
 * colon, a bare CR or LF, NUL or other controls, two `Host` fields, and a `Connection` token
 * naming a framing field, `Host` or a field ops sets (a hop-by-hop removal must never touch
 * framing: that is request smuggling's oldest door); an HTTP/1.1 request without Host. Fields
 * ops owns spelled with underscores are dropped, and an absolute-form target's authority
 * replaces the client's Host.
 *
 * Heads are latin1 strings (one byte, one char), so bytes above 0x7f survive the round trip.
 */
import { HttpError } from "./http-error";
import { carriesOpsCredential, withoutSessionCookie } from "./credentials";
import { LINE, methodOf, requestLine } from "./request-line";
import { dropNamed, nameIs, nameIsUnderscored, TCHAR, tokens } from "./fields";

/** A Host value: a reg-name or IPv4 address, or a bracketed IPv6 literal, with an optional port. */
const HOST_VALUE = /^(?:[A-Za-z0-9._~!$&'()*+,;=%-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** Fields ops writes itself: a `Connection` token naming one of them (or framing, or Host) is refused. */
export const OPS_SET_FIELDS = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "forwarded"] as const;
const PROTECTED = new Set<string>(["content-length", "transfer-encoding", "host", ...OPS_SET_FIELDS]);

const enum F {
  Host,
  ContentLength,
  TransferEncoding,
  Connection,
  Upgrade,
  ForwardedFor,
  ForwardedProto,
  ForwardedHost,
  RealIp,
  Forwarded,
  Cookie,
  Authorization,
  /** Hop-by-hop: never forwarded. */
  Drop,
}

/** The fields the parser looks at, by name length (most lines are compared with nothing). */
const BY_LENGTH: Array<Array<[string, F]>> = [];
for (const [name, kind] of [
  ["host", F.Host],
  ["content-length", F.ContentLength],
  ["transfer-encoding", F.TransferEncoding],
  ["connection", F.Connection],
  ["upgrade", F.Upgrade],
  ["x-forwarded-for", F.ForwardedFor],
  ["x-forwarded-proto", F.ForwardedProto],
  ["x-forwarded-host", F.ForwardedHost],
  ["x-real-ip", F.RealIp],
  ["forwarded", F.Forwarded],
  ["cookie", F.Cookie],
  ["authorization", F.Authorization],
  ["keep-alive", F.Drop],
  ["proxy-connection", F.Drop],
  ["te", F.Drop],
  ["trailer", F.Drop],
  ["proxy-authorization", F.Drop],
  ["proxy-authenticate", F.Drop],
] as Array<[string, F]>)
  (BY_LENGTH[name.length] ??= []).push([name, kind]);

/** The client's own forwarding fields (kept, and appended to, only for a trusted peer). */
export interface ClientForwarding {
  forwardedFor: string | null;
  forwardedProto: string | null;
  forwardedHost: string | null;
  realIp: string | null;
  forwarded: string | null;
}

export interface RequestHead {
  method: string;
  /** The target sent upstream: origin form (`/path?q`), or `*`. */
  target: string;
  /** The path and query the route table matches (`/` for `*`). */
  path: string;
  http10: boolean;
  /** The Host field as sent, or the authority of an absolute-form target, which replaces it (null: none). */
  host: string | null;
  /** Body framing decided by ops: -1 chunked, else the length in bytes (0: none). */
  body: number;
  /** The client sent a Content-Length (kept as one, even when 0). */
  hasLength: boolean;
  /** The client asked to close after this exchange (or is HTTP/1.0 without keep-alive). */
  close: boolean;
  /** An `Upgrade: websocket` request with `Connection: upgrade`. */
  websocket: boolean;
  /** Bytes above 0x7f appear in the head (written upstream as latin1 bytes, not a string). */
  ascii: boolean;
  /** The head as received, without its blank line. */
  head: string;
  /** [start, end) ranges of `head` holding the field lines forwarded as they are (each starts with CRLF). */
  keep: number[];
  /** Field lines ops wrote (the Host of an absolute-form target, a Cookie without ops's session), each starting with CRLF. */
  rewritten: string;
  /** An ops session cookie or ops credential was removed. */
  strippedCredential: boolean;
  forwarding: ClientForwarding;
  /** The request line goes upstream as received (HTTP/1.1, a target not rewritten). */
  lineKept: boolean;
}

/** No Connection tokens (shared: most requests send no Connection field). */
const NO_TOKENS: readonly string[] = Object.freeze([]);

/** No forwarding fields sent (shared: most requests have none). */
const NO_FORWARDING: ClientForwarding = Object.freeze({ forwardedFor: null, forwardedProto: null, forwardedHost: null, realIp: null, forwarded: null });

function bad(message: string): HttpError {
  return new HttpError(400, message);
}

/** A Content-Length value: 1 to 15 decimal digits, nothing else (no sign, no list, no spaces inside). */
function contentLength(v: string): number {
  if (v.length === 0 || v.length > 15) throw bad("the request has an invalid Content-Length");
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) throw bad("the request has an invalid Content-Length");
  }
  return Number(v);
}

/** `head[a, b)` without leading and trailing spaces, and tabs too unless `spacesOnly`. */
function value(head: string, a: number, b: number, spacesOnly: boolean): string {
  for (let c = head.charCodeAt(a); a < b && (c === 32 || (c === 9 && !spacesOnly)); c = head.charCodeAt(++a));
  for (let c = head.charCodeAt(b - 1); b > a && (c === 32 || (c === 9 && !spacesOnly)); c = head.charCodeAt(--b - 1));
  return head.slice(a, b);
}

const join = (prior: string | null, v: string) => (prior === null ? v : `${prior}, ${v}`);

/** The Host value in `head[a, b)`, trimmed: `last` itself when it is the same text (no new string). */
function hostValue(head: string, a: number, b: number, last: string | null): string {
  for (let c = head.charCodeAt(a); a < b && (c === 32 || c === 9); c = head.charCodeAt(++a));
  for (let c = head.charCodeAt(b - 1); b > a && (c === 32 || c === 9); c = head.charCodeAt(--b - 1));
  return last !== null && b - a === last.length && head.startsWith(last, a) ? last : head.slice(a, b);
}

/**
 * Parse a request head (`head` = the bytes before the blank line, as latin1). Throws HttpError
 * (400, or 405 for CONNECT and TRACE) for anything malformed or ambiguous. `lastHost` is the Host
 * value of the connection's previous request: the same value again is taken as already checked.
 */
export function parseRequestHead(head: string, lastHost: string | null = null): RequestHead {
  const nl = head.indexOf("\r\n");
  const eol = nl < 0 ? head.length : nl;
  const line = requestLine(head, eol);
  if (line < 0) throw bad("the request line is malformed");
  const mEnd = LINE[0];
  const tEnd = line >> 2;
  let ascii = (line & 1) === 1;
  const http10 = (line & 2) === 0;

  // An absolute-form target names the host; the client's Host field is replaced by it (RFC 9112 §3.2.2, decision 0520).
  const absolute = head.charCodeAt(mEnd + 1) !== 47 /* / */ && !(tEnd === mEnd + 2 && head.charCodeAt(mEnd + 1) === 42); /* * */
  let host: string | null = null;
  let hosts = 0;
  let auths: string | null = null;
  let authLines = 0;
  let length: string | null = null;
  let lengths = 0;
  let te: string | null = null;
  let tes = 0;
  let connection: string | null = null;
  let upgrade: string | null = null;
  let rewritten = "";
  let stripped = false;
  let forwarding: ClientForwarding | null = null;
  // Ranges of kept lines; a dropped line ends the current range.
  const keep: number[] = [];
  let runStart = eol;
  let malformed = false;
  const n = head.length;
  let at = nl;
  while (at >= 0) {
    // One pass over the line checks it and finds its colon and its end (no regex, no search). A
    // field line is CRLF, a token, a colon, then tab, visible ASCII or obs-text up to the next CRLF
    // or the end: no whitespace before the colon, no obs-fold, no bare CR or LF, no NUL or other
    // controls but tab (decision 0249).
    let i = at + 2;
    while (i < n && TCHAR[head.charCodeAt(i)] === 1) i++;
    if (i === at + 2 || head.charCodeAt(i) !== 58 /* : */) {
      malformed = true;
      break;
    }
    const colon = i;
    for (i++; i < n; i++) {
      const c = head.charCodeAt(i);
      if (c === 13) break;
      if ((c < 32 && c !== 9) || c === 127 || c > 255) {
        malformed = true;
        break;
      }
      if (c > 127) ascii = false;
    }
    if (malformed) break;
    if (i < n && head.charCodeAt(i + 1) !== 10) {
      malformed = true;
      break;
    }
    const next = i < n ? i : -1;
    const end = i;
    const candidates = BY_LENGTH[colon - at - 2];
    let drop = false;
    if (candidates !== undefined) {
      for (let k = 0; k < candidates.length; k++) {
        const name = candidates[k][0];
        const kind = candidates[k][1];
        if (!nameIs(head, at + 2, name)) {
          // `X_Forwarded_For` is `X-Forwarded-For` to servers that read `_` as `-` (CGI, WSGI,
          // Rack): a field ops owns spelled with underscores is dropped (decision 0520).
          if (nameIsUnderscored(head, at + 2, name)) {
            drop = true;
            break;
          }
          continue;
        }
        if (kind === F.Drop) {
          drop = true;
          break;
        }
        if (kind === F.Host) {
          host = hostValue(head, colon + 1, end, lastHost);
          hosts++;
          drop = absolute;
          break;
        }
        // Framing values are trimmed of spaces only: a tab there is read as part of the value by
        // some servers (nginx), so such a request is refused rather than framed.
        const v = value(head, colon + 1, end, kind === F.ContentLength || kind === F.TransferEncoding);
        switch (kind) {
          case F.ContentLength:
            length = v;
            lengths++;
            drop = true;
            break;
          case F.TransferEncoding:
            te = join(te, v);
            tes++;
            drop = true;
            break;
          case F.Connection:
            connection = join(connection, v);
            drop = true;
            break;
          case F.Upgrade:
            upgrade = join(upgrade, v);
            drop = true;
            break;
          case F.ForwardedFor:
            forwarding ??= { ...NO_FORWARDING };
            forwarding.forwardedFor = join(forwarding.forwardedFor, v);
            drop = true;
            break;
          case F.ForwardedProto:
            forwarding ??= { ...NO_FORWARDING };
            forwarding.forwardedProto = join(forwarding.forwardedProto, v);
            drop = true;
            break;
          case F.ForwardedHost:
            forwarding ??= { ...NO_FORWARDING };
            forwarding.forwardedHost = join(forwarding.forwardedHost, v);
            drop = true;
            break;
          case F.RealIp:
            forwarding ??= { ...NO_FORWARDING };
            forwarding.realIp = forwarding.realIp ?? v;
            drop = true;
            break;
          case F.Forwarded:
            forwarding ??= { ...NO_FORWARDING };
            forwarding.forwarded = join(forwarding.forwarded, v);
            drop = true;
            break;
          case F.Cookie: {
            const kept = withoutSessionCookie(v);
            if (kept !== v) {
              drop = true;
              stripped = true;
              if (kept !== "") rewritten += `\r\n${head.slice(at + 2, colon)}: ${kept}`;
            }
            break;
          }
          case F.Authorization:
            auths = join(auths, v);
            authLines++;
            if (carriesOpsCredential(v)) {
              drop = true;
              stripped = true;
            }
            break;
        }
        break;
      }
    }
    if (drop) {
      if (at > runStart) keep.push(runStart, at);
      runStart = end;
    }
    at = next;
  }
  // Checked in this order: a malformed field line (400) before the method (405).
  if (malformed) throw bad("a header field is malformed");
  const method = methodOf(head, mEnd);
  if (method === "CONNECT") throw new HttpError(405, "the ingress does not tunnel CONNECT");
  if (method === "TRACE") throw new HttpError(405, "the ingress does not answer TRACE");
  if (head.length > runStart) keep.push(runStart, head.length);

  if (hosts > 1) throw bad("the request has more than one Host field");
  if (hosts === 0 && !http10) throw bad("the request named no host");
  if (host !== null && host !== "" && host !== lastHost && !HOST_VALUE.test(host)) throw bad("the Host field is malformed");

  // The target: origin form, `*` for OPTIONS, or absolute form (its authority is the host).
  let target = head.slice(mEnd + 1, tEnd);
  let path = target;
  if (target === "*") {
    if (method !== "OPTIONS") throw bad("the request target is malformed");
    path = "/";
  } else if (absolute) {
    const abs = /^https?:\/\/([^/?#@]+)([/?][^#]*)?$/i.exec(target);
    if (!abs || !HOST_VALUE.test(abs[1])) throw bad("the request target is malformed");
    host = abs[1];
    path = abs[2] ?? "/";
    if (path.charCodeAt(0) !== 47) path = `/${path}`;
    target = path;
    rewritten = `\r\nHost: ${host}${rewritten}`;
  }
  if (!host && !http10) throw bad("the request named no host");

  // Framing, decided once (RFC 9112 §6.3).
  let body = 0;
  if (tes > 0) {
    if (lengths > 0) throw bad("the request has both Transfer-Encoding and Content-Length");
    if (http10) throw bad("an HTTP/1.0 request cannot use Transfer-Encoding");
    if (tes > 1 || te!.toLowerCase() !== "chunked") throw bad("the only transfer coding accepted is chunked, once");
    body = -1;
  } else if (lengths > 1) throw bad("the request has more than one Content-Length");
  else if (lengths === 1) body = contentLength(length!);

  // Connection: its tokens name hop-by-hop fields; framing, Host and ops's own fields are not theirs to remove.
  const conn = connection === null ? NO_TOKENS : tokens(connection);
  let close = http10 && !conn.includes("keep-alive");
  let wantsUpgrade = false;
  let extra: Set<string> | null = null;
  for (const tok of conn) {
    if (tok === "close") close = true;
    else if (tok === "upgrade") wantsUpgrade = true;
    else if (PROTECTED.has(tok)) throw bad(`the Connection field names ${tok}, which a proxy must not remove`);
    else if (tok !== "keep-alive") (extra ??= new Set()).add(tok);
  }
  const websocket = !http10 && wantsUpgrade && tokens(upgrade).includes("websocket");
  // Several Authorization fields reach ops joined by ", ": a credential split across them is one.
  if (authLines > 1 && carriesOpsCredential(auths!)) {
    (extra ??= new Set()).add("authorization");
    stripped = true;
  }
  if (extra !== null) dropNamed(head, keep, extra);
  const lineKept = !http10 && target.length === tEnd - mEnd - 1;
  return { method, target, path, http10, host, body, hasLength: lengths === 1, close, websocket, ascii, head, keep, rewritten, strippedCredential: stripped, forwarding: forwarding ?? NO_FORWARDING, lineKept };
}
