/**
 * ops's ingress: a second HTTP listener (`OPS_INGRESS_LISTEN`) that routes by Host and path prefix
 * (table.ts) to the replicas of a service, round-robin over the healthy ones. It is an HTTP/1.1
 * proxy on raw sockets (`Bun.listen` for clients, `Bun.connect` for replicas) that forwards one
 * well-framed request for each request it accepted (DESIGN §6, Ingress): every head is parsed
 * strictly and written anew (request-parser.ts, response-parser.ts, serializer.ts), bodies follow
 * the framing ops decided (chunked.ts), replica connections are pooled only after a complete
 * exchange (pool.ts), the client side enforces deadlines and connection caps (listener.ts),
 * forwarding fields come from the peer (forwarded.ts) and ops's own credentials are removed
 * (credentials.ts). exchange.ts moves the bytes between the two sides. Nothing is read whole; a
 * side that does not take bytes pauses the other.
 *
 * Switching: `setRoutes` / `setService` / `removeService` compile a new table and swap one
 * reference. An unknown host is a 404 page; a service none of whose replicas answers, a 502 page
 * naming it; a request the ingress will not relay, a 4xx page, and the connection is closed.
 */
import { serviceStats, type ServiceStat } from "./service-stats";
import type { TCPSocketListener } from "bun";
import type { Logger } from "../../core/log";
import { compileTable, serviceKey, type RouteConflict, type ServiceEntry, type ServiceRef } from "./table";
import { GOING_AWAY } from "./ws-frames";
import { trustedProxies } from "./forwarded";
import { endClient, listen, writeClient } from "./listener";
import { upstreamBytes, upstreamClosed, upstreamDrained, upstreamFault } from "./relay";
import { closeIdle } from "./pool";
import { badBody, clientBytes, clientClosed, fail, startExchange } from "./exchange";
import { badRequestPage } from "./pages";
import { CertStore, HostSet, listenTls, plainAnswers, type PlainAnswerState, type TlsListener } from "./tls";
import type { Client, Ctx, IngressMetrics } from "./types";

export type { IngressMetrics } from "./types";

export interface IngressOptions {
  log?: Logger;
  /** How long a replica that refused a connection is skipped (default 2 s). */
  downMs?: number;
  /** A request head must be whole within this of its first byte (default 10 s: OPS_INGRESS_HEADER_TIMEOUT). */
  headerTimeoutMs?: number;
  /** A kept-alive connection with no request under way closes after this (default 75 s). */
  idleTimeoutMs?: number;
  /** A request body that sends nothing for this ends its exchange (default 60 s). */
  bodyTimeoutMs?: number;
  /** A client that takes no byte of its answer for this is cut (default 60 s: OPS_INGRESS_SEND_TIMEOUT). */
  sendTimeoutMs?: number;
  /** Connections one client address may hold open (default 256: OPS_INGRESS_MAX_CONN_PER_IP). */
  maxConnPerIp?: number;
  /** Client connections open at once (default 10000: OPS_INGRESS_MAX_CONNECTIONS). */
  maxConnections?: number;
  /** CIDRs of proxies whose forwarding fields are believed (default none: OPS_TRUSTED_PROXIES). */
  trustedProxies?: readonly string[];
  /** Listen with SO_REUSEPORT: several ingress processes share the listeners (the data plane's workers). */
  reusePort?: boolean;
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
  /** Routes two services claim, and which one (if any) the table gives them to. */
  conflicts(): readonly RouteConflict[];
  /** HTTP requests in flight to an upstream (until their response's last byte). */
  inflight(u: { host: string; port: number }): number;
  /** Open WebSocket connections through the ingress to an upstream. */
  websockets(u: { host: string; port: number }): number;
  /** Exchanges not finished (any upstream): 0 once every client's request is answered or gone. */
  exchanges(): number;
  /** What the ingress counted: connections, requests, and every limit it enforced. */
  metrics(): Readonly<IngressMetrics>;
  /** Per service, cumulative since this ingress started: requests by status class, latency, bytes, upstream errors. */
  serviceStats(): ServiceStat[];
  /** Resolves true once no HTTP request is in flight to any of `upstreams`, false after `timeoutMs`. */
  drained(upstreams: ReadonlyArray<{ host: string; port: number }>, timeoutMs: number): Promise<boolean>;
  /** Start listening (throws when the address cannot be bound). */
  listen(host: string, port: number): IngressAddress;
  readonly address: IngressAddress | null;
  /** Start the TLS listener (OPS_INGRESS_TLS_LISTEN); rejects when the address cannot be bound. */
  listenTls(host: string, port: number): Promise<IngressAddress>;
  readonly tlsAddress: IngressAddress | null;
  /** The certificates the TLS listener serves, by host name; changes apply from the next handshake. */
  readonly certificates: CertStore;
  /** Where the plain listener finds ACME HTTP-01 key authorizations (null: none answered). */
  setChallenges(lookup: ((token: string) => string | null) | null): void;
  /** An ingress in another process (the data plane's, decision 0600) is handed every change of them; resolves once it has them. */
  challengesChanged?(tokens: Array<[string, string]>): Promise<void>;
  /**
   * Stop taking connections, let requests in flight finish within `graceMs` (then cut them),
   * close WebSocket tunnels.
   */
  stop(graceMs: number): Promise<void>;
}

const key = (u: { host: string; port: number }) => `${u.host}:${u.port}`;

