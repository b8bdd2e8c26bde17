/**
 * ops's ingress: a second HTTP listener (`OPS_INGRESS_LISTEN`) that routes by Host and path prefix
 * (table.ts) to the replicas of a service, round-robin over the healthy ones, with
 * `X-Forwarded-For` (appended), `-Proto` and `-Host`, the original `Host` kept, WebSocket upgrades
 * (websocket.ts), and bodies streamed both ways: the request body is handed to the upstream
 * request as a stream and the upstream's body back to the client as one (full duplex), nothing is
 * read whole. An unknown host is a 404 page; a service none of whose replicas answers, a 502 page
 * naming it.
 *
 * Switching: `setRoutes` / `setService` / `removeService` compile a new table and swap one
 * reference. Requests without a body go through ops's own keep-alive client (upstream.ts); the
 * others through `fetch`, which streams them. A request picks its upstream when it arrives and keeps it to its last byte, so a
 * rollout switches the table, waits for `drained(old)` (no request in flight to the old
 * replicas), then stops them: no request is dropped. A connection refused by an upstream (a
 * replica that just died) marks it down for a moment and, when the request has no body to replay,
 * the next replica is tried.
 */
import type { Server, ServerWebSocket } from "bun";
import type { Logger } from "../../core/log";
import { compileTable, lookup, normaliseHost, serviceKey, type CompiledTable, type RouteConflict, type ServiceEntry, type ServiceRef, type Target, type Upstream } from "./table";
import { badGatewayPage, notRoutedPage } from "./pages";
import { openUpstream, upgradeClient, websocketHandlers, type WsData } from "./websocket";
import { createUpstreamClient } from "./upstream";

export interface IngressOptions {
  log?: Logger;
  /** How long a replica that refused a connection is skipped (default 2 s). */
  downMs?: number;
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
   * close WebSockets with 1001.
   */
  stop(graceMs: number): Promise<void>;
}

/** Request headers that concern one connection only (RFC 9110 §7.6.1), never forwarded. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate"];
/** Bodies up to this size with a declared length are read whole before answering (cheaper than a stream). */
const SMALL_BODY = 64 * 1024;

const key = (u: { host: string; port: number }) => `${u.host}:${u.port}`;

function clientAddress(server: Server<WsData>, req: Request): string {
  const a = server.requestIP(req)?.address ?? "";
  return a.startsWith("::ffff:") ? a.slice(7) : a;
}

