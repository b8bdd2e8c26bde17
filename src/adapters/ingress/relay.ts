/**
 * The replica's side of an exchange: its response head parsed and written anew for the client
 * (serializer.ts), its body relayed by the framing ops decided (a length byte for byte, chunked
 * decoded and chunked anew, or until the replica closes), interim 1xx answers passed to HTTP/1.1
 * clients, a 101 to a WebSocket request turned into a tunnel. An answer that arrives before the
 * whole request body closes both connections after it; bytes past the end of a response, a
 * malformed answer or a close mid-answer mean the connection is never pooled again; bytes that
 * no exchange asked for (on an idle connection, or read in the turn the request went out) retire
 * it at once (decision 0521).
 */
import type { Conn, Ctx, Exchange } from "./types";
import { Wait } from "./types";
import { HttpError } from "./http-error";
import { ChunkedDecoder, reframe } from "./chunked";
import { Body, MAX_RESPONSE_HEAD, parseResponseHead } from "./response-parser";
import { Out, responseHeadOut } from "./serializer";
import { badGatewayPage } from "./pages";
import { FrameTracker } from "./ws-frames";
import { forget, retire, writeConn } from "./pool";
import { clientFlow, endClient, writeClient } from "./listener";
import { fail, finish, settle, tryNext, uncount } from "./exchange";

/** The replica's socket took what was left over: send the rest, and let the client go on. */
export function upstreamDrained(u: Conn): void {
  if (!u.out) return;
  const out = u.out;
  u.out = null;
  writeConn(u, out);
  if (!u.out) {
    const c = u.ex?.client ?? u.tunnel;
    if (c) clientFlow(c);
  }
}

function responseDone(ex: Exchange): boolean {
  switch (ex.resOut) {
    case Out.None:
      return true;
    case Out.Raw:
      return ex.res!.body === Body.Length && ex.resLeft === 0;
    default:
      return ex.resChunks!.done;
  }
}

/** The replica's bytes for the exchange it carries: the response head (parsed, written anew), then the body. */
export function upstreamBytes(ctx: Ctx, u: Conn, bytes: Buffer): void {
  const ex = u.ex;
  if (!ex) {
    // Bytes nobody asked for on an idle connection: it is out of step, and never lent again.
    retire(u);
    return;
  }
  // Read in the turn the request was written: they were on their way before it (decision 0521).
  if (ex.received === 0 && u.sentTurn === ctx.turn) return unasked(ctx, ex, u);
  ex.received += bytes.length;
  const c = ex.client;
  if (ex.res !== null) return relayBody(ctx, ex, u, bytes, 0);
  let src: Buffer = bytes;
  if (u.buf) {
    src = Buffer.concat([u.buf, bytes]);
    u.buf = null;
  }
  let from = 0;
  for (;;) {
    const res = parseResponseHead(src, from, ex.req.method);
    if (res === null) {
      if (src.length - from > MAX_RESPONSE_HEAD) throw new HttpError(502, "the replica's response head is too large");
      u.buf = Buffer.from(src.subarray(from));
      return;
    }
    if (res.status === 101) {
      if (!ex.req.websocket) throw new HttpError(502, "the replica switched protocols unasked");
      ex.answered = true;
      writeClient(c, withHead(responseHeadOut(res, src, false, false, ex.req.method)!.head!, src.subarray(res.end)));
      tunnel(ctx, ex, u);
      u.frames!.feed(src.subarray(res.end));
      return;
    }
    if (res.status < 200) {
      // An interim answer (100 Continue, 103 Early Hints): relayed to HTTP/1.1 clients; the final one follows.
      if (!ex.req.http10) writeClient(c, responseHeadOut(res, src, false, false, ex.req.method)!.head ?? src.subarray(res.from, res.end));
      from = res.end;
      if (from >= src.length) return;
      continue;
    }
    // An answer before the whole request body arrived: nothing more goes to the replica, and the
    // client's connection cannot be resynchronised. One before the request was written whole may
    // answer something else: the connection is not lent again either way.
    const early = !ex.reqDone;
    const out = responseHeadOut(res, src, ex.req.http10, early || ex.req.close || c.closeAfter || ctx.stopping, ex.req.method);
    if (out === null) throw new HttpError(502, "the replica used a transfer coding an HTTP/1.0 client cannot be sent");
    ex.res = res;
    ex.resOut = out.mode;
    if (out.close) c.closeAfter = true;
    if (!res.reusable || early || u.out !== null) u.reusable = false;
    if (res.body === Body.Length) ex.resLeft = res.length;
    else if (res.body === Body.Chunked) ex.resChunks = new ChunkedDecoder(502);
    ex.answered = true;
    return relayBody(ctx, ex, u, src, res.end, out.head ?? res.from);
  }
}

/**
 * Relay the response body in `src` from `from` to the end of the response, after `head` when this
 * is the first part of the answer: the head written anew, or where in `src` the replica's head
 * starts when it is sent as received (serializer.ts). The head and the body bytes at hand leave in
 * one write, so a small answer is one syscall and one segment rather than two (written from the
 * replica's callback, a write to the client is not corked with the next).
 */
