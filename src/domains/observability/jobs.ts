/**
 * Scheduler tasks of the observability domain, run on the writer thread:
 * - `observability.rollup` (every minute): fold finished 5-minute buckets of raw metric samples
 *   into rollups, from a stored watermark, so a stop of any length is caught up by one run;
 * - `observability.retention` (hourly): delete logs, spans, raw samples and log volume older than
 *   `OPS_LOG_RETENTION_DAYS`, rollups older than 400 days, then evict oldest-first while
 *   telemetry.db's live bytes exceed `OPS_TELEMETRY_MAX_BYTES` (the writer also checks that budget
 *   as it writes). Both delete everything past the cut-off, however long ops was down.
 */
import type { Core } from "../../core/core";
import { writerOf } from "./writer";

export const ROLLUP_TASK = "observability.rollup";
export const RETENTION_TASK = "observability.retention";
export const ROLLUP_RETENTION_DAYS = 400;
const DAY_MS = 86_400_000;

/** Fold raw samples into 5-minute rollups up to now. Returns the rollup rows written. */
export async function runRollups(core: Core): Promise<number> {
  return (await writerOf(core).call("rollup", { now: core.clock.now(), rawRetentionMs: core.config.logRetentionDays * DAY_MS })) as number;
}

/** Apply retention, then the size budget. */
export async function runRetention(core: Core): Promise<{ logs: number; spans: number; samples: number; rollups: number }> {
  const now = core.clock.now();
  const writer = writerOf(core);
  const removed = (await writer.call("retention", { rawCutoffMs: now - core.config.logRetentionDays * DAY_MS, rollupCutoffMs: now - ROLLUP_RETENTION_DAYS * DAY_MS })) as {
    logs: number;
    spans: number;
    samples: number;
    rollups: number;
  };
  await writer.call("evict", { now, maxBytes: core.config.telemetryMaxBytes });
  if (removed.logs + removed.spans + removed.samples + removed.rollups > 0) core.log.info("telemetry retention", removed);
  return removed;
}

export function defineObservabilityJobs(core: Core): void {
  core.scheduler.defineTask(ROLLUP_TASK, "* * * * *", async () => {
    await runRollups(core);
  });
  core.scheduler.defineTask(RETENTION_TASK, "7 * * * *", async () => {
    await runRetention(core);
  });
}