export function createIngress(opts: IngressOptions = {}): Ingress {
  const downMs = opts.downMs ?? 2000;
  let entries = new Map<string, ServiceEntry>();
  let current: CompiledTable = compileTable([]);
  const counts = new Map<string, number>();
  const wsCounts = new Map<string, number>();
  const downUntil = new Map<string, number>();
  const sockets = new Set<ServerWebSocket<WsData>>();
  let server: Server<WsData> | null = null;
  let address: IngressAddress | null = null;
  const client = createUpstreamClient({ smallBody: SMALL_BODY });

  const swap = (next: Map<string, ServiceEntry>) => {
    entries = next;
    current = compileTable([...next.values()]);
    for (const c of current.conflicts) opts.log?.warn("ingress route claimed twice", { host: c.host, path_prefix: c.pathPrefix, kept: c.kept, ignored: c.ignored });
  };
  const inc = (k: string) => counts.set(k, (counts.get(k) ?? 0) + 1);
  const dec = (k: string) => {
    const n = (counts.get(k) ?? 1) - 1;
    if (n <= 0) counts.delete(k);
    else counts.set(k, n);
  };

  /** The target's upstreams to try, in order: round-robin start, healthy ones first, ones that just refused last. */
  function candidates(t: Target): Upstream[] {
    const ups = t.upstreams;
    const n = ups.length;
    if (n === 0) return [];
    const start = t.next++ % n;
    if (n === 1) return ups[0].healthy === false ? [] : [ups[0]];
    const now = downUntil.size > 0 ? Date.now() : 0;
    const good: Upstream[] = [];
    const down: Upstream[] = [];
    for (let i = 0; i < n; i++) {
      const u = ups[(start + i) % n];
      if (u.healthy === false) continue;
      if (now !== 0 && (downUntil.get(key(u)) ?? 0) > now) down.push(u);
      else good.push(u);
    }
    return down.length === 0 ? good : good.concat(down);
  }

  /**
   * The headers sent upstream. A plain object from Bun's `Headers.toJSON()`: copying into a new
   * `Headers` and mutating it costs a third of the proxy's throughput (bench/ingress.bench.ts).
   */
  function forwardHeaders(req: Request, srv: Server<WsData>, hostHeader: string | null): Record<string, string> {
    const h = (req.headers as unknown as { toJSON(): Record<string, string> }).toJSON();
    const conn = h.connection;
    if (conn !== undefined) for (const token of conn.split(",")) delete h[token.trim().toLowerCase()];
    for (const name of HOP_BY_HOP) if (h[name] !== undefined) delete h[name];
    const ip = clientAddress(srv, req);
    const prior = h["x-forwarded-for"];
    h["x-forwarded-for"] = prior ? `${prior}, ${ip}` : ip;
    h["x-forwarded-proto"] = "http";
    if (hostHeader) h["x-forwarded-host"] = hostHeader;
    return h;
  }

  /** The upstream's response to the client, counting the request in flight until its last byte. */
  async function relay(res: Response, k: string): Promise<Response> {
    const rh = res.headers;
    // Connection-level headers of the upstream's connection are not the client's.
    const headers = rh.has("connection") || rh.has("keep-alive") || rh.has("transfer-encoding") ? new Headers(rh) : rh;
    if (headers !== rh) {
      headers.delete("connection");
      headers.delete("keep-alive");
      headers.delete("transfer-encoding");
    }
    const init = { status: res.status, statusText: res.statusText, headers };
    const body = res.body;
    if (body === null) {
      dec(k);
      return new Response(null, init);
    }
    const declared = rh.get("content-length");
    if (declared !== null && Number(declared) <= SMALL_BODY) {
      try {
        return new Response(await res.arrayBuffer(), init);
      } finally {
        dec(k);
      }
    }
    let finished = false;
    const finish = () => {
      if (!finished) {
        finished = true;
        dec(k);
      }
    };
    const reader = body.getReader();
    const stream = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            finish();
            ctrl.close();
          } else ctrl.enqueue(value);
        } catch (e) {
          finish();
          ctrl.error(e);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(stream, init);
  }

  async function handle(req: Request, srv: Server<WsData>): Promise<Response | undefined> {
    const hostHeader = req.headers.get("host");
    const host = normaliseHost(hostHeader);
    const url = req.url;
    const pathAndQuery = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const target = lookup(current, host, pathAndQuery);
    if (!target) {
      const q = pathAndQuery.indexOf("?");
      return notRoutedPage(host, q < 0 ? pathAndQuery : pathAndQuery.slice(0, q));
    }
    const ups = candidates(target);
    if (ups.length === 0) return badGatewayPage(target.service, "It has no healthy replica.");
    const headers = forwardHeaders(req, srv, hostHeader);

    if ((req.headers.get("upgrade") ?? "").toLowerCase() === "websocket") {
      const protocols = (req.headers.get("sec-websocket-protocol") ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      for (const u of ups) {
        const k = key(u);
        const data = await openUpstream(`ws://${k}${pathAndQuery}`, headers, protocols, k);
        if (!data) {
          downUntil.set(k, Date.now() + downMs);
          continue;
        }
        if (upgradeClient(srv, req, data)) return undefined;
        data.upstream.close(1011, "client upgrade failed");
        return new Response("The WebSocket upgrade failed.\n", { status: 400 });
      }
      return badGatewayPage(target.service, "No replica accepted the WebSocket connection.");
    }

    const hasBody = req.body !== null;
    let reason = "";
    for (const u of ups) {
      const k = key(u);
      inc(k);
      if (!hasBody) {
        // Most traffic: no request body, through ops's own keep-alive client (upstream.ts).
        try {
          const res = await client.request(u.host, u.port, req.method, pathAndQuery, headers);
          if (downUntil.size > 0) downUntil.delete(k);
          const init = { status: res.status, statusText: res.statusText, headers: res.headers };
          if (res.body instanceof ReadableStream) {
            void res.done.then(() => dec(k));
            return new Response(res.body, init);
          }
          dec(k);
          return new Response(res.body, init);
        } catch (e) {
          dec(k);
          downUntil.set(k, Date.now() + downMs);
          reason = (e as Error).message;
          opts.log?.warn("ingress upstream failed", { service: target.key, upstream: k, err: reason });
          continue;
        }
      }
      let res: Response;
      try {
        res = await fetch(`http://${k}${pathAndQuery}`, {
          method: req.method,
          headers,
          body: req.body,
          redirect: "manual",
          decompress: false,
          signal: req.signal,
        } as RequestInit);
      } catch (e) {
        dec(k);
        if (req.signal.aborted) return new Response(null, { status: 499 });
        downUntil.set(k, Date.now() + downMs);
        reason = (e as Error).message;
        opts.log?.warn("ingress upstream failed", { service: target.key, upstream: k, err: reason });
        // A body already (partly) sent cannot be replayed to another replica.
        if (hasBody) break;
        continue;
      }
      if (downUntil.size > 0) downUntil.delete(k);
      return relay(res, k);
    }
    return badGatewayPage(target.service, reason ? `The last replica tried failed: ${reason}` : "No replica answered.");
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
    inflight: (u) => counts.get(key(u)) ?? 0,
    websockets: (u) => wsCounts.get(key(u)) ?? 0,
    async drained(upstreams, timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        if (upstreams.every((u) => (counts.get(key(u)) ?? 0) === 0)) return true;
        if (Date.now() >= end) return false;
        await Bun.sleep(20);
      }
    },
    listen(host, port) {
      if (server) throw new Error("the ingress is already listening");
      server = Bun.serve<WsData>({
        hostname: host,
        port,
        idleTimeout: 120,
        // Bodies stream through; no limit of the ingress's own (the app sets its own).
        maxRequestBodySize: Number.MAX_SAFE_INTEGER,
        fetch: handle,
        websocket: websocketHandlers(sockets, {
          open: (k) => wsCounts.set(k, (wsCounts.get(k) ?? 0) + 1),
          close: (k) => {
            const n = (wsCounts.get(k) ?? 1) - 1;
            if (n <= 0) wsCounts.delete(k);
            else wsCounts.set(k, n);
          },
        }),
        error(e) {
          opts.log?.error("ingress request failed", { err: e });
          return new Response("The ingress failed on this request.\n", { status: 500 });
        },
      });
      const h = host.includes(":") ? `[${host}]` : host;
      address = { host, port: server.port as number, url: `http://${h}:${server.port}` };
      return address;
    },
    get address() {
      return address;
    },
    async stop(graceMs) {
      const s = server;
      if (!s) return;
      server = null;
      address = null;
      const stopped = s.stop(false);
      void stopped.then(() => client.close());
      for (const ws of sockets) ws.close(1001, "ops is shutting down");
      const timedOut = await Promise.race([stopped.then(() => false), Bun.sleep(graceMs).then(() => true)]);
      if (timedOut) {
        opts.log?.warn("ingress requests still in flight at shutdown; closing them", { grace_ms: graceMs });
        await s.stop(true);
      }
    },
  };
  return ingress;
}
