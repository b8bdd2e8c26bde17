/**
 * Connections to replicas: opened on demand, pooled per replica (`host:port`) while idle, reused
 * last-in first-out. A connection goes back to the pool only after a complete exchange (the whole
 * request written, the whole response read, nothing more received, nothing left to write, the
 * replica not asking to close); an early answer, an error or any doubt closes it
 * (exchange.ts decides `reusable`). The socket callbacks hand bytes to relay.ts through `ctx.on`
 * (given at construction, docs/decisions/0419-ingress-entry-points-injected.md).
 */
import type { Ctx, Conn, Replica } from "./types";
import type { Target, TargetUpstream, Upstream } from "./table";
import { canEnterNamespaces, connectInside } from "./netns-connect";

/** A replica that does not accept a connection within this is treated as refusing it. */
const CONNECT_TIMEOUT_MS = 5000;
/** Idle pooled connections kept per replica. */
const MAX_IDLE = 128;

/** A table's upstream with its replica's state, looked up once per table rather than per request. */
type Routed = TargetUpstream & { replica?: Replica };

export function replicaOf(ctx: Ctx, k: string): Replica {
  let r = ctx.replicas.get(k);
  if (!r) {
    r = { key: k, idle: [], open: 0, inflight: 0, websockets: 0, gone: false };
    ctx.replicas.set(k, r);
  }
  return r;
}

export function replicaFor(ctx: Ctx, u: Routed): Replica {
  let r = u.replica;
  if (r === undefined || r.gone) r = u.replica = replicaOf(ctx, u.key);
  return r;
}

/** Drop a replica's state once nothing refers to it. */
export function forget(ctx: Ctx, r: Replica): void {
  if (r.open <= 0 && r.idle.length === 0 && r.inflight === 0 && r.websockets === 0 && !r.gone) {
    r.gone = true;
    if (ctx.replicas.get(r.key) === r) ctx.replicas.delete(r.key);
  }
}

/** The target's upstreams to try, in order: round-robin start, healthy ones first, ones that just refused last. */
export function candidates(ctx: Ctx, t: Target): readonly TargetUpstream[] {
  const ups = t.upstreams;
  const n = ups.length;
  if (n === 0) return ups;
  const start = t.next++ % n;
  if (n === 1) return ups[0].healthy === false ? [] : ups;
  const now = ctx.downUntil.size > 0 ? Date.now() : 0;
  const good: TargetUpstream[] = [];
  const down: TargetUpstream[] = [];
  for (let i = 0; i < n; i++) {
    const u = ups[(start + i) % n];
    if (u.healthy === false) continue;
    if (now !== 0 && (ctx.downUntil.get(u.key) ?? 0) > now) down.push(u);
    else good.push(u);
  }
  return down.length === 0 ? good : good.concat(down);
}

export function connFlow(u: Conn, paused: boolean): void {
  if (paused === u.paused || u.closed) return;
  u.paused = paused;
  if (paused) u.socket.pause();
  else u.socket.resume();
}

/** Put a connection back in its replica's pool, or close it when it cannot carry another exchange. */
export function release(ctx: Ctx, u: Conn): void {
  if (!u.reusable || u.closed || u.buf !== null || u.out !== null || u.replica.idle.length >= MAX_IDLE || ctx.stopping) {
    if (!u.closed) u.socket.end();
    return;
  }
  connFlow(u, false);
  u.replica.idle.push(u);
}

/**
 * Never use `u` again: out of the pool and closed at once. For a connection out of step with its
 * replica (bytes nobody asked for), whose next answer would go to the wrong exchange.
 */
export function retire(u: Conn): void {
  u.reusable = false;
  const at = u.replica.idle.indexOf(u);
  if (at >= 0) u.replica.idle.splice(at, 1);
  if (!u.closed) u.socket.terminate();
}

/** Open a connection to a replica (rejects on refusal or after CONNECT_TIMEOUT_MS). */
export function connect(ctx: Ctx, replica: Replica, u: Upstream): Promise<Conn> {
  const conn: Conn = { socket: null as unknown as Conn["socket"], key: replica.key, replica, ex: null, tunnel: null, buf: null, out: null, reusable: true, closed: false, paused: false, err: "", frames: null, sentTurn: -1 };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const socket: import("bun").SocketHandler<Conn> = {
    open(s) {
      s.setNoDelay(true);
      // Set here too: bytes may arrive before the exchange takes the connection, and retire it.
      conn.socket = s;
      replica.open++;
    },
    data(s, bytes) {
      const u = s.data;
      if (u.tunnel) {
        u.frames!.feed(bytes);
        return ctx.on.writeClient(u.tunnel, bytes);
      }
      try {
        ctx.on.upstreamBytes(ctx, u, bytes);
      } catch (e) {
        ctx.on.upstreamFault(ctx, u, e as Error);
      }
    },
    drain(s) {
      ctx.on.upstreamDrained(s.data);
    },
    error(s, err) {
      s.data.err = err.message;
    },
    close(s) {
      ctx.on.upstreamClosed(ctx, s.data);
    },
    connectError() {
      // The promise rejects; the exchange tries the next replica.
    },
  };
  // Inside the replica's namespace when ops may enter it (decision 0601), else its host port.
  const connecting =
    u.netns && canEnterNamespaces()
      ? connectInside(u.netns, u.port, CONNECT_TIMEOUT_MS).then((fd) => Bun.connect<Conn>({ fd, data: conn, socket } as unknown as import("bun").TCPSocketConnectOptions<Conn>))
      : Bun.connect<Conn>({ hostname: u.host, port: u.port, data: conn, socket });
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

/** Write to the replica (a string only when ASCII), keeping what the socket did not take. Returns false when bytes are left over. */
export function writeConn(u: Conn, bytes: Uint8Array | string): boolean {
  if (u.closed) return true;
  if (u.out) {
    u.out = Buffer.concat([u.out, typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes]);
    return false;
  }
  const n = u.socket.write(bytes);
  if (n >= 0 && n < bytes.length) {
    u.out = typeof bytes === "string" ? Buffer.from(bytes.slice(n), "latin1") : Buffer.from(bytes.subarray(n));
    return false;
  }
  return true;
}

/** Close every idle pooled connection (shutdown). */
export function closeIdle(ctx: Ctx): void {
  for (const r of ctx.replicas.values()) for (const u of r.idle.splice(0)) u.socket.end();
}
