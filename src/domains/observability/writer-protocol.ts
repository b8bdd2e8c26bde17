/** Messages between the HTTP thread (writer.ts) and the telemetry writer thread (writer-worker.ts). */
import type { Signal } from "./otlp-model";

/**
 * One OTLP export request, decompressed and bounded (intake.ts): the writer thread decodes, scrubs
 * and maps it (decode-job.ts), so none of that work happens on the HTTP thread.
 */
export interface IngestJob {
  signal: Signal;
  encoding: "json" | "proto";
  /** The decompressed body, in a buffer of its own: transferred to the writer thread, not copied. */
  body: Uint8Array;
  /** The project's ops id. */
  projectId: string;
  now: number;
  /** Records older than this are refused (the retention). */
  oldestMs: number;
  retentionDays: number;
  /** Environments where the caller may not send (environment policies); any other is allowed. */
  denied: string[];
  /** A replica credential's service and environment: every resource's own are overridden (decision 0651). */
  identity?: { service: string; environment: string };
}

/** What one write carries: export requests, and rows made on the HTTP thread (platform logs) as JSON text. */
export type WriteItem = { kind: "otlp"; job: IngestJob } | { kind: "rows"; rows: string };

/** Per item: how many records were stored and refused (and why), or why the request was refused whole. */
export type ItemOutcome = { ok: true; accepted: number; rejected: number; message: string } | { ok: false; status: 400; message: string };

export type WriterRequest =
  | { op: "open"; id: number; file: string; segmentMaxRows: number; segmentMaxBytes: number; maxBytes: number }
  | { op: "write"; id: number; now: number; items: WriteItem[] }
  | { op: "rollup"; id: number; now: number; rawRetentionMs: number }
  | { op: "retention"; id: number; rawCutoffMs: number; rollupCutoffMs: number }
  | { op: "evict"; id: number; now: number; maxBytes: number }
  | { op: "close"; id: number };

export type WriterReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string; code: string | null };

/** What a request carries besides its id and op, by op. */
export type WriterArgs<O extends WriterRequest["op"]> = Omit<Extract<WriterRequest, { op: O }>, "id" | "op">;
