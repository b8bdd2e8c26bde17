/**
 * The observability domain's surface for the other domains (and the read routes).
 *
 * Platform telemetry: what ops itself runs for a project — job runs now, builds and the runtime's
 * service output later — writes its lines with `appendPlatformLogs`, into the same store as the
 * lines services send over OTLP, so one search finds both.
 */
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { keyable } from "./keys";
import { scrub } from "./scrub";
import { MAX_MESSAGE_CHARS, FUTURE_SLACK_MS } from "./ingest";
import { severityRange, type LevelName, type LogRow } from "./rows";
import { writerOf } from "./writer";

export { readScope, type Scope } from "./visibility";
export { readLogs, readTraces, readTrace, readSeries } from "./reads";

/** One line ops writes on a project's behalf. */
export interface PlatformLogEntry {
  /** The project's id (`ProjectRef.id`). */
  project: string;
  environment: string;
  /** The resource the line is about (a job's, a service's name), as services name themselves in OTLP. */
  service: string;
  level: LevelName;
  message: string;
  /** Where in ops it comes from, e.g. `ops.job-run/42`, `ops.build/7`, `stdout`. */
  target: string;
  /** Epoch ms. */
  timestamp: number;
  /** Defaults to `ops`. */
  host?: string;
}

/**
 * Write platform log lines into the telemetry store, as one batch: scrubbed like ingested lines
 * (secrets, credentials, emails and card numbers never reach telemetry.db), searchable at once by
 * anyone with `obs.read` in the project. Resolves when the lines are committed. Rejects with
 * `rate_limited` (429) while the writer's backlog is full and `unavailable` (503) while ops shuts
 * down: the caller keeps its own copy (e.g. job-run lines in ops.db) and should not retry in a
 * loop. Lines older than the log retention, or before 2020, are skipped; lines dated more than
 * five minutes ahead take the current time. Never throws synchronously.
 */
export function appendPlatformLogs(core: Core, entries: readonly PlatformLogEntry[]): Promise<void> {
  const now = core.clock.now();
  const oldest = now - core.config.logRetentionDays * 86_400_000;
  const logs: LogRow[] = [];
  let bytes = 0;
  for (const e of entries) {
    let ms = e.timestamp > now + FUTURE_SLACK_MS ? now : e.timestamp;
    if (!Number.isFinite(ms)) ms = now;
    if (!keyable(ms) || ms < oldest) continue;
    const message = scrub(e.message.length > MAX_MESSAGE_CHARS ? `${e.message.slice(0, MAX_MESSAGE_CHARS)}…` : e.message);
    logs.push({
      ms,
      project: e.project,
      environment: e.environment,
      service: scrub(e.service),
      severity: severityRange(e.level)[0],
      level: null,
      host: e.host ?? "ops",
      target: scrub(e.target),
      message,
      traceId: null,
      spanId: null,
      client: null,
      method: null,
      route: null,
      status: null,
    });
    bytes += message.length + 64;
  }
  try {
    return writerOf(core).submit({ logs, spans: [], points: [] }, bytes);
  } catch (e) {
    return Promise.reject(e instanceof OpsError ? e : new OpsError("unavailable", "Telemetry could not be written."));
  }
}
