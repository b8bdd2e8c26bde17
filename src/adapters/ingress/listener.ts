/**
 * The client side of the ingress: the listening socket, each client connection's bytes and
 * deadlines, and the limits that keep a few clients from holding it (DESIGN §6, Ingress):
 *
 * - a request head must arrive whole within OPS_INGRESS_HEADER_TIMEOUT of its first byte (of the
 *   connection's opening, for the first request); a deadline that bytes arriving do not extend,
 *   so a head sent one byte a second ends with a 408;
 * - a kept-alive connection with no request under way is closed after the idle timeout;
 * - a request body that sends nothing for the body timeout ends its exchange (408 before any
 *   answer, a cut connection after);
 * - a client that takes none of the bytes the ingress has for it within the send timeout
 *   (OPS_INGRESS_SEND_TIMEOUT) is cut, and its replica connection with it (decision 0521);
 * - connections per client address (OPS_INGRESS_MAX_CONN_PER_IP) and in total
 *   (OPS_INGRESS_MAX_CONNECTIONS): past either, a new connection gets a 503 and is closed.
 *
 * One timer sweeps every client's deadline a few times per shortest timeout, rather than a timer
 * per socket restarted on every read (which a slow sender keeps alive forever). Each limit is
 * counted in the ingress's metrics.
 */
import type { SocketHandler, TCPSocketListener } from "bun";
import type { Client, ClientSocket, Ctx } from "./types";
import { Wait } from "./types";
import { HttpError } from "./http-error";
import { parseRequestHead, type RequestHead } from "./request-parser";
import { normaliseHost } from "./table";
import { forwardedFields, peerAddress } from "./forwarded";
import { requestHeadOut } from "./serializer";
import { badRequestPage, pageBytes, type Page } from "./pages";
import { connFlow, writeConn } from "./pool";

const CRLF2 = Buffer.from("\r\n\r\n");
const LF2 = Buffer.from("\n\n");
/** Largest request head (431 above it). */
export const MAX_HEAD = 64 * 1024;
/** Bytes a client may send ahead of its current exchange before its socket is paused. */
const MAX_AHEAD = 64 * 1024;

/** Pause the client while its replica has bytes it did not take, or while it sent too much ahead. */
export function clientFlow(c: Client): void {
  const want = (c.ex?.up?.out ?? c.tunnel?.out ?? null) !== null || (c.ex !== null && c.buf !== null && c.buf.length > MAX_AHEAD);
  if (want === c.paused || c.closed) return;
  c.paused = want;
  if (want) c.socket.pause();
  else c.socket.resume();
}

export function writeClient(c: Client, bytes: Uint8Array | string): void {
  if (c.closed || c.ended) return;
  pushClient(c, typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes);
}

/** Write to the client, keeping what the socket did not take (and pausing the replica meanwhile). */
function pushClient(c: Client, bytes: Uint8Array): void {
  if (c.out) {
    c.out = Buffer.concat([c.out, bytes]);
    return;
  }
  const n = c.socket.write(bytes);
  if (n >= 0 && n < bytes.length) {
    c.out = Buffer.from(bytes.subarray(n));
    // The send timeout runs from here (set by the next sweep: no clock read per write).
    c.sendDeadline = 0;
    const u = c.ex?.up ?? c.tunnel;
    if (u) connFlow(u, true);
  }
}

export function endClient(c: Client): void {
  if (c.ended || c.closed) return;
  c.ended = true;
  c.wait = Wait.None;
  if (!c.out) c.socket.end();
}

/** Answer with one of the ingress's pages; a request whose body was not read (or none at all) closes the connection. */
export function respond(ctx: Ctx, c: Client, page: Page, req: RequestHead | null): void {
  const close = ctx.stopping || req === null || req.close || req.body !== 0 || c.closeAfter;
  writeClient(c, pageBytes(page, close, req?.method === "HEAD"));
  if (close) {
    c.closeAfter = true;
    c.buf = null;
    endClient(c);
  } else waitIdle(ctx, c);
}

/**
 * Between requests: the idle timeout runs until the next head starts. Its deadline is set by the
 * next sweep (deadline 0: not set yet), not here: reading the clock once per request costs more
 * than the rest of this bookkeeping, and the timeout may only end up to one sweep later
 * (decision 0249).
 */
export function waitIdle(_ctx: Ctx, c: Client): void {
  c.wait = Wait.Idle;
  c.deadline = 0;
}

/** Answer a request the ingress will not relay, counted. */
function refuse(ctx: Ctx, c: Client, e: unknown): void {
  ctx.metrics.badRequests++;
  respond(ctx, c, e instanceof HttpError ? badRequestPage(e.status, e.message) : badRequestPage(400, "it could not be read"), null);
}

