/**
 * The ingress's HTTP/1.1 client for requests without a body: a pool of keep-alive connections per
 * upstream over `Bun.connect`, the request head written in one piece, the response head parsed
 * here. `fetch` builds a Request, a Headers and a Response per call and keeps its own pool
 * behind a lock; for the small answers most traffic is, that machinery was most of the
 * ingress's cost (bench/ingress.bench.ts). Requests with a body still go through `fetch`, which
 * streams them full duplex.
 *
 * Response framing (RFC 9112 §6.3): none for HEAD, 1xx, 204 and 304; `Transfer-Encoding:
 * chunked` decoded and streamed; `Content-Length` read whole up to `smallBody` bytes, streamed
 * above; otherwise until the upstream closes (the connection is then not reused). A streamed body
 * pauses the socket while the client is not reading. Interim 1xx answers are skipped. A
 * connection is reused only after a complete response that did not say `Connection: close`.
 *
 * Failures: a connection that cannot be opened rejects with the connect error (the ingress marks
 * the replica down and tries the next); an idle connection the upstream closed just as it was
 * reused (nothing received) is retried once on a fresh one; a close in the middle of a response
 * rejects before the head and errors the body stream after it. A client that goes away is not
 * watched while the head is awaited (reading `Request.signal` costs a tenth of a proxied request):
 * the answer is read and dropped, and a streamed body's cancel closes the upstream connection.
 */
import type { Socket } from "bun";

export interface UpstreamResponse {
  status: number;
  statusText: string;
  /** Header fields in order, names lower-case, the upstream's connection headers left out. */
  headers: [string, string][];
  /** The whole body (small, fixed length), a stream, or null (no body). */
  body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;
  /** Resolves when the body was read to its end or failed (the request is no longer in flight). */
  done: Promise<void>;
}

export interface UpstreamPoolOptions {
  /** Bodies with a declared length up to this are read whole (default 64 KiB). */
  smallBody?: number;
  /** Idle connections kept per upstream (default 128). */
  maxIdle?: number;
}

/** Response headers that concern the upstream's connection only; not relayed. */
const CONNECTION_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection"]);
const CRLF2 = Buffer.from("\r\n\r\n");
const MAX_HEAD = 64 * 1024;

class UpstreamProtocolError extends Error {}
/** The upstream closed the connection before any byte of a response: safe to replay a bodyless request. */
class ClosedBeforeResponse extends Error {}

interface Exchange {
  method: string;
  resolve(r: UpstreamResponse): void;
  reject(e: Error): void;
  /** Set once the response head was handed over. */
  started: boolean;
  /** Bytes of the response seen (a reused connection that saw none may be retried). */
  received: number;
  controller: ReadableStreamDefaultController<Uint8Array> | null;
  body: Uint8Array[] | null;
  bodyBytes: number;
  finish(err?: Error): void;
}

type Framing = { kind: "none" } | { kind: "length"; left: number; stream: boolean } | { kind: "chunked" } | { kind: "close" };

interface Conn {
  socket: Socket<Conn>;
  buf: Buffer | null;
  ex: Exchange | null;
  framing: Framing | null;
  /** Chunked decoder: bytes left in the current chunk (-1: expecting a size line; -2: the CRLF after a chunk; -3: trailers). */
  chunkLeft: number;
  reusable: boolean;
  used: number;
  closed: boolean;
  pool: Pool;
}

interface Pool {
  key: string;
  host: string;
  port: number;
  idle: Conn[];
}

