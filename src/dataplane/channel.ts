/**
 * One end of the control socket (protocol.ts): buffered writes that respect the socket's
 * back-pressure, requests matched to their answers, events to a handler. Both planes use it.
 */
import type { Socket } from "bun";
import { encode, lineReader, type Events, type Message, type Op, type Operations } from "./protocol";

export class Channel {
  private out: Uint8Array[] = [];
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private closed = false;
  readonly read: (chunk: Uint8Array) => void;

  constructor(
    private readonly socket: Socket<unknown>,
    handlers: {
      onRequest?: (op: Op, args: unknown) => Promise<unknown>;
      onEvent?: <E extends keyof Events>(ev: E, data: Events[E]) => void;
      onBad?: (why: string) => void;
    },
  ) {
    this.read = lineReader(
      (m) => this.receive(m, handlers),
      (why) => {
        handlers.onBad?.(why);
        this.close();
      },
    );
  }

  private receive(m: Message, handlers: { onRequest?: (op: Op, args: unknown) => Promise<unknown>; onEvent?: (ev: keyof Events, data: never) => void }): void {
    if (m.t === "res") {
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(m.error));
    } else if (m.t === "ev") {
      handlers.onEvent?.(m.ev, m.data as never);
    } else if (m.t === "req") {
      const run = handlers.onRequest ? handlers.onRequest(m.op, m.args) : Promise.reject(new Error("no requests here"));
      run.then(
        (value) => this.send({ t: "res", id: m.id, ok: true, value: value ?? null }),
        (e: Error) => this.send({ t: "res", id: m.id, ok: false, error: e?.message ?? String(e) }),
      );
    }
  }

  /** Ask the other side for `op`; rejects with its error, or when the socket closes first. */
  request<O extends Op>(op: O, args: Operations[O]["args"]): Promise<Operations[O]["result"]> {
    if (this.closed) return Promise.reject(new Error("the data plane's socket is closed"));
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.send({ t: "req", id, op, args });
    });
  }

  event<E extends keyof Events>(ev: E, data: Events[E]): void {
    this.send({ t: "ev", ev, data });
  }

  /** Bytes queued because the socket would not take them yet. */
  get backlog(): number {
    return this.out.reduce((n, b) => n + b.length, 0);
  }

  private send(m: Message): void {
    if (this.closed) return;
    this.out.push(new TextEncoder().encode(encode(m)));
    this.drain();
  }

  /** Write what is queued; the socket's `drain` handler calls this again. */
  drain(): void {
    while (this.out.length > 0 && !this.closed) {
      const head = this.out[0];
      const n = this.socket.write(head);
      if (n < 0) return this.close();
      if (n < head.length) {
        this.out[0] = head.subarray(n);
        return;
      }
      this.out.shift();
    }
  }

  /** The socket closed (or should): every pending request fails. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.out = [];
    for (const [, w] of this.waiting) w.reject(new Error("the data plane's socket closed"));
    this.waiting.clear();
    try {
      this.socket.end();
    } catch {
      // already closed
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