function relayBody(ctx: Ctx, ex: Exchange, u: Conn, src: Buffer, from: number, head: string | number | null = null): void {
  let end = src.length;
  let body: Uint8Array | null = null;
  switch (ex.resOut) {
    case Out.None:
      end = from;
      break;
    case Out.Raw:
      if (ex.res!.body === Body.Length) {
        end = Math.min(src.length, from + ex.resLeft);
        ex.resLeft -= end - from;
      }
      // A head sent as received goes out with its body from `src` itself: no view of the body is made.
      if (end > from && typeof head !== "number") body = from === 0 && end === src.length ? src : src.subarray(from, end);
      break;
    case Out.Rechunk:
    case Out.Dechunk: {
      const r = reframe(ex.resChunks!, src, from, ex.resOut === Out.Rechunk);
      body = r.out;
      end = r.end >= 0 ? r.end : src.length;
      break;
    }
  }
  // A head sent as received is only ever followed by a body sent as received (no body, or a length).
  if (typeof head === "number") writeClient(ex.client, head === 0 && end === src.length ? src : src.subarray(head, end));
  else if (head === null) {
    if (body !== null) writeClient(ex.client, body);
  } else writeClient(ex.client, body === null ? head : withHead(head, body));
  // Bytes past the end of the response: out of step, never pooled again.
  if (end < src.length) u.reusable = false;
  if (responseDone(ex)) finish(ctx, ex);
}

/** `head` (latin1) followed by `body`, in one buffer. */
function withHead(head: string, body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(head.length + body.length);
  out.write(head, 0, "latin1");
  out.set(body, head.length);
  return out;
}

/**
 * The replica's bytes arrived before the request they would answer was written: a late or
 * unsolicited answer (to an earlier request, or to none) that would go to this exchange's client,
 * and shift every later answer on the connection by one. The connection is retired and the
 * bytes dropped; a request without a body is sent once more on a fresh connection (as a replay
 * after an idle close), any other is a 502.
 */
function unasked(ctx: Ctx, ex: Exchange, u: Conn): void {
  u.ex = null;
  ex.up = null;
  retire(u);
  ctx.metrics.upstreamFailures++;
  ctx.log?.warn("ingress upstream wrote an answer nobody asked for; its connection is closed", { service: ex.target.key, upstream: ex.key });
  if (ex.req.body === 0 && !ex.replayed) {
    ex.replayed = true;
    tryNext(ctx, ex, true);
    return;
  }
  fail(ctx, ex, badGatewayPage(ex.target.service, "The replica's connection was out of step: it answered before it was asked."));
}

function tunnel(ctx: Ctx, ex: Exchange, u: Conn): void {
  const c = ex.client;
  settle(ctx, ex, null);
  u.reusable = false;
  c.tunnel = u;
  u.tunnel = c;
  u.frames = new FrameTracker();
  u.replica.websockets++;
  c.wait = Wait.None;
  if (c.buf) {
    const rest = c.buf;
    c.buf = null;
    writeConn(u, rest);
  }
  clientFlow(c);
}

export function upstreamFault(ctx: Ctx, u: Conn, e: Error): void {
  const ex = u.ex;
  u.reusable = false;
  ctx.metrics.upstreamFailures++;
  ctx.log?.warn("ingress upstream answer unusable", { upstream: u.key, err: e.message });
  if (ex) fail(ctx, ex, badGatewayPage(ex.target.service, `The replica's answer could not be relayed: ${e.message}`));
  if (!u.closed) u.socket.end();
}

export function upstreamClosed(ctx: Ctx, u: Conn): void {
  u.closed = true;
  const r = u.replica;
  r.open--;
  const at = r.idle.indexOf(u);
  if (at >= 0) r.idle.splice(at, 1);
  if (u.tunnel) {
    const c = u.tunnel;
    u.tunnel = null;
    r.websockets--;
    forget(ctx, r);
    c.tunnel = null;
    endClient(c);
    return;
  }
  const ex = u.ex;
  if (!ex) return forget(ctx, r);
  u.ex = null;
  ex.up = null;
  if (ex.res !== null && ex.resOut === Out.Raw && ex.res.body === Body.UntilClose) {
    // A body that ends when the replica closes: it just did.
    ex.client.closeAfter = true;
    finish(ctx, ex);
    return;
  }
  if (!ex.answered && ex.received === 0 && ex.req.body === 0) {
    if (ex.reused && !ex.replayed) {
      // An idle connection the replica closed as it was reused: replay once on a fresh one.
      ex.replayed = true;
      tryNext(ctx, ex, true);
      return;
    }
    // Closed without a word to a request that can be replayed: the next replica may answer.
    ctx.downUntil.set(ex.key, Date.now() + ctx.settings.downMs);
    ex.reason = u.err || "the replica closed the connection";
    ctx.metrics.upstreamFailures++;
    ctx.log?.warn("ingress upstream failed", { service: ex.target.key, upstream: ex.key, err: ex.reason });
    uncount(ctx, ex);
    tryNext(ctx, ex);
    return;
  }
  ex.reason = u.err || (ex.answered ? "the replica closed the connection in the middle of its response" : "the replica closed the connection");
  ctx.metrics.upstreamFailures++;
  ctx.log?.warn("ingress upstream failed", { service: ex.target.key, upstream: ex.key, err: ex.reason });
  fail(ctx, ex, badGatewayPage(ex.target.service, `The last replica tried failed: ${ex.reason}`));
}

