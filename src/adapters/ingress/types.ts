/**
 * The state the ingress's parts share: a client connection, an exchange (one request and its
 * response), a connection to a replica and the per-replica pool, and the context holding them.
 * listener.ts owns clients, pool.ts replica connections, exchange.ts what flows between them.
 */
import type { ServiceStats } from "./service-stats";
import type { Logger } from "../../core/log";
import type { ChunkedDecoder } from "./chunked";
import type { RequestHead } from "./request-parser";
import type { ResponseHead } from "./response-parser";
import type { Out } from "./serializer";
import type { CompiledTable, Target, TargetUpstream } from "./table";
import type { TrustedProxies } from "./forwarded";
import type { FrameTracker } from "./ws-frames";
import type { Page } from "./pages";

/** What a client connection is waiting for, and so which deadline holds. */
export const enum Wait {
  /** Nothing from the client is due (its request is with the replica, or a tunnel). */
  None,
  /** Between requests on a kept-alive connection: the idle timeout. */
  Idle,
  /** A request head: the head deadline, set when it started, never extended. */
  Head,
  /** The rest of a request body: the body timeout, renewed by every byte. */
  Body,
}

/**
 * What the ingress needs of a client socket: a Bun socket on the plain listener, a node:tls
 * socket behind an adapter on the TLS listener (tls.ts). `write` returns the bytes taken.
 */
export interface ClientSocket {
  data: Client;
  readonly remoteAddress: string;
  write(bytes: Uint8Array): number;
  end(): void;
  pause(): void;
  resume(): void;
  terminate(): void;
  setNoDelay(on?: boolean): unknown;
}

export interface Client {
  socket: ClientSocket;
  ip: string;
  /** The scheme the client used: `http` on the plain listener, `https` on the TLS one. */
  proto: "http" | "https";
  /** The peer is in OPS_TRUSTED_PROXIES. */
  trusted: boolean;
  /** Bytes received and not consumed yet: a head being read, body bytes waiting for their replica, requests queued behind the current one. */
  buf: Buffer | null;
  /** `buf` is the data callback's own buffer (copied before the callback returns if anything is left). */
  borrowed: boolean;
  ex: Exchange | null;
  tunnel: Conn | null;
  /** Bytes the socket did not take yet (the replica is paused meanwhile). */
  out: Buffer | null;
  /** Close once the current response is out. */
  closeAfter: boolean;
  /** The client half-closed: the requests it sent whole are answered, then the connection closes. */
  peerEnded: boolean;
  ended: boolean;
  closed: boolean;
  paused: boolean;
  /** The Host of the connection's last request (a connection mostly repeats it), as sent and as the table keys it. */
  lastHost: string | null;
  hostKey: string;
  /** The forwarding fields made for `lastHost` (null: not yet). */
  fields: string | null;
  wait: Wait;
  /** When the current wait ends (ms since the epoch). */
  deadline: number;
  /**
   * While `out` holds bytes: when the client must have taken some (OPS_INGRESS_SEND_TIMEOUT after
   * the last progress); 0 until the sweep sets it.
   */
  sendDeadline: number;
}

export interface Exchange {
  client: Client;
  req: RequestHead;
  /** The head written upstream: a string when ASCII (written as is, the cheapest), else its bytes. */
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
  reqChunks: ChunkedDecoder | null;
  reqDone: boolean;
  res: ResponseHead | null;
  resOut: Out;
  resLeft: number;
  resChunks: ChunkedDecoder | null;
  /** Response bytes received from the replica. */
  received: number;
  /** Response bytes written to the client (after which no other answer can be given). */
  answered: boolean;
  reused: boolean;
  replayed: boolean;
  finished: boolean;
  reason: string;
  /** When its head arrived (performance.now()), for the service's latency histogram. */
  startedAt: number;
}

/**
 * What the ingress keeps per replica (`host:port`): its idle connections, how many are open, the
 * requests in flight and the tunnels. Forgotten once all four are nothing (replicas come and go);
 * a compiled table's upstream keeps a reference to it, checked with `gone`.
 */
export interface Replica {
  key: string;
  idle: Conn[];
  open: number;
  inflight: number;
  websockets: number;
  gone: boolean;
}