/** Read the next request head from `c.buf` and start its exchange; loops over pipelined requests answered at once. */
export function nextRequest(ctx: Ctx, c: Client): void {
  while (c.ex === null && c.tunnel === null && c.buf !== null && !c.ended && !c.closed) {
    const buf = c.buf;
    const end = buf.indexOf(CRLF2);
    if (end < 0 || end > MAX_HEAD) {
      if (buf.length > MAX_HEAD) return refuse(ctx, c, new HttpError(431, "its header fields are larger than 64 KiB"));
      // A head ended by bare LFs would never end here: refused now rather than at its deadline.
      if (buf.indexOf(LF2) >= 0) return refuse(ctx, c, new HttpError(400, "its lines end with a bare LF"));
      if (c.wait !== Wait.Head) {
        c.wait = Wait.Head;
        c.deadline = Date.now() + ctx.settings.headerTimeoutMs;
      }
      return;
    }
    let req: RequestHead;
    try {
      req = parseRequestHead(buf.toString("latin1", 0, end), c.lastHost);
    } catch (e) {
      return refuse(ctx, c, e);
    }
    c.buf = end + 4 < buf.length ? buf.subarray(end + 4) : null;
    if (req.strippedCredential) ctx.metrics.credentialsStripped++;
    if (req.host !== c.lastHost) {
      c.lastHost = req.host;
      c.hostKey = normaliseHost(req.host);
      c.fields = null;
    }
    const fields = c.trusted ? forwardedFields(req.forwarding, c.ip, true, ctx.settings.trusted, req.host, c.proto) : (c.fields ??= forwardedFields(req.forwarding, c.ip, false, ctx.settings.trusted, req.host, c.proto));
    if (c.proto === "http" && ctx.plain !== null) {
      const own = ctx.plain(c, req);
      if (own !== null) {
        respond(ctx, c, own, req);
        continue;
      }
    }
    const forward = requestHeadOut(req, fields);
    if (req.body !== 0) {
      c.wait = Wait.Body;
      c.deadline = Date.now() + ctx.settings.bodyTimeoutMs;
    } else c.wait = Wait.None;
    ctx.on.startExchange(ctx, c, req, req.ascii ? forward : Buffer.from(forward, "latin1"));
  }
}

/** A client that half-closed and has no request under way is done. */
export function afterRequests(ctx: Ctx, c: Client): void {
  if (!c.peerEnded || c.ended || c.closed) return;
  if (c.buf && c.ex === null) nextRequest(ctx, c);
  if (c.ex === null && c.tunnel === null) {
    c.buf = null;
    endClient(c);
  }
}

/** Close the clients whose deadline passed. */
function sweep(ctx: Ctx): void {
  const now = Date.now();
  for (const c of ctx.clients) {
    if (c.out !== null && !c.closed && sendStalled(ctx, c, now)) continue;
    if (c.wait === Wait.None || c.deadline > now || c.closed) continue;
    if (c.deadline === 0) {
      // An idle wait started since the last sweep (waitIdle): its timeout starts now.
      c.deadline = now + ctx.settings.idleTimeoutMs;
      continue;
    }
    switch (c.wait) {
      case Wait.Idle:
        ctx.metrics.idleTimeouts++;
        c.buf = null;
        endClient(c);
        break;
      case Wait.Head:
        if (c.buf === null) {
          // A connection that never sent a byte: closed without a word.
          ctx.metrics.idleTimeouts++;
          endClient(c);
        } else {
          ctx.metrics.headTimeouts++;
          respond(ctx, c, badRequestPage(408, "its head did not arrive in time"), null);
        }
        break;
      case Wait.Body: {
        const ex = c.ex;
        // A client paused because its replica does not take bytes, or still waiting for a replica, is not stalling.
        if (ex === null || ex.up === null || c.paused) {
          c.deadline = now + ctx.settings.bodyTimeoutMs;
          break;
        }
        ctx.metrics.bodyTimeouts++;
        c.closeAfter = true;
        ctx.on.fail(ctx, ex, badRequestPage(408, "its body stopped arriving"));
        break;
      }
    }
  }
}

/**
 * A client that took no byte of what the ingress has for it within the send timeout (nginx's
 * `send_timeout`, decision 0521) is cut, and its exchange or tunnel ends with it, releasing the
 * replica's connection: a client that never reads would otherwise hold both forever. True when cut.
 */
function sendStalled(ctx: Ctx, c: Client, now: number): boolean {
  if (c.sendDeadline === 0) {
    c.sendDeadline = now + ctx.settings.sendTimeoutMs;
    return false;
  }
  if (c.sendDeadline > now) return false;
  ctx.metrics.sendTimeouts++;
  c.closeAfter = true;
  c.buf = null;
  c.out = null;
  c.socket.terminate();
  return true;
}

/** The client socket's events, shared by the plain listener (Bun sockets) and the TLS one (tls.ts). */
export interface ClientHandlers {
  open(sock: ClientSocket): void;
  data(sock: ClientSocket, bytes: Buffer): void;
  drain(sock: ClientSocket): void;
  end(sock: ClientSocket): void;
  error(sock: ClientSocket, err: Error): void;
  close(sock: ClientSocket): void;
}

