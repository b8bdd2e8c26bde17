/**
 * One export request on the writer thread: gunzip (under the decoded-size limit), decode by
 * encoding and signal, then scrub and map into rows (ingest.ts). A request that cannot be read is
 * refused whole (400, or 413 past the limit) and stores nothing; the others in the same write are
 * not affected.
 */
import { gunzipSync } from "node:zlib";
import { OtlpDecodeError } from "./otlp-model";
import { decodeLogsProto, decodeMetricsProto, decodeTracesProto } from "./otlp-proto";
import { decodeLogsJson, decodeMetricsJson, decodeTracesJson } from "./otlp-json";
import { logsToRows, metricsToRows, spansToRows, type IngestContext, type IngestOutcome } from "./ingest";
import type { IngestJob, ItemOutcome } from "./writer-protocol";
import type { WriteBatch } from "./rows";

/** Largest body once gunzipped (OTLP suggests 64 MiB). */
export const OTLP_MAX_DECODED_BYTES = 64 * 1024 * 1024;

function decode(job: IngestJob, bytes: Uint8Array, ctx: IngestContext): IngestOutcome {
  if (job.encoding === "proto") {
    if (job.signal === "logs") return logsToRows(decodeLogsProto(bytes), ctx);
    if (job.signal === "traces") return spansToRows(decodeTracesProto(bytes), ctx);
    return metricsToRows(decodeMetricsProto(bytes), ctx);
  }
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  let body: unknown = {};
  if (text.trim() !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      throw new OtlpDecodeError("the body is not valid JSON");
    }
  }
  if (job.signal === "logs") return logsToRows(decodeLogsJson(body), ctx);
  if (job.signal === "traces") return spansToRows(decodeTracesJson(body), ctx);
  return metricsToRows(decodeMetricsJson(body), ctx);
}

/** Decode one request: its outcome, and its rows when it could be read. */
export function runJob(job: IngestJob): { outcome: ItemOutcome; batch: WriteBatch | null } {
  let bytes = job.body;
  if (job.gzip) {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: OTLP_MAX_DECODED_BYTES });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === "ERR_BUFFER_TOO_LARGE" || e instanceof RangeError) return { outcome: { ok: false, status: 413, message: "" }, batch: null };
      return { outcome: { ok: false, status: 400, message: "The body is not valid gzip." }, batch: null };
    }
  }
  const denied = new Set(job.denied);
  const ctx: IngestContext = { projectId: job.projectId, now: job.now, oldestMs: job.oldestMs, retentionDays: job.retentionDays, mayIngest: (env) => !denied.has(env) };
  try {
    const r = decode(job, bytes, ctx);
    return { outcome: { ok: true, accepted: r.accepted, rejected: r.rejected, message: r.message }, batch: r.batch };
  } catch (e) {
    if (e instanceof OtlpDecodeError) return { outcome: { ok: false, status: 400, message: `The ${job.signal} export could not be decoded: ${e.message}.` }, batch: null };
    throw e;
  }
}
