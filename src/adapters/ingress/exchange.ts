/**
 * One exchange: a request the ingress accepted, sent to a replica, and its response relayed back
 * (relay.ts). The request head was parsed and written anew (listener.ts); its body follows as ops
 * framed it (a length relayed byte for byte, a chunked body decoded and chunked anew).
 *
 * A request picks its replica when its head arrives and keeps it to its last byte, so a rollout
 * can switch the table and wait for `drained(old)`. A replica that refuses a connection, or closes
 * one before answering a request without a body, is marked down for a moment and the next is
 * tried; an idle pooled connection the replica had closed is replayed once on a fresh one. Every
 * way an exchange ends goes through `settle`, which takes it out of the set shutdown waits on.
 */
import type { Client, Conn, Ctx, Exchange } from "./types";
import { Wait } from "./types";
import { ChunkedDecoder, reframe } from "./chunked";
import { Out } from "./serializer";
import type { RequestHead } from "./request-parser";
import { lookup } from "./table";
import { HttpError } from "./http-error";
import { badGatewayPage, badRequestPage, notRoutedPage, type Page } from "./pages";
import { candidates, connect, forget, release, replicaFor, writeConn } from "./pool";
import { afterRequests, clientFlow, endClient, nextRequest, respond, waitIdle } from "./listener";

export function startExchange(ctx: Ctx, c: Client, req: RequestHead, forward: string | Buffer): void {
  if (ctx.stopping) req.close = true;
  const host = c.hostKey;
  const target = lookup(ctx.table, host, req.path);
  if (!target) {
    const q = req.path.indexOf("?");
    respond(ctx, c, notRoutedPage(host, q < 0 ? req.path : req.path.slice(0, q)), req);
    return;
  }
  const ups = candidates(ctx, target);
  if (ups.length === 0) {
    ctx.stats.record(target.service, 502, 0, 0);
    respond(ctx, c, badGatewayPage(target.service, "It has no healthy replica."), req);
    return;
  }
  const ex: Exchange = {
    client: c,
    req,
    forward,
    target,
    ups,
    next: 0,
    key: "",
    counted: null,
    up: null,
    reqLeft: req.body > 0 ? req.body : 0,
    reqChunks: req.body === -1 ? new ChunkedDecoder(400) : null,
    reqDone: req.body === 0,
    res: null,
    resOut: Out.None,
    resLeft: 0,
    resChunks: null,
    received: 0,
    answered: false,
    reused: false,
    replayed: false,
    finished: false,
    reason: "",
    startedAt: performance.now(),
  };
  c.ex = ex;
  ctx.exchanges++;
  ctx.metrics.requests++;
  tryNext(ctx, ex);
}

/** Take the request body from `bytes` at `from`: what to write upstream (null: nothing) and where the body ends in `bytes`. */
function takeBody(ex: Exchange, bytes: Buffer, from: number): { out: Uint8Array | null; end: number } {
  if (ex.reqDone) return { out: null, end: from };
  if (ex.reqChunks) {
    const r = reframe(ex.reqChunks, bytes, from, true);
    if (r.end >= 0) ex.reqDone = true;
    return { out: r.out, end: r.end >= 0 ? r.end : bytes.length };
  }
  const end = Math.min(bytes.length, from + ex.reqLeft);
  ex.reqLeft -= end - from;
  if (ex.reqLeft === 0) ex.reqDone = true;
  return { out: end > from ? (from === 0 && end === bytes.length ? bytes : bytes.subarray(from, end)) : null, end };
}

/** Body read to its end: the client owes nothing more, and only the replica's answer is awaited. */
function bodyRead(ex: Exchange): void {
  if (ex.reqDone && ex.client.wait === Wait.Body) ex.client.wait = Wait.None;
}

/** Send the exchange to its next candidate replica (`again`: the same one, on a new connection): a pooled connection, or a new one. */
export function tryNext(ctx: Ctx, ex: Exchange, again = false): void {
  const u = again ? ex.ups[ex.next - 1] : ex.ups[ex.next++];
  if (!u) {
    fail(ctx, ex, badGatewayPage(ex.target.service, ex.reason ? `The last replica tried failed: ${ex.reason}` : "No replica answered."));
    return;
  }
  ex.key = u.key;
  const replica = replicaFor(ctx, u);
  if (ex.counted === null) {
    ex.counted = replica;
    replica.inflight++;
  }
  let idle = again ? undefined : replica.idle.pop();
  while (idle !== undefined && (idle.closed || !idle.reusable)) idle = replica.idle.pop();
  if (idle) {
    ex.reused = true;
    attach(ctx, ex, idle);
    return;
  }
  ex.reused = false;
  connect(ctx, replica, u).then(
    (conn) => {
      if (ex.finished) return release(ctx, conn);
      // The replica wrote before it was asked (and the connection was retired): the next one is tried.
      if (conn.closed || !conn.reusable) return unreachable(ctx, ex, "the replica wrote before it was asked");
      attach(ctx, ex, conn);
    },
    (e: Error) => {
      if (ex.finished) return;
      // Possibly after a timer (the connect timeout), not an I/O callback: see `unarmed`.
      ctx.unarmed = true;
      try {
        unreachable(ctx, ex, e.message);
      } finally {
        ctx.unarmed = false;
      }
    },
  );
}

/** The replica could not be reached: skipped for a moment, and the next one tried. */
function unreachable(ctx: Ctx, ex: Exchange, reason: string): void {
  ctx.downUntil.set(ex.key, Date.now() + ctx.settings.downMs);
  ex.reason = reason;
  ctx.metrics.upstreamFailures++;
  ctx.stats.upstreamError(ex.target.service, reason);
  ctx.log?.warn("ingress upstream failed", { service: ex.target.key, upstream: ex.key, err: reason });
  uncount(ctx, ex);
  tryNext(ctx, ex);
}

