/**
 * ops's ingress: a second HTTP listener (`OPS_INGRESS_LISTEN`) that routes by Host and path prefix
 * (table.ts) to the replicas of a service, round-robin over the healthy ones, with
 * `X-Forwarded-For` (appended), `-Proto` and `-Host`, the original `Host` kept.
 *
 * It is an HTTP/1.1 proxy on raw sockets (`Bun.listen` for clients, `Bun.connect` for replicas):
 * each request head is parsed and rewritten (http1.ts), and everything after it, request body
 * and response, is relayed as bytes, framing included (a chunked body stays chunked), with the
 * framing followed only to know where each message ends. Nothing is read whole; a side that does
 * not take bytes pauses the other (backpressure both ways). Replica connections are kept alive in
 * a pool per replica and reused by the next request; a client connection keeps its requests in
 * order (pipelined ones wait their turn). A WebSocket upgrade the replica accepts (101) turns both
 * connections into a byte tunnel. Compared with `Bun.serve` + `fetch`, this costs about a third
 * of the CPU per proxied request (bench/ingress.bench.ts, docs/decisions.md).
 *
 * Switching: `setRoutes` / `setService` / `removeService` compile a new table and swap one
 * reference. A request picks its replica when its head arrives and keeps it to its last byte, so
 * a rollout switches the table, waits for `drained(old)` (no request in flight to the old
 * replicas), then stops them: no request is dropped. A replica that refuses a connection, or
 * closes one before answering a request without a body, is marked down for a moment and the next
 * replica is tried; an idle pooled connection the replica had closed is replayed once on a fresh
 * one. An unknown host is a 404 page; a service none of whose replicas answers, a 502 page naming
 * it; a request the ingress cannot read (malformed, ambiguous framing, a head over 64 KiB) a 4xx
 * page, and the connection is closed.
 */
import type { Socket, TCPSocketListener } from "bun";
import type { Logger } from "../../core/log";
import { compileTable, lookup, normaliseHost, serviceKey, type CompiledTable, type RouteConflict, type ServiceEntry, type ServiceRef, type Target, type TargetUpstream } from "./table";
import { badGatewayPage, badRequestPage, notRoutedPage, pageBytes, type Page } from "./pages";
import { FrameTracker, GOING_AWAY } from "./ws-frames";
import { ChunkedScanner, HttpError, forwardedFields, parseRequest, parseResponseHead, type RequestHead, type ResponseHead } from "./http1";

export interface IngressOptions {
  log?: Logger;
  /** How long a replica that refused a connection is skipped (default 2 s). */
  downMs?: number;
  /** Seconds a client connection may go without sending a byte while none of its requests is under way (default 120). */
  idleSeconds?: number;
}

export interface IngressAddress {
  host: string;
  port: number;
  url: string;
}

export interface Ingress {
  /** Replace the whole table. */
  setRoutes(entries: readonly ServiceEntry[]): void;
  /** Set or replace one service's routes and upstreams (the rest of the table unchanged). */
  setService(entry: ServiceEntry): void;
  /** Remove a service's routes; its hosts answer 404 from now on. */
  removeService(ref: ServiceRef): void;
  /** The table as set. */
  table(): readonly ServiceEntry[];
  /** Routes two services claim; the first service (by project/environment/service) keeps each. */
  conflicts(): readonly RouteConflict[];
  /** HTTP requests in flight to an upstream (until their response's last byte). */
  inflight(u: { host: string; port: number }): number;
  /** Open WebSocket connections through the ingress to an upstream. */
  websockets(u: { host: string; port: number }): number;
  /** Resolves true once no HTTP request is in flight to any of `upstreams`, false after `timeoutMs`. */
  drained(upstreams: ReadonlyArray<{ host: string; port: number }>, timeoutMs: number): Promise<boolean>;
  /** Start listening (throws when the address cannot be bound). */
  listen(host: string, port: number): IngressAddress;
  readonly address: IngressAddress | null;
  /**
   * Stop taking connections, let requests in flight finish within `graceMs` (then cut them),
   * close WebSocket tunnels.
   */
  stop(graceMs: number): Promise<void>;
}

