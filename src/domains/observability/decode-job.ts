/**
 * One export request on the writer thread: decode by encoding and signal, then scrub and map into
 * rows (ingest.ts). The body arrives decompressed and bounded (intake.ts). A request that cannot be
 * read is refused whole (400) and stores nothing; the others in the same write are not affected.
 *
 * The body is let go as soon as it is decoded (`job.body` is emptied), so at most one body and
 * its decoded form are alive at a time: the write's other bodies wait as bytes.
 */
import { OtlpDecodeError } from "./otlp-model";
import { decodeLogsProto, decodeMetricsProto, decodeTracesProto } from "./otlp-proto";
import { decodeLogsJson, decodeMetricsJson, decodeTracesJson } from "./otlp-json";
import { logsToRows, metricsToRows, spansToRows, type IngestContext, type IngestOutcome } from "./ingest";
import type { IngestJob, ItemOutcome } from "./writer-protocol";
import type { WriteBatch } from "./rows";

const EMPTY = new Uint8Array(0);

function decode(job: IngestJob, ctx: IngestContext): IngestOutcome {
  const bytes = job.body;
  job.body = EMPTY;
  if (job.encoding === "proto") {
    if (job.signal === "logs") return logsToRows(decodeLogsProto(bytes), ctx);
    if (job.signal === "traces") return spansToRows(decodeTracesProto(bytes), ctx);
    return metricsToRows(decodeMetricsProto(bytes), ctx);
  }
  // The text is bounded by the decoded-size limit; the bytes are not needed once it exists.
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
  const denied = new Set(job.denied);
  const ctx: IngestContext = { projectId: job.projectId, now: job.now, oldestMs: job.oldestMs, retentionDays: job.retentionDays, mayIngest: (env) => !denied.has(env), identity: job.identity };
  try {
    const r = decode(job, ctx);
    return { outcome: { ok: true, accepted: r.accepted, rejected: r.rejected, message: r.message }, batch: r.batch };
  } catch (e) {
    if (e instanceof OtlpDecodeError) return { outcome: { ok: false, status: 400, message: `The ${job.signal} export could not be decoded: ${e.message}.` }, batch: null };
    throw e;
  }
}
