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
import { scrub, scrubPersonal } from "./scrub";
import { SecretLineFilter } from "../../core/secret-redact";
import { MAX_MESSAGE_CHARS, FUTURE_SLACK_MS } from "./ingest";
import { severityRange, type LevelName, type LogRow, type PointRow } from "./rows";
import { writerOf } from "./writer";

export { readScope, type Scope } from "./visibility";
export { readLogs, readTraces, readTrace, readSeries } from "./reads";
export { mintIngestCredential, INGEST_CREDENTIAL_TTL_MS, type IngestIdentity } from "./ingest-credential";
export { projectSeries, countProjectLogs } from "./project-reads";

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

const FILTERS_KEY = "observability.platform-line-filters";
/** Streams whose line filter is kept (the most recently written); an older stream starts afresh. */
const MAX_STREAMS = 4096;

/**
 * The secret-shape filter of one stream of lines (a replica's stdout, a build's log …): output
 * arrives line by line, and a private key printed line by line is recognised only across lines.
 */
function lineFilterOf(core: Core, e: PlatformLogEntry): SecretLineFilter {
  let filters = core.locals.get(FILTERS_KEY) as Map<string, SecretLineFilter> | undefined;
  if (!filters) core.locals.set(FILTERS_KEY, (filters = new Map()));
  const key = `${e.project}\u0000${e.environment}\u0000${e.service}\u0000${e.target}\u0000${e.host ?? ""}`;
  let f = filters.get(key);
  if (f) filters.delete(key);
  else f = new SecretLineFilter();
  filters.set(key, f);
  if (filters.size > MAX_STREAMS) filters.delete(filters.keys().next().value!);
  return f;
}

/**
 * Write platform log lines into the telemetry store, as one batch: scrubbed like ingested lines
 * (secrets, credentials, emails and card numbers never reach telemetry.db; a private key printed
 * line by line is masked through its END line, per stream of lines), searchable at once by
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
    const message = scrubPersonal(lineFilterOf(core, e).filter(e.message.length > MAX_MESSAGE_CHARS ? `${e.message.slice(0, MAX_MESSAGE_CHARS)}…` : e.message));
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

/** A metric point ops measured itself (the ingress's request metrics): a counter's increase, or a gauge's level. */
export interface PlatformPoint {
  /** The project's id. */
  project: string;
  environment: string;
  service: string;
  name: string;
  kind: "counter" | "gauge" | "histogram";
  unit: string;
  attrs: Record<string, string>;
  timestamp: number;
  /** Counters: the increase since the last point; gauges: the level. */
  value: number | null;
  /** Histograms: the increase of the count and sum since the last point, and this interval's bucket counts. */
  count?: number;
  sum?: number;
  buckets?: { bounds: readonly number[]; counts: readonly number[] };
}

/**
 * Write metric points into the telemetry store as ingested points are (counters and histograms as
 * deltas the writer folds into each series' running total, gauges as levels). Resolves when they
 * are committed; rejects as `appendPlatformLogs` does.
 */
export function appendPlatformPoints(core: Core, points: readonly PlatformPoint[]): Promise<void> {
  const rows: PointRow[] = points.map((p) => ({
    ms: p.timestamp,
    project: p.project,
    environment: p.environment,
    service: scrub(p.service),
    name: p.name,
    kind: p.kind,
    unit: p.unit,
    attrs: JSON.stringify(Object.fromEntries(Object.entries(p.attrs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))),
    delta: p.kind !== "gauge",
    value: p.value,
    count: p.count ?? null,
    sum: p.sum ?? null,
    min: null,
    max: null,
    buckets: p.buckets ? JSON.stringify({ bounds: p.buckets.bounds, counts: p.buckets.counts }) : null,
  }));
  try {
    return writerOf(core).submit({ logs: [], spans: [], points: rows }, rows.length * 160);
  } catch (e) {
    return Promise.reject(e instanceof OpsError ? e : new OpsError("unavailable", "Telemetry could not be written."));
  }
}
