/**
 * HTTPS on the ingress (`OPS_INGRESS_TLS_LISTEN`): a node:tls server whose SNI callback picks the
 * certificate of the name the client asked for from a `CertStore`, and whose decrypted
 * connections go through the very same client handlers as the plain listener (listener.ts), so a
 * request over TLS is read, checked, routed and relayed by the same code. TLS 1.2 and 1.3 only,
 * ECDHE with AEAD ciphers only. A certificate set or replaced in the store serves the next
 * handshake; connections already open keep theirs, and the listener never restarts.
 *
 * The plain listener answers two things itself (`plainAnswers`): `/.well-known/acme-challenge/…`
 * from the ACME client's pending challenges, and for a host whose domain has `redirect_http`
 * while the TLS listener runs, a 308 to the same path and query over HTTPS.
 */
import tls from "node:tls";
import type { Client, ClientSocket, Ctx } from "./types";
import type { RequestHead } from "./request-parser";
import type { Page } from "./pages";
import { clientHandlers, type ClientHandlers } from "./listener";
import { normaliseHost } from "./table";

// Decision 0340: node:tls with an SNI callback, not Bun.listen's single-certificate TLS.
/** TLS 1.2 suites: forward secret, AEAD (Mozilla's "intermediate" list); TLS 1.3 suites are all modern. */
export const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

export interface PemPair {
  cert: string;
  key: string;
}

/**
 * The certificates ops holds, by host name (exact names and `*.` wildcards, which match one
 * label as TLS clients expect). Replacing a name's certificate is one map write: the next
 * handshake for it gets the new one.
 */
export class CertStore {
  private readonly exact = new Map<string, tls.SecureContext>();
  private readonly pems = new Map<string, PemPair>();

  /** Serve `pair` for `name` from the next handshake on (throws when the PEM cannot be loaded). */
  set(name: string, pair: PemPair): void {
    const host = name.toLowerCase();
    const context = tls.createSecureContext({ cert: pair.cert, key: pair.key, minVersion: "TLSv1.2", ciphers: TLS12_CIPHERS });
    this.exact.set(host, context);
    this.pems.set(host, pair);
  }

  delete(name: string): void {
    this.exact.delete(name.toLowerCase());
    this.pems.delete(name.toLowerCase());
  }

  names(): string[] {
    return [...this.exact.keys()].sort();
  }

  pem(name: string): PemPair | null {
    return this.pems.get(name.toLowerCase()) ?? null;
  }

  /** The context for a client's server name: the exact name, else the wildcard one label up. */
  context(servername: string): tls.SecureContext | null {
    const host = normaliseHost(servername);
    const hit = this.exact.get(host);
    if (hit) return hit;
    const dot = host.indexOf(".");
    return dot > 0 ? (this.exact.get(`*${host.slice(dot)}`) ?? null) : null;
  }
}

/** Exact hosts and `*.` wildcards (any depth, as the route table matches them). */
export class HostSet {
  private readonly exact = new Set<string>();
  private readonly suffixes: string[] = [];

  constructor(hosts: Iterable<string>) {
    for (const raw of hosts) {
      const h = raw.toLowerCase();
      if (h.startsWith("*.")) this.suffixes.push(h.slice(1));
      else this.exact.add(h);
    }
  }

  has(host: string): boolean {
    if (this.exact.has(host)) return true;
    for (const s of this.suffixes) if (host.length > s.length && host.endsWith(s)) return true;
    return false;
  }
}

const CHALLENGE_PREFIX = "/.well-known/acme-challenge/";

export interface PlainAnswerState {
  /** The key authorization for an HTTP-01 token, or null. */
  challenge: ((token: string) => string | null) | null;
  /** Hosts whose domain redirects plain HTTP to HTTPS. */
  redirects: HostSet;
  /** The TLS listener's port while it runs (null: no redirect is given). */
  httpsPort: number | null;
  /** The certificates held: a host without one is not redirected yet (its HTTPS would fail). */
  certs: CertStore;
}

