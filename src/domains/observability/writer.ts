/**
 * The HTTP thread's side of the telemetry writer. Export requests are handed over as read from the
 * wire (the writer thread gunzips, decodes, scrubs and writes them: decode-job.ts), so ingest
 * costs the HTTP thread little more than reading the body. Requests (and other domains' platform
 * log rows) gather while the previous write runs and go as one write — group commit: at low load
 * every request is written at once, under load a write takes what arrived meanwhile, so the
 * transaction count stays low and the trigram index stays cheap to maintain. A submit resolves
 * when its rows are committed; callers answer their client only then.
 *
 * Memory is bounded: past `MAX_PENDING_BYTES` of (decompressed) bodies or `MAX_PENDING_ITEMS`
 * requests waiting, a submit is refused with 429 and `Retry-After`, which OTLP exporters honour;
 * one sender past half of the bytes is refused alike.
 * Bodies go to the writer thread by transfer, not by copy, so a body is held once.
 */
import path from "node:path";
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import type { WriteBatch } from "./rows";
import type { IngestJob, ItemOutcome, WriteItem, WriterArgs, WriterReply, WriterRequest } from "./writer-protocol";

export const MAX_PENDING_BYTES = 64 * 1024 * 1024;
export const MAX_PENDING_ITEMS = 1024;
/** Bytes of bodies per write at most (about 30 000 protobuf log records): bounds a transaction. */
const MAX_WRITE_BYTES = 4 * 1024 * 1024;
/** Lines per log segment (fewer when the size budget is small, so eviction stays fine-grained). */
export const SEGMENT_MAX_ROWS = 500_000;
const LOCALS_KEY = "observability.writer";

interface Pending {
  items: WriteItem[];
  bytes: number;
  /** Per item: the sender's key (`callerKey`) and the bytes it counts there, to give back when written. */
  shares: Array<{ caller: string; bytes: number } | null>;
  waiters: Array<{ resolve(o: ItemOutcome): void; reject(e: unknown): void }>;
}

/** Bun's Worker can stop keeping the process alive while idle (the DOM type does not say so). */
type RefWorker = Worker & { ref(): void; unref(): void };

/** Where the worker's module is: beside this file from source; by its path in the bundle in the compiled binary. */
function workerUrl(): string {
  if (import.meta.url.includes("$bunfs")) return "./domains/observability/writer-worker.ts";
  return new URL("./writer-worker.ts", import.meta.url).href;
}

export function segmentRowsFor(maxBytes: number): number {
  // About 300 bytes per stored line with its index: a segment is at most a tenth of the budget.
  return Math.max(2_000, Math.min(SEGMENT_MAX_ROWS, Math.floor(maxBytes / 10 / 300)));
}

/** Text per segment: stored with its trigram index a line takes three to four times its text, so a segment stays near a tenth of the budget. */
export function segmentBytesFor(maxBytes: number): number {
  return Math.max(64 * 1024, Math.floor(maxBytes / 40));
}

const shuttingDown = () => new OpsError("unavailable", "ops is shutting down; send the telemetry again later.", undefined, { headers: { "retry-after": "5" } });

export class WriterClient {
  private worker: RefWorker | null = null;
  private nextId = 1;
  private readonly calls = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  /** Writes not yet sent, oldest first; the last one is still filling. */
  private readonly queue: Pending[] = [];
  private writing = false;
  private pendingItems = 0;
  private pendingBytes = 0;
  /** Bytes waiting per sender (`callerKey`), for the share bound. */
  private readonly pendingByCaller = new Map<string, number>();
  private closed = false;
  /** The backlog bound (requests waiting, bytes of their bodies); tests lower it to provoke overload. */
  limits = { items: MAX_PENDING_ITEMS, bytes: MAX_PENDING_BYTES };

  constructor(private readonly core: Core) {}

  private start(): RefWorker {
    if (this.worker) return this.worker;
    const w = new Worker(workerUrl()) as RefWorker;
    w.onmessage = (e: MessageEvent<WriterReply>) => {
      const call = this.calls.get(e.data.id);
      if (!call) return;
      this.calls.delete(e.data.id);
      if (this.calls.size === 0) w.unref();
      if (e.data.ok) call.resolve(e.data.result);
      else {
        this.core.log.error("telemetry write failed", { error: e.data.error, code: e.data.code });
        call.reject(new OpsError("unavailable", "Telemetry could not be written; try again.", undefined, { headers: { "retry-after": "5" } }));
      }
    };
    w.onerror = (e) => {
      this.core.log.error("telemetry writer thread failed", { error: e.message });
      const failed = [...this.calls.values()];
      this.calls.clear();
      this.worker = null;
      this.writing = false;
      w.terminate();
      for (const c of failed) c.reject(new OpsError("unavailable", "The telemetry writer stopped; try again.", undefined, { headers: { "retry-after": "5" } }));
    };
    this.worker = w;
    this.post({ op: "open", file: path.join(this.core.config.dataDir, "telemetry.db"), segmentMaxRows: segmentRowsFor(this.core.config.telemetryMaxBytes), segmentMaxBytes: segmentBytesFor(this.core.config.telemetryMaxBytes), maxBytes: this.core.config.telemetryMaxBytes });
    return w;
  }