function parseHead(head: string): { status: number; statusText: string; headers: [string, string][]; lengths: string[]; chunked: boolean; close: boolean; http10: boolean } {
  const lines = head.split("\r\n");
  const first = lines[0];
  const status = first.length >= 12 && first.startsWith("HTTP/1.") && first[8] === " " && (first.length === 12 || first[12] === " ") ? Number(first.slice(9, 12)) : NaN;
  if (!(status >= 100 && status <= 999) || (first[7] !== "0" && first[7] !== "1")) throw new UpstreamProtocolError(`bad status line from the replica: ${JSON.stringify(first.slice(0, 80))}`);
  const headers: [string, string][] = [];
  const lengths: string[] = [];
  let chunked = false;
  let close = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new UpstreamProtocolError("a malformed header line from the replica");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-length") lengths.push(value);
    else if (name === "transfer-encoding") chunked = value.toLowerCase().split(",").some((v) => v.trim() === "chunked");
    else if (name === "connection") close = value.toLowerCase().split(",").some((v) => v.trim() === "close");
    if (CONNECTION_HEADERS.has(name)) continue;
    headers.push([name, value]);
  }
  return { status, statusText: first.slice(13), headers, lengths, chunked, close, http10: first[7] === "0" };
}

export interface UpstreamClient {
  /** Send a request without a body to `host:port` and read its response head. */
  request(host: string, port: number, method: string, target: string, headers: Record<string, string>): Promise<UpstreamResponse>;
  /** Open connections (idle or busy) to `host:port`. */
  connections(host: string, port: number): number;
  /** Close every idle connection. */
  close(): void;
}