const CRLF2 = Buffer.from("\r\n\r\n");
/** Largest request or response head (431 / 502 above it). */
const MAX_HEAD = 64 * 1024;
/** Bytes a client may send ahead of its current exchange before its socket is paused. */
const MAX_AHEAD = 64 * 1024;
/** Default of `IngressOptions.idleSeconds`. */
const IDLE_SECONDS = 120;
/** A replica that does not accept a connection within this is treated as refusing it. */
const CONNECT_TIMEOUT_MS = 5000;
/** Idle pooled connections kept per replica. */
const MAX_IDLE = 128;

const key = (u: { host: string; port: number }) => `${u.host}:${u.port}`;

interface Client {
  socket: Socket<Client>;
  ip: string;
  /** Bytes received and not consumed yet: a head being read, a body waiting for its replica, requests queued behind the current one. */
  buf: Buffer | null;
  /** `buf` is the data callback's own buffer (copied before the callback returns if anything is left). */
  borrowed: boolean;
  ex: Exchange | null;
  tunnel: Conn | null;
  /** Bytes the socket did not take yet (the replica is paused meanwhile). */
  out: Buffer | null;
  /** Close once the current response is out. */
  closeAfter: boolean;
  ended: boolean;
  closed: boolean;
  paused: boolean;
  /** The X-Forwarded-* fields of the last request, and the Host they were made for (a connection mostly repeats it). */
  fields: string | null;
  fieldsHost: string | null;
}

interface Exchange {
  client: Client;
  req: RequestHead;
  /** The head sent to the replica: a string when it is ASCII (written as is, the cheapest), else its bytes. */
  forward: string | Buffer;
  target: Target;
  /** Replicas to try, in order, and the next one's index. */
  ups: readonly TargetUpstream[];
  next: number;
  key: string;
  /** The replica whose in-flight count holds this request (null: none does). */
  counted: Replica | null;
  up: Conn | null;
  /** Request body bytes still to relay (length framing). */
  reqLeft: number;
  reqChunks: ChunkedScanner | null;
  reqDone: boolean;
  res: ResponseHead | null;
  resLeft: number;
  resChunks: ChunkedScanner | null;
  /** Response bytes received from the replica. */
  received: number;
  /** Response bytes written to the client (after which no other answer can be given). */
  answered: boolean;
  reused: boolean;
  replayed: boolean;
  finished: boolean;
  reason: string;
}

/**
 * What the ingress keeps per replica (`host:port`): its idle connections, how many are open, the
 * requests in flight and the tunnels. Forgotten once all four are nothing (replicas come and go);
 * a compiled table's upstream keeps a reference to it, checked with `gone`.
 */
interface Replica {
  key: string;
  idle: Conn[];
  open: number;
  inflight: number;
  websockets: number;
  gone: boolean;
}

/** A table's upstream with its replica's state, looked up once per table rather than per request. */
type Routed = TargetUpstream & { replica?: Replica };

interface Conn {
  socket: Socket<Conn>;
  key: string;
  replica: Replica;
  ex: Exchange | null;
  tunnel: Client | null;
  /** A response head split across reads. */
  buf: Buffer | null;
  out: Buffer | null;
  reusable: boolean;
  closed: boolean;
  paused: boolean;
  err: string;
  /** In a tunnel: the WebSocket frames going to the client. */
  frames: FrameTracker | null;
}

function clientIp(socket: Socket<Client>): string {
  const a = socket.remoteAddress ?? "";
  return a.startsWith("::ffff:") ? a.slice(7) : a;
}