export function createIngress(opts: IngressOptions = {}): Ingress {
  const ctx: Ctx = {
    log: opts.log,
    // Injected, not imported by the listener and the pool: docs/decisions/0419-ingress-entry-points-injected.md.
    on: { startExchange, clientBytes, clientClosed, fail, badBody, upstreamBytes, upstreamFault, upstreamClosed, upstreamDrained, writeClient },
    settings: {
      downMs: opts.downMs ?? 2000,
      headerTimeoutMs: opts.headerTimeoutMs ?? 10_000,
      idleTimeoutMs: opts.idleTimeoutMs ?? 75_000,
      bodyTimeoutMs: opts.bodyTimeoutMs ?? 60_000,
      sendTimeoutMs: opts.sendTimeoutMs ?? 60_000,
      maxConnPerIp: opts.maxConnPerIp ?? 256,
      maxConnections: opts.maxConnections ?? 10_000,
      trusted: trustedProxies(opts.trustedProxies ?? []),
      proto: "http",
    },
    table: compileTable([]),
    replicas: new Map(),
    downUntil: new Map(),
    clients: new Set(),
    perAddress: new Map(),
    exchanges: 0,
    stats: serviceStats(),
    metrics: { connections: 0, accepted: 0, refusedPerAddress: 0, refusedTotal: 0, requests: 0, badRequests: 0, headTimeouts: 0, idleTimeouts: 0, bodyTimeouts: 0, sendTimeouts: 0, credentialsStripped: 0, upstreamFailures: 0 },
    stopping: false,
    turn: 0,
    turnPending: false,
    unarmed: false,
    plain: null,
  };
  const certificates = new CertStore();
  const answers: PlainAnswerState = { challenge: null, redirects: new HostSet([]), httpsPort: null, certs: certificates };
  ctx.plain = plainAnswers(answers);
  let tlsListener: TlsListener | null = null;
  let tlsAddress: IngressAddress | null = null;
  let entries = new Map<string, ServiceEntry>();
  let listener: TCPSocketListener<Client> | null = null;
  let stopSweep: (() => void) | null = null;
  let address: IngressAddress | null = null;

  const swap = (next: Map<string, ServiceEntry>) => {
    entries = next;
    ctx.table = compileTable([...next.values()]);
    answers.redirects = new HostSet([...next.values()].flatMap((e) => e.routes.filter((r) => r.redirectHttp).flatMap((r) => r.hosts)));
    for (const c of ctx.table.conflicts) ctx.log?.warn("ingress route claimed twice", { host: c.host, path_prefix: c.pathPrefix, kept: c.kept, ignored: c.ignored });
  };

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
    table: () => ctx.table.entries,
    conflicts: () => ctx.table.conflicts,
    inflight: (u) => ctx.replicas.get(key(u))?.inflight ?? 0,
    websockets: (u) => ctx.replicas.get(key(u))?.websockets ?? 0,
    exchanges: () => ctx.exchanges,
    metrics: () => ({ ...ctx.metrics }),
    serviceStats: () => ctx.stats.snapshot(),
    async drained(upstreams, timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        if (upstreams.every((u) => (ctx.replicas.get(key(u))?.inflight ?? 0) === 0)) return true;
        if (Date.now() >= end) return false;
        await Bun.sleep(20);
      }
    },
    listen(host, port) {
      if (listener) throw new Error("the ingress is already listening");
      ctx.stopping = false;
      const l = listen(ctx, host, port, opts.reusePort === true);
      listener = l.listener;
      stopSweep = l.stopSweep;
      const h = host.includes(":") ? `[${host}]` : host;
      address = { host, port: listener.port, url: `http://${h}:${listener.port}` };
      return address;
    },
    get address() {
      return address;
    },
    async listenTls(host, port) {
      if (tlsListener) throw new Error("the ingress's TLS listener is already listening");
      ctx.stopping = false;
      tlsListener = await listenTls(ctx, host, port, certificates, opts.reusePort === true);
      answers.httpsPort = tlsListener.port;
      const h = host.includes(":") ? `[${host}]` : host;
      tlsAddress = { host, port: tlsListener.port, url: `https://${h}:${tlsListener.port}` };
      return tlsAddress;
    },
    get tlsAddress() {
      return tlsAddress;
    },
    certificates,
    setChallenges(lookup) {
      answers.challenge = lookup;
    },
    async stop(graceMs) {
      const l = listener;
      const t = tlsListener;
      if (!l && !t) return;
      listener = null;
      address = null;
      tlsListener = null;
      tlsAddress = null;
      answers.httpsPort = null;
      ctx.stopping = true;
      l?.stop(false);
      t?.stop();
      for (const c of ctx.clients) {
        if (c.tunnel) {
          // A WebSocket client is told the server is going away, between two frames.
          if (c.tunnel.frames?.atBoundary) writeClient(c, GOING_AWAY);
          c.tunnel.socket.end();
          endClient(c);
        } else if (c.ex === null) endClient(c);
        else if (c.peerEnded && !c.ex.answered) {
          // Decision 0248: a client that half-closed before its answer started may have left for
          // good (the two look alike); shutdown does not wait on a replica for it.
          fail(ctx, c.ex, badRequestPage(503, "the server is shutting down"));
        } else c.closeAfter = true;
      }
      const end = Date.now() + graceMs;
      while (ctx.exchanges > 0 && Date.now() < end) await Bun.sleep(10);
      if (ctx.exchanges > 0) ctx.log?.warn("ingress requests still in flight at shutdown; closing them", { grace_ms: graceMs, requests: ctx.exchanges });
      for (const c of ctx.clients) c.socket.terminate();
      closeIdle(ctx);
      stopSweep?.();
      stopSweep = null;
    },
  };
  return ingress;
}