export function createUpstreamClient(opts: UpstreamPoolOptions = {}): UpstreamClient {
  const smallBody = opts.smallBody ?? 64 * 1024;
  const maxIdle = opts.maxIdle ?? 128;
  const pools = new Map<string, Pool>();
  const open = new Map<string, number>();

  const poolOf = (host: string, port: number): Pool => {
    const key = `${host}:${port}`;
    let p = pools.get(key);
    if (!p) {
      p = { key, host, port, idle: [] };
      pools.set(key, p);
    }
    return p;
  };

  function release(c: Conn): void {
    c.ex = null;
    c.framing = null;
    if (!c.reusable || c.closed || c.pool.idle.length >= maxIdle) {
      c.socket.end();
      return;
    }
    if (c.buf && c.buf.length > 0) {
      // Bytes after a complete response that nobody asked for: the connection is out of step.
      c.socket.end();
      return;
    }
    c.buf = null;
    // A streamed body may have left the socket paused for its slow reader.
    c.socket.resume();
    c.pool.idle.push(c);
  }

  function fail(c: Conn, err: Error): void {
    c.reusable = false;
    const ex = c.ex;
    c.ex = null;
    if (!c.closed) c.socket.end();
    if (ex) ex.finish(err);
  }

  /** Hand body bytes to the exchange; returns false when the socket should pause. */
  function deliver(ex: Exchange, bytes: Uint8Array): boolean {
    if (bytes.length === 0) return true;
    if (ex.body) {
      ex.body.push(bytes);
      ex.bodyBytes += bytes.length;
      return true;
    }
    ex.controller!.enqueue(bytes);
    return (ex.controller!.desiredSize ?? 1) > 0;
  }

  function complete(c: Conn): void {
    const ex = c.ex!;
    c.ex = null;
    release(c);
    ex.finish();
  }

  /** Consume what `c.buf` holds for the current exchange. */
  function pump(c: Conn): void {
    for (;;) {
      const ex = c.ex;
      if (!ex) return;
      if (!c.framing) {
        if (!c.buf) return;
        const end = c.buf.indexOf(CRLF2);
        if (end < 0) {
          if (c.buf.length > MAX_HEAD) fail(c, new UpstreamProtocolError("the replica's response head is too large"));
          return;
        }
        let head;
        try {
          head = parseHead(c.buf.toString("latin1", 0, end));
        } catch (e) {
          fail(c, e as Error);
          return;
        }
        c.buf = end + 4 < c.buf.length ? c.buf.subarray(end + 4) : null;
        if (head.status >= 100 && head.status < 200) continue; // an interim answer; the real one follows
        c.reusable = !head.close && !head.http10;
        let framing: Framing;
        if (ex.method === "HEAD" || head.status === 204 || head.status === 304) framing = { kind: "none" };
        else if (head.chunked) framing = { kind: "chunked" };
        else if (head.lengths.length > 0) {
          const n = Number(head.lengths[0]);
          if (!Number.isSafeInteger(n) || n < 0 || head.lengths.some((l) => l !== head.lengths[0])) {
            fail(c, new UpstreamProtocolError("the replica sent an invalid Content-Length"));
            return;
          }
          framing = { kind: "length", left: n, stream: n > smallBody };
        } else {
          framing = { kind: "close" };
          c.reusable = false;
        }
        c.framing = framing;
        c.chunkLeft = -1;
        const streamed = framing.kind === "chunked" || framing.kind === "close" || (framing.kind === "length" && framing.stream);
        if (framing.kind === "none" || (framing.kind === "length" && framing.left === 0)) {
          ex.started = true;
          ex.resolve({ status: head.status, statusText: head.statusText, headers: head.headers, body: null, done: Promise.resolve() });
          complete(c);
          return;
        }
        if (!streamed) {
          ex.body = [];
          const resolveWhole = ex.resolve;
          const status = head.status;
          const statusText = head.statusText;
          const headers = head.headers;
          // Answered only once the last byte of the body arrived: `complete` calls `finish`.
          ex.resolve = () => undefined;
          ex.finish = (err?: Error) => {
            if (err) return ex.reject(err);
            ex.started = true;
            resolveWhole({ status, statusText, headers, body: Buffer.concat(ex.body!, ex.bodyBytes) as Uint8Array<ArrayBuffer>, done: Promise.resolve() });
          };
        } else {
          let settle!: (err?: Error) => void;
          const done = new Promise<void>((resolve) => {
            settle = () => resolve();
          });
          const stream = new ReadableStream<Uint8Array>({
            start(ctrl) {
              ex.controller = ctrl;
            },
            pull() {
              if (c.ex !== ex) return;
              // Bytes already received (a chunked body can hold several chunks) go first.
              pump(c);
              if (c.ex === ex && !c.closed) c.socket.resume();
            },
            cancel() {
              c.reusable = false;
              if (c.ex === ex) fail(c, new Error("the client stopped reading"));
            },
          });
          ex.finish = (err?: Error) => {
            if (err) {
              try {
                ex.controller!.error(err);
              } catch {
                // Already closed or errored.
              }
            } else {
              try {
                ex.controller!.close();
              } catch {
                // Already closed by a cancel.
              }
            }
            settle();
          };
          ex.started = true;
          ex.resolve({ status: head.status, statusText: head.statusText, headers: head.headers, body: stream, done });
        }
        continue;
      }
      // The body.
      const f = c.framing;
      if (f.kind === "length") {
        if (!c.buf) return;
        const take = Math.min(f.left, c.buf.length);
        const part = c.buf.subarray(0, take);
        c.buf = take < c.buf.length ? c.buf.subarray(take) : null;
        f.left -= take;
        const more = deliver(ex, part);
        if (f.left === 0) {
          complete(c);
          return;
        }
        if (!more) c.socket.pause();
        return;
      }
      if (f.kind === "close") {
        if (c.buf) {
          const part = c.buf;
          c.buf = null;
          if (!deliver(ex, part)) c.socket.pause();
        }
        return; // ends when the upstream closes
      }
      // Chunked.
      if (!c.buf) return;
      if (c.chunkLeft === -1 || c.chunkLeft === -2 || c.chunkLeft === -3) {
        const eol = c.buf.indexOf("\r\n");
        if (eol < 0) {
          if (c.buf.length > 4096) fail(c, new UpstreamProtocolError("a chunk size line from the replica is too long"));
          return;
        }
        const line = c.buf.toString("latin1", 0, eol);
        c.buf = eol + 2 < c.buf.length ? c.buf.subarray(eol + 2) : null;
        if (c.chunkLeft === -2) {
          if (line !== "") return fail(c, new UpstreamProtocolError("a chunk from the replica is longer than its size"));
          c.chunkLeft = -1;
          continue;
        }
        if (c.chunkLeft === -3) {
          if (line === "") {
            complete(c);
            return;
          }
          continue; // a trailer field: not relayed
        }
        const size = Number.parseInt(line.split(";")[0].trim(), 16);
        if (!Number.isFinite(size) || size < 0 || !/^[0-9a-fA-F]+$/.test(line.split(";")[0].trim())) return fail(c, new UpstreamProtocolError("a bad chunk size from the replica"));
        c.chunkLeft = size === 0 ? -3 : size;
        continue;
      }
      const take = Math.min(c.chunkLeft, c.buf.length);
      const part = c.buf.subarray(0, take);
      c.buf = take < c.buf.length ? c.buf.subarray(take) : null;
      c.chunkLeft -= take;
      if (c.chunkLeft === 0) c.chunkLeft = -2;
      if (!deliver(ex, part)) {
        c.socket.pause();
        return;
      }
    }
  }

  async function connect(pool: Pool): Promise<Conn> {
    const conn = { buf: null, ex: null, framing: null, chunkLeft: -1, reusable: true, used: 0, closed: false, pool } as unknown as Conn;
    conn.socket = await Bun.connect<Conn>({
      hostname: pool.host,
      port: pool.port,
      data: conn,
      socket: {
        data(s, bytes) {
          const c = s.data;
          if (c.ex) c.ex.received += bytes.length;
          // Our own copy: body parts handed on are views of it, read after this callback returns.
          c.buf = c.buf ? Buffer.concat([c.buf, bytes]) : Buffer.from(bytes);
          if (!c.ex) {
            // Bytes nobody asked for on an idle connection.
            c.reusable = false;
            s.end();
            return;
          }
          pump(c);
        },
        close(s) {
          const c = s.data;
          c.closed = true;
          const left = (open.get(c.pool.key) ?? 1) - 1;
          const at = c.pool.idle.indexOf(c);
          if (at >= 0) c.pool.idle.splice(at, 1);
          // A replica's port is forgotten with its last connection (replicas come and go).
          if (left > 0) open.set(c.pool.key, left);
          else {
            open.delete(c.pool.key);
            if (pools.get(c.pool.key) === c.pool && c.pool.idle.length === 0) pools.delete(c.pool.key);
          }
          const ex = c.ex;
          if (!ex) return;
          c.ex = null;
          if (c.framing?.kind === "close") ex.finish();
          else if (ex.received === 0) ex.finish(new ClosedBeforeResponse("the replica closed the connection"));
          else ex.finish(new Error("the replica closed the connection in the middle of its response"));
        },
        error(s, err) {
          const c = s.data;
          c.reusable = false;
          if (c.ex) fail(c, err);
        },
      },
    });
    conn.socket.setNoDelay(true);
    open.set(pool.key, (open.get(pool.key) ?? 0) + 1);
    return conn;
  }

  function exchangeOn(c: Conn, method: string, head: string): Promise<UpstreamResponse> {
    return new Promise<UpstreamResponse>((resolve, reject) => {
      const ex: Exchange = {
        method,
        resolve,
        reject,
        started: false,
        received: 0,
        controller: null,
        body: null,
        bodyBytes: 0,
        finish: (err?: Error) => {
          if (err) reject(err);
        },
      };
      c.ex = ex;
      c.used++;
      c.buf = null;
      c.socket.write(head);
    });
  }

  return {
    async request(host, port, method, target, headers) {
      let head = `${method} ${target} HTTP/1.1\r\n`;
      for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
      head += "\r\n";
      const pool = poolOf(host, port);
      const reused = pool.idle.pop();
      if (reused) {
        try {
          return await exchangeOn(reused, method, head);
        } catch (e) {
          // The upstream may have closed the idle connection as it was taken: retry once when
          // nothing of a response arrived (the request has no body, so a replay is safe).
          if (!(e instanceof ClosedBeforeResponse)) throw e;
        }
      }
      return exchangeOn(await connect(pool), method, head);
    },
    connections: (host, port) => open.get(`${host}:${port}`) ?? 0,
    close() {
      for (const p of pools.values()) for (const c of p.idle.splice(0)) c.socket.end();
    },
  };
}