/** What the plain listener answers itself (ctx.plain). */
export function plainAnswers(state: PlainAnswerState): (c: Client, req: RequestHead) => Page | null {
  return (_c, req) => {
    if (state.challenge !== null && req.path.startsWith(CHALLENGE_PREFIX) && (req.method === "GET" || req.method === "HEAD")) {
      const token = req.path.slice(CHALLENGE_PREFIX.length).split("?")[0]!;
      const answer = /^[A-Za-z0-9_-]{1,256}$/.test(token) ? state.challenge(token) : null;
      if (answer !== null) return { status: 200, title: "OK", html: answer, text: true };
      if (token !== "") return { status: 404, title: "Not Found", html: "no such challenge\n", text: true };
    }
    if (state.httpsPort === null) return null;
    const host = normaliseHost(req.host);
    // Decision 0341: only a host with a certificate is redirected.
    if (host === "" || !state.redirects.has(host) || state.certs.context(host) === null) return null;
    const port = state.httpsPort === 443 ? "" : `:${state.httpsPort}`;
    const path = req.target === "*" ? "/" : req.path;
    return { status: 308, title: "Permanent Redirect", html: "", location: `https://${host}${port}${path}` };
  };
}

/** A node:tls socket as the client handlers see it. */
class TlsClientSocket implements ClientSocket {
  data!: Client;
  readonly remoteAddress: string;

  constructor(private readonly s: tls.TLSSocket) {
    this.remoteAddress = s.remoteAddress ?? "";
  }

  write(bytes: Uint8Array): number {
    // Past the stream's high-water mark nothing is taken: the caller keeps the bytes and pauses
    // the replica until `drain`, as with a Bun socket.
    if (this.s.writableNeedDrain || this.s.destroyed) return 0;
    this.s.write(bytes);
    return bytes.length;
  }
  end(): void {
    this.s.end();
  }
  pause(): void {
    this.s.pause();
  }
  resume(): void {
    this.s.resume();
  }
  terminate(): void {
    this.s.destroy();
  }
  setNoDelay(on = true): unknown {
    return this.s.setNoDelay(on);
  }
}

function attach(h: ClientHandlers, s: tls.TLSSocket): void {
  const sock = new TlsClientSocket(s);
  h.open(sock);
  if (sock.data.closed && !sock.data.ex) {
    // Refused at accept (connection caps): the 503 is written, nothing more is read.
    s.on("error", () => {});
    return;
  }
  s.on("data", (bytes: Buffer) => h.data(sock, bytes));
  s.on("drain", () => h.drain(sock));
  s.on("end", () => h.end(sock));
  s.on("error", (err: Error) => h.error(sock, err));
  s.on("close", () => h.close(sock));
}

export interface TlsListener {
  port: number;
  stop(): void;
}

/** Listen for TLS on host:port with certificates from `certs`; resolves once bound. */
export function listenTls(ctx: Ctx, host: string, port: number, certs: CertStore, reusePort = false): Promise<TlsListener> {
  const h = clientHandlers(ctx, "https");
  const server = tls.createServer(
    {
      allowHalfOpen: true,
      minVersion: "TLSv1.2",
      ciphers: TLS12_CIPHERS,
      handshakeTimeout: ctx.settings.headerTimeoutMs,
      SNICallback(servername, cb) {
        const context = certs.context(servername);
        if (context) cb(null, context);
        else cb(new Error(`no certificate for ${servername}`), undefined);
      },
    },
    (s) => attach(h, s),
  );
  server.on("tlsClientError", (err) => ctx.log?.debug?.("ingress TLS handshake failed", { err: err.message }));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, reusePort }, () => {
      server.off("error", reject);
      const addr = server.address();
      resolve({ port: typeof addr === "object" && addr ? addr.port : port, stop: () => server.close() });
    });
  });
}