export function createIngress(opts: IngressOptions = {}): Ingress {
  const downMs = opts.downMs ?? 2000;
  const idleSeconds = opts.idleSeconds ?? IDLE_SECONDS;
  let entries = new Map<string, ServiceEntry>();
  let current: CompiledTable = compileTable([]);
  const downUntil = new Map<string, number>();
  const replicas = new Map<string, Replica>();
  const clients = new Set<Client>();
  let listener: TCPSocketListener<Client> | null = null;
  let address: IngressAddress | null = null;
  let stopping = false;

  const swap = (next: Map<string, ServiceEntry>) => {
    entries = next;
    current = compileTable([...next.values()]);
    for (const c of current.conflicts) opts.log?.warn("ingress route claimed twice", { host: c.host, path_prefix: c.pathPrefix, kept: c.kept, ignored: c.ignored });
  };
  function replicaOf(k: string): Replica {
    let r = replicas.get(k);
    if (!r) {
      r = { key: k, idle: [], open: 0, inflight: 0, websockets: 0, gone: false };
      replicas.set(k, r);
    }
    return r;
  }
  function replicaFor(u: Routed): Replica {
    let r = u.replica;
    if (r === undefined || r.gone) r = u.replica = replicaOf(u.key);
    return r;
  }
  function forget(r: Replica): void {
    if (r.open <= 0 && r.idle.length === 0 && r.inflight === 0 && r.websockets === 0 && !r.gone) {
      r.gone = true;
      if (replicas.get(r.key) === r) replicas.delete(r.key);
    }
  }

  /** The target's upstreams to try, in order: round-robin start, healthy ones first, ones that just refused last. */
  function candidates(t: Target): readonly TargetUpstream[] {
    const ups = t.upstreams;
    const n = ups.length;
    if (n === 0) return ups;
    const start = t.next++ % n;
    if (n === 1) return ups[0].healthy === false ? [] : ups;
    const now = downUntil.size > 0 ? Date.now() : 0;
    const good: TargetUpstream[] = [];
    const down: TargetUpstream[] = [];
    for (let i = 0; i < n; i++) {
      const u = ups[(start + i) % n];
      if (u.healthy === false) continue;
      if (now !== 0 && (downUntil.get(u.key) ?? 0) > now) down.push(u);
      else good.push(u);
    }
    return down.length === 0 ? good : good.concat(down);
  }

  /** Host headers as the table keys them, remembered (most traffic repeats a few hosts). */
  const hosts = new Map<string, string>();
  function hostOf(raw: string | null): string {
    if (raw === null) return "";
    let h = hosts.get(raw);
    if (h === undefined) {
      h = normaliseHost(raw);
      if (hosts.size >= 1024) hosts.clear();
      hosts.set(raw, h);
    }
    return h;
  }

  // ---- flow control ------------------------------------------------------------------------

  /** Pause the client while its replica has bytes it did not take, or while it sent too much ahead. */
  function clientFlow(c: Client): void {
    const want = (c.ex?.up?.out ?? c.tunnel?.out ?? null) !== null || (c.ex !== null && c.buf !== null && c.buf.length > MAX_AHEAD);
    if (want === c.paused || c.closed) return;
    c.paused = want;
    if (want) c.socket.pause();
    else c.socket.resume();
  }

  function connFlow(u: Conn, paused: boolean): void {
    if (paused === u.paused || u.closed) return;
    u.paused = paused;
    if (paused) u.socket.pause();
    else u.socket.resume();
  }

  function writeClient(c: Client, bytes: Uint8Array): void {
    if (c.closed || c.ended) return;
    pushClient(c, bytes);
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
      const u = c.ex?.up ?? c.tunnel;
      if (u) connFlow(u, true);
    }
  }

  /** Write to the replica (a string only when ASCII), keeping what the socket did not take and pausing the client meanwhile. */
  function writeConn(u: Conn, bytes: Uint8Array | string): void {
    if (u.closed) return;
    if (u.out) {
      u.out = Buffer.concat([u.out, typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes]);
      return;
    }
    const n = u.socket.write(bytes);
    if (n >= 0 && n < bytes.length) {
      u.out = typeof bytes === "string" ? Buffer.from(bytes.slice(n), "latin1") : Buffer.from(bytes.subarray(n));
      const c = u.ex?.client ?? u.tunnel;
      if (c) clientFlow(c);
    }
  }

  function endClient(c: Client): void {
    if (c.ended || c.closed) return;
    c.ended = true;
    if (!c.out) c.socket.end();
  }

  /** Answer a request with one of the ingress's pages; a request whose body was not read closes the connection. */
  function respond(c: Client, page: Page, req: RequestHead | null): void {
    const close = stopping || req === null || req.close || req.body !== 0;
    writeClient(c, pageBytes(page, close, req?.method === "HEAD"));
    if (close) {
      c.closeAfter = true;
      c.buf = null;
      endClient(c);
    }
  }

  // ---- requests ----------------------------------------------------------------------------

  /** Read the next request head from `c.buf` and start its exchange; loops over pipelined requests answered at once. */
  function nextRequest(c: Client): void {
    while (c.ex === null && c.tunnel === null && c.buf !== null && !c.ended && !c.closed) {
      const buf = c.buf;
      const end = buf.indexOf(CRLF2);
      if (end < 0 || end > MAX_HEAD) {
        if (buf.length > MAX_HEAD) respond(c, badRequestPage(431, "its header fields are larger than 64 KiB"), null);
        return;
      }
      let req: RequestHead;
      const head = buf.toString("latin1", 0, end);
      try {
        req = parseRequest(head, c.ip);
      } catch (e) {
        respond(c, e instanceof HttpError ? badRequestPage(e.status, e.message) : badRequestPage(400, "it could not be read"), null);
        return;
      }
      c.buf = end + 4 < buf.length ? buf.subarray(end + 4) : null;
      let forward: string;
      if (req.forward !== null) forward = req.forward;
      else {
        if (c.fields === null || c.fieldsHost !== req.host) {
          c.fields = forwardedFields(null, c.ip, req.host);
          c.fieldsHost = req.host;
        }
        forward = head + c.fields;
      }
      start(c, req, req.ascii ? forward : Buffer.from(forward, "latin1"));
    }
  }

  function start(c: Client, req: RequestHead, forward: string | Buffer): void {
    if (stopping) req.close = true;
    const host = hostOf(req.host);
    const target = lookup(current, host, req.path);
    if (!target) {
      const q = req.path.indexOf("?");
      respond(c, notRoutedPage(host, q < 0 ? req.path : req.path.slice(0, q)), req);
      return;
    }
    const ups = candidates(target);
    if (ups.length === 0) {
      respond(c, badGatewayPage(target.service, "It has no healthy replica."), req);
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
      reqChunks: req.body === -1 ? new ChunkedScanner() : null,
      reqDone: req.body === 0,
      res: null,
      resLeft: 0,
      resChunks: null,
      received: 0,
      answered: false,
      reused: false,
      replayed: false,
      finished: false,
      reason: "",
    };
    c.ex = ex;
    tryNext(ex);
  }

  /** Where the request body ends in `bytes` from `from` (all of it when it goes on); advances the framing. */
  function bodyEnd(ex: Exchange, bytes: Uint8Array, from: number): number {
    if (ex.reqDone) return from;
    if (ex.reqChunks) {
      const e = ex.reqChunks.scan(bytes, from);
      if (e < 0) return bytes.length;
      ex.reqDone = true;
      return e;
    }
    const end = Math.min(bytes.length, from + ex.reqLeft);
    ex.reqLeft -= end - from;
    if (ex.reqLeft === 0) ex.reqDone = true;
    return end;
  }

  /** Send the exchange to its next candidate replica (`again`: the same one, on a new connection): a pooled connection, or a new one. */
  function tryNext(ex: Exchange, again = false): void {
    const u = again ? ex.ups[ex.next - 1] : ex.ups[ex.next++];
    if (!u) {
      fail(ex, badGatewayPage(ex.target.service, ex.reason ? `The last replica tried failed: ${ex.reason}` : "No replica answered."));
      return;
    }
    ex.key = u.key;
    const replica = replicaFor(u);
    if (ex.counted === null) {
      ex.counted = replica;
      replica.inflight++;
    }
    const idle = again ? undefined : replica.idle.pop();
    if (idle) {
      ex.reused = true;
      attach(ex, idle);
      return;
    }
    ex.reused = false;
    connect(replica, u.host, u.port).then(
      (conn) => {
        if (ex.finished) {
          release(conn);
          return;
        }
        attach(ex, conn);
      },
      (e: Error) => {
        if (ex.finished) return;
        downUntil.set(ex.key, Date.now() + downMs);
        ex.reason = e.message;
        opts.log?.warn("ingress upstream failed", { service: ex.target.key, upstream: ex.key, err: e.message });
        uncount(ex);
        tryNext(ex);
      },
    );
  }

  function uncount(ex: Exchange): void {
    const r = ex.counted;
    if (r !== null) {
      ex.counted = null;
      if (--r.inflight === 0) forget(r);
    }
  }

  /** Write the head and the body bytes already received; the rest follows as the client sends it. */
  function attach(ex: Exchange, u: Conn): void {
    const c = ex.client;
    ex.up = u;
    u.ex = ex;
    u.buf = null;
    let bytes: Uint8Array | string = ex.forward;
    if (!ex.reqDone && c.buf) {
      const end = bodyEnd(ex, c.buf, 0);
      bytes = Buffer.concat([typeof ex.forward === "string" ? Buffer.from(ex.forward, "latin1") : ex.forward, c.buf.subarray(0, end)]);
      c.buf = end < c.buf.length ? c.buf.subarray(end) : null;
    }
    writeConn(u, bytes);
    clientFlow(c);
  }

  /** The client's bytes while an exchange is under way: body bytes go to the replica, the rest waits. */
  function clientBytes(c: Client, bytes: Buffer): void {
    const ex = c.ex!;
    if (ex.up && !ex.reqDone && c.buf === null) {
      const end = bodyEnd(ex, bytes, 0);
      writeConn(ex.up, end === bytes.length ? bytes : bytes.subarray(0, end));
      if (end < bytes.length) c.buf = Buffer.from(bytes.subarray(end));
    } else c.buf = c.buf ? Buffer.concat([c.buf, bytes]) : Buffer.from(bytes);
    clientFlow(c);
  }

  // ---- responses ---------------------------------------------------------------------------

  function responseDone(ex: Exchange): boolean {
    const r = ex.res!;
    return r.body === 0 || (r.body > 0 && ex.resLeft === 0) || (r.body === -1 && ex.resChunks!.done);
  }

  function connBytes(u: Conn, bytes: Buffer): void {
    const ex = u.ex;
    if (!ex) {
      // Bytes nobody asked for on an idle connection: it is out of step.
      u.reusable = false;
      u.socket.end();
      return;
    }
    ex.received += bytes.length;
    const c = ex.client;
    let src: Buffer = bytes;
    let from = 0;
    if (ex.res === null) {
      if (u.buf) {
        src = Buffer.concat([u.buf, bytes]);
        u.buf = null;
      }
      for (;;) {
        const res = parseResponseHead(src, from, ex.req.method);
        if (res === null) {
          if (src.length - from > MAX_HEAD) throw new HttpError(502, "the replica's response head is too large");
          u.buf = Buffer.from(src.subarray(from));
          return;
        }
        const end = res.end - 4;
        if (res.status === 101) {
          if (!ex.req.websocket) throw new HttpError(502, "the replica switched protocols unasked");
          ex.answered = true;
          writeClient(c, from === 0 ? src : src.subarray(from));
          tunnel(ex, u);
          u.frames!.feed(src.subarray(res.end));
          return;
        }
        if (res.status < 200) {
          // An interim answer (100 Continue, 103 Early Hints): relayed to HTTP/1.1 clients; the final one follows.
          if (!ex.req.http10) writeClient(c, src.subarray(from, end + 4));
          from = end + 4;
          if (from >= src.length) return;
          continue;
        }
        ex.res = res;
        ex.answered = true;
        if (res.body > 0) ex.resLeft = res.body;
        else if (res.body === -1) ex.resChunks = new ChunkedScanner();
        if (!res.reusable) u.reusable = false;
        return relayBody(ex, u, src, from, end + 4, res.rewritten);
      }
    }
    relayBody(ex, u, src, 0, 0, null);
  }

  /**
   * Relay `src` from `from` (the body starting at `bodyFrom`) up to the end of the response; a
   * `head` replaces the bytes before `bodyFrom` (one write for both).
   */
  function relayBody(ex: Exchange, u: Conn, src: Buffer, from: number, bodyFrom: number, head: string | null): void {
    const r = ex.res!;
    let end: number;
    if (r.body === -2) end = src.length;
    else if (r.body === -1) {
      const e = ex.resChunks!.done ? bodyFrom : ex.resChunks!.scan(src, bodyFrom);
      end = e < 0 ? src.length : e;
    } else {
      end = Math.min(src.length, bodyFrom + ex.resLeft);
      ex.resLeft -= end - bodyFrom;
    }
    if (head !== null) writeClient(ex.client, end > bodyFrom ? Buffer.concat([Buffer.from(head, "latin1"), src.subarray(bodyFrom, end)]) : Buffer.from(head, "latin1"));
    else if (end > from) writeClient(ex.client, from === 0 && end === src.length ? src : src.subarray(from, end));
    if (end < src.length) u.reusable = false; // bytes past the end of the response: out of step
    if (r.body !== -2 && responseDone(ex)) {
      if (ex.reqDone) finish(ex);
      else {
        // The replica answered before the whole body arrived: nothing more goes to it, and the
        // client's connection cannot be resynchronised.
        ex.client.closeAfter = true;
        u.reusable = false;
        finish(ex);
      }
    }
  }

  function tunnel(ex: Exchange, u: Conn): void {
    const c = ex.client;
    uncount(ex);
    ex.finished = true;
    c.ex = null;
    u.ex = null;
    u.reusable = false;
    c.tunnel = u;
    u.tunnel = c;
    u.frames = new FrameTracker();
    u.replica.websockets++;
    if (c.buf) {
      const rest = c.buf;
      c.buf = null;
      writeConn(u, rest);
    }
    clientFlow(c);
  }

  /**
   * End the exchange's hold on its client and its replica connection, which goes back to the pool
   * when `keep` and it can carry another request (else it is closed). Returns the client.
   */
  function settle(ex: Exchange, keep: boolean): Client {
    ex.finished = true;
    uncount(ex);
    const c = ex.client;
    c.ex = null;
    const u = ex.up;
    if (u) {
      u.ex = null;
      if (!keep) u.reusable = false;
      release(u);
    }
    return c;
  }

  /** The exchange is over: its connection goes back to the pool and the client's next request starts. */
  function finish(ex: Exchange): void {
    if (ex.finished) return;
    if (downUntil.size > 0) downUntil.delete(ex.key);
    const c = settle(ex, true);
    if (c.closeAfter || ex.req.close || ex.res?.body === -2 || stopping) {
      c.buf = null;
      endClient(c);
      return;
    }
    if (c.buf) nextRequest(c);
    clientFlow(c);
  }

  /** The exchange cannot go on: answer with `page` if nothing was answered yet, else cut the client. */
  function fail(ex: Exchange, page: Page): void {
    if (ex.finished) return;
    const c = settle(ex, false);
    if (ex.answered) {
      c.buf = null;
      c.socket.terminate();
      return;
    }
    if (!ex.reqDone) ex.req.body = -1; // the rest of its body was not read: close after the page
    respond(c, page, ex.req);
    if (!c.ended && c.buf) nextRequest(c);
  }

  // ---- replica connections -----------------------------------------------------------------

  function release(u: Conn): void {
    if (!u.reusable || u.closed || u.buf !== null || u.out !== null || u.replica.idle.length >= MAX_IDLE || stopping) {
      if (!u.closed) u.socket.end();
      return;
    }
    connFlow(u, false);
    u.replica.idle.push(u);
  }

  function connect(replica: Replica, host: string, port: number): Promise<Conn> {
    const k = replica.key;
    const conn: Conn = { socket: null as unknown as Socket<Conn>, key: k, replica, ex: null, tunnel: null, buf: null, out: null, reusable: true, closed: false, paused: false, err: "", frames: null };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const connecting = Bun.connect<Conn>({
      hostname: host,
      port,
      data: conn,
      socket: {
        open(s) {
          s.setNoDelay(true);
          replica.open++;
        },
        data(s, bytes) {
          const u = s.data;
          if (u.tunnel) {
            u.frames!.feed(bytes);
            return writeClient(u.tunnel, bytes);
          }
          try {
            connBytes(u, bytes);
          } catch (e) {
            connFault(u, e as Error);
          }
        },
        drain(s) {
          const u = s.data;
          if (!u.out) return;
          const out = u.out;
          u.out = null;
          writeConn(u, out);
          if (!u.out) {
            const c = u.ex?.client ?? u.tunnel;
            if (c) clientFlow(c);
          }
        },
        error(s, err) {
          s.data.err = err.message;
        },
        close(s) {
          connClosed(s.data);
        },
        connectError() {
          // The promise rejects; tryNext handles it.
        },
      },
    });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    });
    return Promise.race([connecting, timeout]).then(
      (s) => {
        clearTimeout(timer);
        conn.socket = s;
        return conn;
      },
      (e: Error) => {
        clearTimeout(timer);
        // A connection that opens after its timeout is closed unused.
        void connecting.then((s) => s.end(), () => undefined);

        throw e;
      },
    );
  }

  function connFault(u: Conn, e: Error): void {
    const ex = u.ex;
    u.reusable = false;
    opts.log?.warn("ingress upstream answer unusable", { upstream: u.key, err: e.message });
    if (ex) fail(ex, badGatewayPage(ex.target.service, `The replica's answer could not be relayed: ${e.message}`));
    if (!u.closed) u.socket.end();
  }

  function connClosed(u: Conn): void {
    u.closed = true;
    const r = u.replica;
    r.open--;
    const at = r.idle.indexOf(u);
    if (at >= 0) r.idle.splice(at, 1);
    if (u.tunnel) {
      const c = u.tunnel;
      u.tunnel = null;
      r.websockets--;
      forget(r);
      c.tunnel = null;
      endClient(c);
      return;
    }
    const ex = u.ex;
    if (!ex) return forget(r);
    u.ex = null;
    ex.up = null;
    if (ex.res?.body === -2) {
      // A body that ends when the replica closes: it just did.
      ex.client.closeAfter = true;
      finish(ex);
      return;
    }
    if (!ex.answered && ex.received === 0 && ex.req.body === 0) {
      if (ex.reused && !ex.replayed) {
        // An idle connection the replica closed as it was reused: replay once on a fresh one.
        ex.replayed = true;
        tryNext(ex, true);
        return;
      }
      // Closed without a word to a request that can be replayed: the next replica may answer.
      downUntil.set(ex.key, Date.now() + downMs);
      ex.reason = u.err || "the replica closed the connection";
      opts.log?.warn("ingress upstream failed", { service: ex.target.key, upstream: ex.key, err: ex.reason });
      uncount(ex);
      tryNext(ex);
      return;
    }
    ex.reason = u.err || (ex.answered ? "the replica closed the connection in the middle of its response" : "the replica closed the connection");
    opts.log?.warn("ingress upstream failed", { service: ex.target.key, upstream: ex.key, err: ex.reason });
    fail(ex, badGatewayPage(ex.target.service, `The last replica tried failed: ${ex.reason}`));
  }

  // ---- client connections ------------------------------------------------------------------

  function clientFault(c: Client, e: Error): void {
    opts.log?.error("ingress request failed", { err: e });
    const ex = c.ex;
    if (ex) fail(ex, badRequestPage(e instanceof HttpError ? e.status : 400, e.message));
    else respond(c, badRequestPage(400, "it could not be read"), null);
  }

  function clientClosed(c: Client): void {
    c.closed = true;
    clients.delete(c);
    const u = c.tunnel;
    if (u) {
      c.tunnel = null;
      u.tunnel = null;
      u.replica.websockets--;
      u.socket.end();
    }
    if (c.ex) settle(c.ex, false);
  }

  const ingress: Ingress = {
    setRoutes(list) {
      const next = new Map<string, ServiceEntry>();
      for (const e of list) next.set(serviceKey(e.service), e);
      swap(next);
    },
    setService(entry) {
      const next = new Map(entries);
      next.set(serviceKey(entry.service), entry);
      swap(next);
    },
    removeService(ref) {
      const next = new Map(entries);
      next.delete(serviceKey(ref));
      swap(next);
    },
    table: () => current.entries,
    conflicts: () => current.conflicts,
    inflight: (u) => replicas.get(key(u))?.inflight ?? 0,
    websockets: (u) => replicas.get(key(u))?.websockets ?? 0,
    async drained(upstreams, timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        if (upstreams.every((u) => (replicas.get(key(u))?.inflight ?? 0) === 0)) return true;
        if (Date.now() >= end) return false;
        await Bun.sleep(20);
      }
    },
    listen(host, port) {
      if (listener) throw new Error("the ingress is already listening");
      stopping = false;
      listener = Bun.listen<Client>({
        hostname: host,
        port,
        allowHalfOpen: true,
        socket: {
          open(s) {
            s.data = { socket: s, ip: clientIp(s), buf: null, borrowed: false, ex: null, tunnel: null, out: null, closeAfter: false, ended: false, closed: false, paused: false, fields: null, fieldsHost: null };
            clients.add(s.data);
            s.setNoDelay(true);
            s.timeout(idleSeconds);
          },
          data(s, bytes) {
            const c = s.data;
            if (c.tunnel) return writeConn(c.tunnel, bytes);
            if (c.ended) return;
            try {
              if (c.ex) return clientBytes(c, bytes);
              if (c.buf) c.buf = Buffer.concat([c.buf, bytes]);
              else {
                c.buf = bytes;
                c.borrowed = true;
              }
              nextRequest(c);
            } catch (e) {
              clientFault(c, e as Error);
            } finally {
              if (c.borrowed) {
                c.borrowed = false;
                if (c.buf) c.buf = Buffer.from(c.buf);
                clientFlow(c);
              }
            }
          },
          drain(s) {
            const c = s.data;
            if (!c.out) return;
            const out = c.out;
            c.out = null;
            pushClient(c, out);
            if (c.out) return;
            if (c.ended) c.socket.end();
            const u = c.ex?.up ?? c.tunnel;
            if (u) connFlow(u, false);
          },
          end(s) {
            // The client half-closed: answer what it asked, then close.
            const c = s.data;
            c.closeAfter = true;
            if (c.tunnel) return endClient(c);
            if (c.ex === null) {
              c.buf = null;
              endClient(c);
            }
          },
          timeout(s) {
            // The timer restarts with every read from the client: it fires after idleSeconds
            // without one. During an exchange or a tunnel that is not idleness (the client may
            // only be receiving): the timer is restarted instead.
            const c = s.data;
            if (c.ex || c.tunnel) return s.timeout(idleSeconds);
            if (c.buf) respond(c, badRequestPage(408, "its head did not arrive in time"), null);
            else endClient(c);
          },
          error(s, err) {
            opts.log?.debug?.("ingress client connection failed", { err: err.message });
          },
          close(s) {
            clientClosed(s.data);
          },
        },
      });
      const h = host.includes(":") ? `[${host}]` : host;
      address = { host, port: listener.port, url: `http://${h}:${listener.port}` };
      return address;
    },
    get address() {
      return address;
    },
    async stop(graceMs) {
      const l = listener;
      if (!l) return;
      listener = null;
      address = null;
      stopping = true;
      l.stop(false);
      for (const c of clients) {
        if (c.tunnel) {
          // A WebSocket client is told the server is going away, between two frames.
          if (c.tunnel.frames?.atBoundary) writeClient(c, GOING_AWAY);
          c.tunnel.socket.end();
          endClient(c);
        } else if (c.ex === null) endClient(c);
        else c.closeAfter = true;
      }
      const end = Date.now() + graceMs;
      while ([...clients].some((c) => c.ex !== null) && Date.now() < end) await Bun.sleep(10);
      if ([...clients].some((c) => c.ex !== null)) opts.log?.warn("ingress requests still in flight at shutdown; closing them", { grace_ms: graceMs });
      for (const c of clients) c.socket.terminate();
      for (const r of replicas.values()) for (const u of r.idle.splice(0)) u.socket.end();
    },
  };
  return ingress;
}