export function uncount(ctx: Ctx, ex: Exchange): void {
  const r = ex.counted;
  if (r !== null) {
    ex.counted = null;
    if (--r.inflight === 0) forget(ctx, r);
  }
}

/**
 * Write the head and the body bytes already received; the rest follows as the client sends it.
 * A body ops cannot frame is refused before anything is written, whether the connection came from
 * the pool (inside the client's data callback) or was just opened (in a promise callback, where a
 * throw would escape every handler: decision 0521).
 */
function attach(ctx: Ctx, ex: Exchange, u: Conn): void {
  const c = ex.client;
  let bytes: Uint8Array | string = ex.forward;
  if (!ex.reqDone && c.buf) {
    let taken: { out: Uint8Array | null; end: number };
    try {
      taken = takeBody(ex, c.buf, 0);
    } catch (e) {
      release(ctx, u);
      return badBody(ctx, ex, e);
    }
    const { out, end } = taken;
    if (out !== null) bytes = Buffer.concat([typeof ex.forward === "string" ? Buffer.from(ex.forward, "latin1") : ex.forward, out]);
    c.buf = end < c.buf.length ? c.buf.subarray(end) : null;
    bodyRead(ex);
  }
  ex.up = u;
  u.ex = ex;
  u.buf = null;
  writeConn(u, bytes);
  armTurn(ctx, u);
  clientFlow(c);
}

/**
 * Note the turn the request went out in (relay.ts refuses a replica's bytes read in that same
 * turn: they were on their way before the request was). One immediate per turn ends it.
 */
function armTurn(ctx: Ctx, u: Conn): void {
  if (ctx.unarmed) {
    u.sentTurn = -1;
    return;
  }
  u.sentTurn = ctx.turn;
  if (!ctx.turnPending) {
    ctx.turnPending = true;
    setImmediate(endTurn, ctx);
  }
}

function endTurn(ctx: Ctx): void {
  ctx.turn++;
  ctx.turnPending = false;
}

/** A request body ops cannot frame (a malformed chunk) is a bad request like a malformed head (decision 0247). */
export function badBody(ctx: Ctx, ex: Exchange, e: unknown): void {
  ctx.metrics.badRequests++;
  fail(ctx, ex, badRequestPage(e instanceof HttpError ? e.status : 400, (e as Error).message));
}

/** The client's bytes while an exchange is under way: body bytes go to the replica, the rest waits. */
export function clientBytes(ctx: Ctx, c: Client, bytes: Buffer): void {
  const ex = c.ex!;
  if (!ex.reqDone && c.wait === Wait.Body) c.deadline = Date.now() + ctx.settings.bodyTimeoutMs;
  if (ex.up && !ex.reqDone && c.buf === null) {
    const { out, end } = takeBody(ex, bytes, 0);
    if (out !== null) writeConn(ex.up, out);
    if (end < bytes.length) c.buf = Buffer.from(bytes.subarray(end));
    bodyRead(ex);
  } else c.buf = c.buf ? Buffer.concat([c.buf, bytes]) : Buffer.from(bytes);
  clientFlow(c);
}

/**
 * End the exchange's hold on its client and its replica connection: `keep` puts the connection
 * back in the pool when it can carry another exchange, false closes it, null leaves it be (a
 * tunnel). Returns the client.
 */
export function settle(ctx: Ctx, ex: Exchange, keep: boolean | null): Client {
  if (!ex.finished) ctx.exchanges--;
  ex.finished = true;
  uncount(ctx, ex);
  const c = ex.client;
  if (c.ex === ex) c.ex = null;
  const u = ex.up;
  if (u && keep !== null) {
    u.ex = null;
    if (!keep) u.reusable = false;
    release(ctx, u);
  } else if (u) u.ex = null;
  return c;
}

/** The exchange is over: its connection goes back to the pool and the client's next request starts. */
export function finish(ctx: Ctx, ex: Exchange): void {
  if (ex.finished) return;
  ctx.stats.record(ex.target.service, ex.res?.status ?? 0, performance.now() - ex.startedAt, ex.received);
  if (ctx.downUntil.size > 0) ctx.downUntil.delete(ex.key);
  const c = settle(ctx, ex, ex.reqDone);
  if (c.closeAfter || ex.req.close || ctx.stopping) {
    c.buf = null;
    endClient(c);
    return;
  }
  waitIdle(ctx, c);
  if (c.buf) nextRequest(ctx, c);
  afterRequests(ctx, c);
  clientFlow(c);
}

/** The exchange cannot go on: answer with `page` if nothing was answered yet, else cut the client. */
export function fail(ctx: Ctx, ex: Exchange, page: Page): void {
  if (ex.finished) return;
  ctx.stats.record(ex.target.service, ex.answered ? (ex.res?.status ?? page.status) : page.status, performance.now() - ex.startedAt, ex.received);
  const c = settle(ctx, ex, false);
  if (ex.answered) {
    c.buf = null;
    c.closeAfter = true;
    c.socket.terminate();
    return;
  }
  // The rest of its body was not read (or is in doubt): the connection closes after the page.
  if (!ex.reqDone || ex.req.body !== 0) c.closeAfter = true;
  respond(ctx, c, page, ex.req);
  if (!c.ended && c.buf) nextRequest(ctx, c);
  afterRequests(ctx, c);
}

/** The client's connection closed: its exchange (or tunnel) ends with it. */
export function clientClosed(ctx: Ctx, c: Client): void {
  const u = c.tunnel;
  if (u) {
    c.tunnel = null;
    u.tunnel = null;
    u.replica.websockets--;
    u.socket.end();
  }
  if (c.ex) settle(ctx, c.ex, false);
  c.buf = null;
}

