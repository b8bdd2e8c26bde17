/**
 * A Swarm service's output through the manager (`GET /services/{id}/logs`), which gathers it from
 * whichever node runs each task: every line comes with its time and, from `details=1`, the node and
 * the task that wrote it (`com.docker.swarm.node.id=…,com.docker.swarm.task.id=…`). A stream that
 * ends while the service lives (a manager restart, a node gone) is opened again from the last time
 * seen, so a line is neither lost nor handed over twice.
 */
import { followLogs, type EngineClient } from "./engine-api";
import type { OutputStream } from "./types";

export interface ServiceLine {
  stream: OutputStream;
  text: string;
  /** When the task wrote it, ms since the epoch. */
  at: number;
  nodeId: string | null;
  taskId: string | null;
}

/** An RFC 3339 time with up to nine fraction digits, as nanoseconds since the epoch (Docker trims trailing zeros). */
export function nanosOf(ts: string): bigint | null {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) return null;
  const secs = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(secs)) return null;
  return BigInt(secs) * 1_000_000n + BigInt((m[2] ?? "").padEnd(9, "0"));
}

/** One raw line (`<time> <details> <text>`) split into its parts. */
export function parseServiceLine(stream: OutputStream, raw: string): { nanos: bigint | null; line: ServiceLine } {
  let rest = raw;
  const sp = rest.indexOf(" ");
  const nanos = sp > 0 ? nanosOf(rest.slice(0, sp)) : null;
  if (nanos !== null) rest = rest.slice(sp + 1);
  let nodeId: string | null = null;
  let taskId: string | null = null;
  const sp2 = rest.indexOf(" ");
  const head = sp2 >= 0 ? rest.slice(0, sp2) : rest;
  if (head.startsWith("com.docker.swarm.") || /^[\w.-]+=[^ ]*(,[\w.-]+=[^ ]*)*$/.test(head)) {
    for (const kv of head.split(",")) {
      const [k, v] = kv.split("=", 2);
      if (k === "com.docker.swarm.node.id") nodeId = v ?? null;
      if (k === "com.docker.swarm.task.id") taskId = v ?? null;
    }
    rest = sp2 >= 0 ? rest.slice(sp2 + 1) : "";
  }
  return { nanos, line: { stream, text: rest, at: nanos === null ? Date.now() : Number(nanos / 1_000_000n), nodeId, taskId } };
}

export interface ServiceLogFollower {
  /** The newest line's time seen so far (what a reopened stream starts after). */
  readonly last: bigint;
  /** Read what is left without following (a one-off run that ended), then resolve. */
  drain(): Promise<void>;
}

/**
 * Follow `serviceId`'s output (from `sinceMs`, default all of it) until `signal` aborts, reopening
 * the stream after it ends (1 s later).
 * `emit` gets each line once, in the order the manager sends them.
 */
export function followServiceLogs(client: EngineClient, serviceId: string, signal: AbortSignal, emit: (line: ServiceLine) => void, onError?: (e: Error) => void, sinceMs = 0): ServiceLogFollower {
  let last = BigInt(sinceMs) * 1_000_000n;
  const read = async (follow: boolean, stop: AbortSignal) => {
    const since = last === 0n ? "0" : `${last / 1_000_000_000n}.${String(last % 1_000_000_000n).padStart(9, "0")}`;
    const res = await client.call("GET", `/services/${serviceId}/logs?follow=${follow ? 1 : 0}&stdout=1&stderr=1&details=1&timestamps=1&since=${since}`);
    await followLogs(res, stop, (stream, raw) => {
      const { nanos, line } = parseServiceLine(stream, raw);
      if (nanos !== null) {
        // `since` is inclusive: what was seen at the previous stream's last instant is not sent twice.
        if (nanos <= last) return;
        last = nanos;
      }
      emit(line);
    });
  };
  void (async () => {
    while (!signal.aborted) {
      try {
        await read(true, signal);
      } catch (e) {
        if (signal.aborted) return;
        onError?.(e as Error);
      }
      if (!signal.aborted) await Bun.sleep(1000);
    }
  })();
  return {
    get last() {
      return last;
    },
    async drain() {
      await read(false, new AbortController().signal).catch((e) => onError?.(e as Error));
    },
  };
}
