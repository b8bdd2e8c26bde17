/**
 * Raw-socket helpers for the ingress suites: a TCP replica that records request heads and answers
 * with exact bytes, and a client that sends exact bytes and collects what comes back.
 */
import type { Socket, TCPSocketListener } from "bun";

export interface Raw {
  port: number;
  /** Connections accepted so far. */
  accepted: number;
  /** Request heads received, in order. */
  heads: string[];
  /** Bytes received after heads (bodies), per connection in order, as latin1. */
  bodies: string[];
  stop(): void;
}

/** A TCP replica calling `answer` with each request head; body bytes are collected, not parsed. */
export function rawServer(answer: (head: string, s: Socket<{ buf: string; conn: number }>, n: number) => void): Raw {
  const raw: Raw = { port: 0, accepted: 0, heads: [], bodies: [], stop: () => undefined };
  const server: TCPSocketListener<{ buf: string; conn: number }> = Bun.listen<{ buf: string; conn: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "", conn: raw.accepted++ };
        raw.bodies[s.data.conn] = "";
      },
      data(s, bytes) {
        s.data.buf += bytes.toString("latin1");
        for (;;) {
          const end = s.data.buf.indexOf("\r\n\r\n");
          if (end < 0 || !/^[A-Z]+ \S+ HTTP\/1\.[01]\r\n/.test(s.data.buf)) {
            if (end < 0 && /^[A-Z]+ /.test(s.data.buf)) return;
            raw.bodies[s.data.conn] += s.data.buf;
            s.data.buf = "";
            return;
          }
          const head = s.data.buf.slice(0, end);
          s.data.buf = s.data.buf.slice(end + 4);
          raw.heads.push(head);
          answer(head, s, raw.heads.length);
        }
      },
    },
  });
  raw.port = server.port;
  raw.stop = () => server.stop(true);
  return raw;
}

/** Send `bytes` on a new connection and collect what comes back until `done(text)` or the close. */
export function talk(port: number, bytes: string | Buffer, done: (got: string) => boolean = () => false, timeoutMs = 5000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    let got = "";
    let settled = false;
    const settle = (closed: boolean, s?: Socket<undefined>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s?.end();
      resolve({ text: got, closed });
    };
    const timer = setTimeout(() => settle(false), timeoutMs);
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(s) {
          s.write(bytes);
        },
        data(s, b) {
          got += b.toString("latin1");
          if (done(got)) settle(false, s);
        },
        close() {
          settle(true);
        },
      },
    }).catch(reject);
  });
}

export interface Streamer {
  port: number;
  /** Body bytes the replica's socket took so far. */
  written(): number;
  /** The ingress closed the replica's connection. */
  closed(): boolean;
  stop(): void;
}

/** A replica answering any request with `total` bytes of body (a multiple of 64 KiB), written as fast as its socket takes them. */
export function streamingReplica(total: number): Streamer {
  let written = 0;
  let closed = false;
  const block = Buffer.alloc(1 << 16, 120);
  const server = Bun.listen<{ more?: () => void }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(s) {
        s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${total}\r\n\r\n`);
        s.data = {
          more: () => {
            while (written < total) {
              const n = s.write(block.subarray(written % block.length));
              if (n <= 0) return;
              written += n;
            }
          },
        };
        s.data.more!();
      },
      drain(s) {
        s.data.more?.();
      },
      close() {
        closed = true;
      },
    },
  });
  return { port: server.port, written: () => written, closed: () => closed, stop: () => server.stop(true) };
}