/** Start the deadline sweep; returns the function that stops it. */
export function startSweep(ctx: Ctx): () => void {
  const s = ctx.settings;
  const tick = Math.min(1000, Math.max(25, Math.floor(Math.min(s.headerTimeoutMs, s.idleTimeoutMs, s.bodyTimeoutMs, s.sendTimeoutMs) / 4)));
  const timer = setInterval(() => sweep(ctx), tick);
  timer.unref?.();
  return () => clearInterval(timer);
}

/** Start listening; returns the listener and a function that stops the sweep. */
export function listen(ctx: Ctx, host: string, port: number, reusePort = false): { listener: TCPSocketListener<Client>; stopSweep: () => void } {
  const stopSweep = startSweep(ctx);
  const listener = Bun.listen<Client>({
    hostname: host,
    port,
    allowHalfOpen: true,
    // Several ingress processes on one port (the data plane's workers, decision 0600); Bun takes
    // it, its type declarations do not list it yet.
    ...({ reusePort } as object),
    socket: clientHandlers(ctx, "http") as unknown as SocketHandler<Client>,
  });
  return { listener, stopSweep };
}

/** Every client connection's events, for clients using `proto`. */
export function clientHandlers(ctx: Ctx, proto: "http" | "https"): ClientHandlers {
  const s = ctx.settings;
  return {
    open(sock) {
      const ip = peerAddress(sock.remoteAddress);
      const c: Client = { socket: sock, ip, proto, trusted: s.trusted.has(ip), buf: null, borrowed: false, ex: null, tunnel: null, out: null, closeAfter: false, peerEnded: false, ended: false, closed: false, paused: false, lastHost: null, hostKey: "", fields: null, wait: Wait.Head, deadline: Date.now() + s.headerTimeoutMs, sendDeadline: 0 };
      sock.data = c;
      const mine = (ctx.perAddress.get(ip) ?? 0) + 1;
      if (mine > s.maxConnPerIp || ctx.clients.size >= s.maxConnections) {
        if (mine > s.maxConnPerIp) ctx.metrics.refusedPerAddress++;
        else ctx.metrics.refusedTotal++;
        c.closed = true;
        sock.write(pageBytes(badRequestPage(503, mine > s.maxConnPerIp ? "this address has too many connections open" : "the server has too many connections open"), true, false));
        sock.end();
        return;
      }
      ctx.perAddress.set(ip, mine);
      ctx.clients.add(c);
      ctx.metrics.connections++;
      ctx.metrics.accepted++;
      sock.setNoDelay(true);
    },
    data(sock, bytes) {
      const c = sock.data;
      if (c.closed) return;
      if (c.tunnel) {
        writeConn(c.tunnel, bytes);
        return clientFlow(c);
      }
      if (c.ended) return;
      try {
        if (c.ex) return ctx.on.clientBytes(ctx, c, bytes);
        if (c.buf) c.buf = Buffer.concat([c.buf, bytes]);
        else {
          c.buf = bytes;
          c.borrowed = true;
        }
        nextRequest(ctx, c);
      } catch (e) {
        if (c.ex) ctx.on.badBody(ctx, c.ex, e);
        else refuse(ctx, c, e);
      } finally {
        if (c.borrowed) {
          c.borrowed = false;
          if (c.buf) c.buf = Buffer.from(c.buf);
          clientFlow(c);
        }
      }
    },
    drain(sock) {
      const c = sock.data;
      if (!c.out) return;
      const out = c.out;
      c.out = null;
      // Some progress: a send timeout still running starts again.
      pushClient(c, out);
      if (c.out) return;
      if (c.ended) c.socket.end();
      const u = c.ex?.up ?? c.tunnel;
      if (u) connFlow(u, false);
    },
    end(sock) {
      // The client half-closed: answer the requests it sent whole, then close.
      const c = sock.data;
      if (c.closed) return;
      c.peerEnded = true;
      if (c.tunnel) return endClient(c);
      // A body cut short can never be completed: the exchange ends now, not at its deadline.
      if (c.ex !== null && !c.ex.reqDone) {
        ctx.metrics.badRequests++;
        return ctx.on.fail(ctx, c.ex, badRequestPage(400, "the connection closed before its body was complete"));
      }
      if (c.ex === null) afterRequests(ctx, c);
    },
    error(sock, err) {
      ctx.log?.debug?.("ingress client connection failed", { err: err.message });
    },
    close(sock) {
      const c = sock.data;
      if (!ctx.clients.delete(c)) return;
      c.closed = true;
      ctx.metrics.connections--;
      const n = (ctx.perAddress.get(c.ip) ?? 1) - 1;
      if (n <= 0) ctx.perAddress.delete(c.ip);
      else ctx.perAddress.set(c.ip, n);
      ctx.on.clientClosed(ctx, c);
    },
  };
}
