/**
 * The telemetry writer thread: decodes the export requests the HTTP thread hands it (decode-job.ts),
 * owns the one writing connection to telemetry.db and runs what the HTTP thread asks of it
 * (writer.ts), one message at a time. Listed as a second entrypoint of the compiled binary
 * (scripts/compile.ts), which is how a standalone executable carries a worker.
 */
import { openDatabase, closeDatabase } from "../../core/db/client";
import { TelemetryWriter } from "./writer-store";
import type { ItemOutcome, WriteItem, WriterReply, WriterRequest } from "./writer-protocol";
import type { WriteBatch } from "./rows";
import { runJob } from "./decode-job";

declare const self: Worker;

let sqlite: ReturnType<typeof openDatabase>["sqlite"] | null = null;
let writer: TelemetryWriter | null = null;
let maxBytes = Number.POSITIVE_INFINITY;
let lastEvictCheck = 0;
/** How often, at most, a write also checks the size budget. */
const EVICT_CHECK_MS = 2000;

/**
 * The batches of a write's items, one item at a time (decoded only when the previous item's rows
 * are written), with each item's outcome recorded in `outcomes`.
 */
function* batchesOf(items: WriteItem[], outcomes: ItemOutcome[]): Generator<WriteBatch> {
  for (const item of items) {
    if (item.kind === "rows") {
      const rows = JSON.parse(item.rows) as WriteBatch;
      outcomes.push({ ok: true, accepted: rows.logs.length + rows.spans.length + rows.points.length, rejected: 0, message: "" });
      yield rows;
    } else {
      const r = runJob(item.job);
      outcomes.push(r.outcome);
      if (r.batch) yield r.batch;
    }
  }
}

function handle(msg: WriterRequest): unknown {
  switch (msg.op) {
    case "open": {
      sqlite = openDatabase(msg.file, "telemetry").sqlite;
      // The trigram indexes' merges and the B-trees of a big batch want more than the default 2 MB of cache.
      sqlite.exec("PRAGMA cache_size = -65536");
      writer = new TelemetryWriter(sqlite, { segmentMaxRows: msg.segmentMaxRows, segmentMaxBytes: msg.segmentMaxBytes });
      maxBytes = msg.maxBytes;
      return null;
    }
    case "write": {
      const outcomes: ItemOutcome[] = [];
      writer!.writeEach(batchesOf(msg.items, outcomes), msg.now);
      if (msg.now - lastEvictCheck >= EVICT_CHECK_MS || msg.now < lastEvictCheck) {
        lastEvictCheck = msg.now;
        writer!.evict(maxBytes, msg.now);
      }
      return outcomes;
    }
    case "rollup":
      return writer!.rollup(msg.now, msg.rawRetentionMs);
    case "retention":
      return writer!.retention(msg.rawCutoffMs, msg.rollupCutoffMs);
    case "evict":
      return writer!.evict(msg.maxBytes, msg.now);
    case "close":
      if (sqlite) closeDatabase(sqlite);
      sqlite = null;
      writer = null;
      return null;
  }
}

self.onmessage = (event: MessageEvent<WriterRequest>) => {
  const msg = event.data;
  let reply: WriterReply;
  try {
    reply = { id: msg.id, ok: true, result: handle(msg) };
  } catch (e) {
    const err = e as { message?: string; code?: string };
    reply = { id: msg.id, ok: false, error: err.message ?? String(e), code: err.code ?? null };
  }
  postMessage(reply);
};