export interface Conn {
  socket: import("bun").Socket<Conn>;
  key: string;
  replica: Replica;
  ex: Exchange | null;
  tunnel: Client | null;
  /** A response head split across reads. */
  buf: Buffer | null;
  out: Buffer | null;
  /** Only a complete exchange with nothing left over keeps this true. */
  reusable: boolean;
  closed: boolean;
  paused: boolean;
  err: string;
  /** In a tunnel: the WebSocket frames going to the client. */
  frames: FrameTracker | null;
  /** The ingress's turn (`Ctx.turn`) in which the current request was written; -1: none to check. */
  sentTurn: number;
}

/** Counters of what the ingress did and refused, for `Ingress.metrics()`. */
export interface IngressMetrics {
  /** Client connections open now, and accepted since start. */
  connections: number;
  accepted: number;
  /** Connections refused at accept: over OPS_INGRESS_MAX_CONN_PER_IP, over the total cap. */
  refusedPerAddress: number;
  refusedTotal: number;
  /** Requests forwarded to a replica. */
  requests: number;
  /** Requests refused as malformed or ambiguous (4xx page, connection closed). */
  badRequests: number;
  /** Heads not whole within OPS_INGRESS_HEADER_TIMEOUT (408). */
  headTimeouts: number;
  /** Kept-alive or fresh connections closed after the idle timeout with nothing sent. */
  idleTimeouts: number;
  /** Request bodies that stalled past the body timeout. */
  bodyTimeouts: number;
  /** Clients cut because they took no byte of their answer for OPS_INGRESS_SEND_TIMEOUT. */
  sendTimeouts: number;
  /** Requests from which an ops session cookie or ops credential was removed. */
  credentialsStripped: number;
  /** Replica answers that could not be relayed or replicas that failed a request. */
  upstreamFailures: number;
}

export interface Settings {
  downMs: number;
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  bodyTimeoutMs: number;
  sendTimeoutMs: number;
  maxConnPerIp: number;
  maxConnections: number;
  trusted: TrustedProxies;
  /** The scheme clients used (`http` on this listener). */
  proto: string;
}

/**
 * The exchange's and the relay's entry points (and the client write the pool needs), given at
 * construction (ingress.ts) so the listener and the pool call them without importing them: the
 * four files form no import circle (docs/decisions/0419-ingress-entry-points-injected.md).
 */
export interface Handlers {
  startExchange(ctx: Ctx, c: Client, req: RequestHead, forward: string | Buffer): void;
  clientBytes(ctx: Ctx, c: Client, bytes: Buffer): void;
  clientClosed(ctx: Ctx, c: Client): void;
  fail(ctx: Ctx, ex: Exchange, page: Page): void;
  badBody(ctx: Ctx, ex: Exchange, e: unknown): void;
  upstreamBytes(ctx: Ctx, u: Conn, bytes: Buffer): void;
  upstreamFault(ctx: Ctx, u: Conn, e: Error): void;
  upstreamClosed(ctx: Ctx, u: Conn): void;
  upstreamDrained(u: Conn): void;
  writeClient(c: Client, bytes: Uint8Array | string): void;
}

export interface Ctx {
  log: Logger | undefined;
  /** Per service: requests by status class, latency, bytes, upstream errors (service-stats.ts). */
  stats: ServiceStats;
  /** Entry points of exchange.ts, relay.ts and listener.ts (see Handlers). */
  on: Handlers;
  settings: Settings;
  table: CompiledTable;
  replicas: Map<string, Replica>;
  downUntil: Map<string, number>;
  clients: Set<Client>;
  perAddress: Map<string, number>;
  /** Exchanges not settled yet (shutdown waits for them): a count, kept by startExchange and settle. */
  exchanges: number;
  metrics: IngressMetrics;
  stopping: boolean;
  /**
   * The event loop's turn, counted up by an immediate after the I/O callbacks of a turn ran: bytes
   * from a replica in the turn its request was written were on their way before it (relay.ts).
   */
  turn: number;
  /** An immediate that ends the turn is scheduled. */
  turnPending: boolean;
  /** Requests written now are not checked that way (written from a timer, not an I/O callback). */
  unarmed: boolean;
  /**
   * Requests the plain listener answers itself before routing (tls.ts): ACME HTTP-01 challenges,
   * and the 308 to HTTPS for hosts with `redirect_http`. Null: none.
   */
  plain: ((c: Client, req: RequestHead) => Page | null) | null;
}