  private post<O extends WriterRequest["op"]>(msg: { op: O } & WriterArgs<O>, transfer: Transferable[] = []): Promise<unknown> {
    const w = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      w.ref();
      w.postMessage({ ...msg, id }, transfer);
    });
  }

  /** Run a maintenance operation on the writer thread (after the writes already sent). */
  call<O extends Exclude<WriterRequest["op"], "open" | "write" | "close">>(op: O, args: WriterArgs<O>): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error("the telemetry writer is closed"));
    return this.post({ op, ...args } as { op: O } & WriterArgs<O>);
  }

  /** True when the backlog is at its bound: new work is refused (429) until the writer catches up. */
  full(): boolean {
    return this.pendingItems >= this.limits.items || this.pendingBytes >= this.limits.bytes;
  }

  private enqueue(item: WriteItem, bytes: number, caller: string | null): Promise<ItemOutcome> {
    if (this.closed) return Promise.reject(shuttingDown());
    if (this.pendingItems + 1 > this.limits.items || this.pendingBytes + bytes > this.limits.bytes) {
      return Promise.reject(new OpsError("rate_limited", "Telemetry is arriving faster than it can be written; retry shortly.", { backlog_bytes: this.pendingBytes }, { headers: { "retry-after": "2" } }));
    }
    // One sender holds at most half the backlog (decision 0535), so another project's export still
    // finds room; a sender with nothing waiting is always taken, whatever its body's size.
    const held = caller === null ? 0 : (this.pendingByCaller.get(caller) ?? 0);
    if (held > 0 && held + bytes > this.limits.bytes / 2) {
      return Promise.reject(new OpsError("rate_limited", "This credential's telemetry is arriving faster than it can be written; retry shortly.", { backlog_bytes: held }, { headers: { "retry-after": "2" } }));
    }
    this.pendingItems++;
    this.pendingBytes += bytes;
    if (caller !== null) this.pendingByCaller.set(caller, held + bytes);
    let last = this.queue[this.queue.length - 1];
    if (!last || last.bytes >= MAX_WRITE_BYTES) {
      last = { items: [], bytes: 0, shares: [], waiters: [] };
      this.queue.push(last);
    }
    last.items.push(item);
    last.shares.push(caller === null ? null : { caller, bytes });
    last.bytes += bytes;
    const done = new Promise<ItemOutcome>((resolve, reject) => last!.waiters.push({ resolve, reject }));
    if (!this.writing) void this.pump();
    return done;
  }

  /**
   * Queue an export request; resolves with its outcome once its rows are committed (or with why
   * it could not be read). 429 when the backlog is full, 503 when the writer is closed or failed.
   */
  submitExport(job: IngestJob, caller: string): Promise<ItemOutcome> {
    return this.enqueue({ kind: "otlp", job }, job.body.byteLength, caller);
  }

  /** Queue rows made on this thread (platform logs); resolves once they are committed. */
  async submit(batch: WriteBatch, bytes: number): Promise<void> {
    if (batch.logs.length + batch.spans.length + batch.points.length === 0) return;
    await this.enqueue({ kind: "rows", rows: JSON.stringify(batch) }, bytes, null);
  }

  private async pump(): Promise<void> {
    this.writing = true;
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) {
        try {
          const outcomes = (await this.post({ op: "write", now: this.core.clock.now(), items: next.items }, bodiesOf(next.items))) as ItemOutcome[];
          next.waiters.forEach((w, i) => w.resolve(outcomes[i]));
        } catch (e) {
          for (const w of next.waiters) w.reject(e);
        } finally {
          this.pendingItems -= next.items.length;
          this.pendingBytes -= next.bytes;
          for (const share of next.shares) if (share) this.release(share.caller, share.bytes);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private release(caller: string, bytes: number): void {
    const left = (this.pendingByCaller.get(caller) ?? 0) - bytes;
    if (left > 0) this.pendingByCaller.set(caller, left);
    else this.pendingByCaller.delete(caller);
  }

  /** Wait until everything submitted so far is committed (failures were already reported to their submitters). */
  async flush(): Promise<void> {
    while (this.writing || this.queue.length > 0) {
      if (!this.writing) void this.pump();
      await new Promise<void>((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Flush, close the writer's connection (checkpointing the WAL) and stop its thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    if (!this.worker) return;
    try {
      await this.post({ op: "close" });
    } finally {
      this.worker?.terminate();
      this.worker = null;
    }
  }
}

/** The buffers of the export bodies in `items`, each once, to transfer rather than copy. */
function bodiesOf(items: WriteItem[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const item of items) {
    if (item.kind !== "otlp") continue;
    const body = item.job.body;
    // Only a buffer the body has to itself: transferring a shared one would empty its other views.
    if (body.buffer instanceof ArrayBuffer && body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.byteLength > 0) out.add(body.buffer);
  }
  return [...out];
}

/** The core's writer (created on first use; closed by the domain's close hook). */
export function writerOf(core: Core): WriterClient {
  let w = core.locals.get(LOCALS_KEY) as WriterClient | undefined;
  if (!w) {
    w = new WriterClient(core);
    core.locals.set(LOCALS_KEY, w);
  }
  return w;
}

/** The core's writer if one was started, for the close hook. */
export function existingWriter(core: Core): WriterClient | undefined {
  return core.locals.get(LOCALS_KEY) as WriterClient | undefined;
}
