/**
 * The read routes' service functions: parameters checked and turned into a scope (visibility.ts)
 * and a time window, then handed to the search, trace and metric readers. Reads run on the HTTP
 * thread's own connection to telemetry.db (WAL: they never wait for the writer).
 */
import type { Core } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import { parseTimeParam } from "../../core/clock";
import { OpsError, invalid } from "../../core/errors";
import { readScope } from "./visibility";
import { logVolume, parseLevels, searchLogs } from "./search";
import { listTraces, traceSpans } from "./traces";
import { bucketSeconds, metricNames, metricSeries, servicesSeen } from "./metrics";
import { FUTURE_SLACK_MS } from "./ingest";
import type { LogEntry, LogVolumeResponse, MetricName, SeriesResponse, SpanEntry } from "./model";

const DAY_MS = 86_400_000;

interface ScopeParams {
  project?: string;
  environment?: string;
}

interface WindowParams {
  from?: string;
  to?: string;
}

/** `project` may be given once: a repeated one is refused (422), never silently narrowed to one. */
export function assertSingleProject(url: string): void {
  const q = url.indexOf("?");
  if (q >= 0 && new URLSearchParams(url.slice(q + 1)).getAll("project").length > 1) {
    throw new OpsError("validation_failed", "project: give one project, or none for every project you may read.", { fields: [{ path: "project", message: "repeated" }] });
  }
}

/** The window of `from`/`to` (RFC 3339 or relative), with defaults; 422 when unreadable or reversed. */
export function timeWindow(core: Core, p: WindowParams, defaultFromMs: number): { fromMs: number; toMs: number; now: number } {
  const now = core.clock.now();
  const parse = (field: "from" | "to", text: string | undefined, fallback: number) => {
    if (text === undefined || text === "") return fallback;
    const ms = parseTimeParam(text, now);
    if (ms === null) throw invalid(field, "use RFC 3339 (2026-11-21T21:55:00Z) or a relative time such as 15m, 24h, 7d");
    return ms;
  };
  const fromMs = parse("from", p.from, defaultFromMs);
  const toMs = parse("to", p.to, now + FUTURE_SLACK_MS);
  if (fromMs > toMs) throw invalid("from", "must not be later than to");
  return { fromMs, toMs, now };
}

function levels(text: string | undefined): Array<[number, number]> {
  const parsed = parseLevels(text);
  if (parsed === null) throw invalid("level", "use trace, debug, info, warn, error, fatal or unspecified, comma-separated");
  return parsed;
}

const retentionMs = (core: Core) => core.config.logRetentionDays * DAY_MS;

export function readLogs(core: Core, principal: Principal, p: ScopeParams & WindowParams & { service?: string; level?: string; q?: string; limit?: number }): LogEntry[] {
  const w = timeWindow(core, p, core.clock.now() - retentionMs(core));
  return searchLogs(core.telemetrySqlite, {
    scope: readScope(core, principal, p),
    q: p.q ? p.q : null,
    service: p.service || null,
    levels: levels(p.level),
    fromMs: w.fromMs,
    toMs: w.toMs,
    limit: p.limit ?? 200,
  });
}

export function readLogVolume(core: Core, principal: Principal, p: ScopeParams & WindowParams & { service?: string; level?: string }): LogVolumeResponse {
  const w = timeWindow(core, p, core.clock.now() - 3_600_000);
  const step = bucketSeconds(w.toMs - w.fromMs, 60);
  const buckets = logVolume(core.telemetrySqlite, { scope: readScope(core, principal, p), service: p.service || null, levels: levels(p.level), fromMs: w.fromMs, toMs: Math.min(w.toMs, w.now) }, step * 1000);
  return { bucket_seconds: step, buckets };
}

export function readServices(core: Core, principal: Principal, p: ScopeParams): string[] {
  return servicesSeen(core.telemetrySqlite, readScope(core, principal, p), core.clock.now());
}

export function readMetricNames(core: Core, principal: Principal, p: ScopeParams): MetricName[] {
  return metricNames(core.telemetrySqlite, readScope(core, principal, p), core.clock.now());
}

export function readSeries(core: Core, principal: Principal, p: ScopeParams & WindowParams & { name: string; service?: string }): SeriesResponse {
  const w = timeWindow(core, { from: p.from, to: p.to ?? "0s" }, core.clock.now() - 3_600_000);
  return metricSeries(core.telemetrySqlite, {
    scope: readScope(core, principal, p),
    name: p.name,
    service: p.service || null,
    fromMs: w.fromMs,
    toMs: w.toMs,
    now: w.now,
    rawRetentionMs: retentionMs(core),
  });
}

export function readTraces(core: Core, principal: Principal, p: ScopeParams & WindowParams & { service?: string; q?: string; status?: string; limit?: number }): SpanEntry[] {
  const w = timeWindow(core, p, core.clock.now() - retentionMs(core));
  return listTraces(core.telemetrySqlite, {
    scope: readScope(core, principal, p),
    service: p.service || null,
    q: p.q ? p.q : null,
    status: p.status || null,
    fromMs: w.fromMs,
    toMs: w.toMs,
    limit: p.limit ?? 50,
  });
}

/** A trace's spans in start order; 404 when none of it is in a project (and environment) the caller may read. */
export function readTrace(core: Core, principal: Principal, traceId: string, p: ScopeParams): SpanEntry[] {
  const spans = traceSpans(core.telemetrySqlite, readScope(core, principal, p), traceId.toLowerCase());
  if (spans.length === 0) throw new OpsError("not_found", "No such trace, or none of it in a project you may read.");
  return spans;
}
