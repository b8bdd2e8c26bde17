/**
 * Trace reads: root spans (no parent), one per trace, newest first; and one trace's spans in start
 * order. A span's row id is its start time key (keys.ts), so both orders are the index's own.
 */
import type { Database } from "bun:sqlite";
import { iso } from "../../core/clock";
import { highKey, lowKey, msOfKey } from "./keys";
import { scopeSql, slugOf, type Scope } from "./visibility";
import type { SpanEntry } from "./model";

interface SpanDbRow {
  id: number;
  project: number;
  environment: string;
  service: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind: string | null;
  status: string;
  duration_ms: number;
  method: string | null;
  route: string | null;
  http_status: string | null;
}

/** Root spans read at most for one list (a trace id repeats only for traces with several roots). */
const ROOT_SCAN_CAP = 200_000;

const COLUMNS = "id, project, environment, service, trace_id, span_id, parent_span_id, name, kind, status, duration_ms, method, route, http_status";

function toEntry(r: SpanDbRow, scope: Scope): SpanEntry {
  return {
    duration_ms: r.duration_ms,
    environment: r.environment,
    http_status: r.http_status,
    kind: r.kind,
    method: r.method,
    name: r.name,
    parent_span_id: r.parent_span_id,
    project: slugOf(scope, r.project),
    route: r.route,
    service: r.service,
    span_id: r.span_id,
    status: r.status,
    timestamp: iso(msOfKey(r.id)),
    trace_id: r.trace_id,
  };
}

export interface TraceSearch {
  scope: Scope;
  service: string | null;
  q: string | null;
  status: string | null;
  fromMs: number;
  toMs: number;
  limit: number;
}

/** Root spans, one per trace (the newest root when a trace has several), newest first. */
export function listTraces(db: Database, s: TraceSearch): SpanEntry[] {
  if (s.scope.projects.length === 0) return [];
  const scope = scopeSql(s.scope);
  const parts = ["parent_span_id IS NULL", "id BETWEEN ? AND ?", scope.sql];
  const params: Array<string | number> = [lowKey(s.fromMs), highKey(s.toMs), ...scope.params];
  if (s.service !== null) {
    parts.push("service = ?");
    params.push(s.service);
  }
  if (s.status !== null) {
    parts.push("status = ?");
    params.push(s.status.toUpperCase());
  }
  const ascii = s.q === null || /^[\x20-\x7e]*$/.test(s.q);
  if (s.q !== null && ascii) {
    parts.push("name LIKE ? ESCAPE '\\'");
    params.push(`%${s.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  }
  const st = db.query(`SELECT ${COLUMNS} FROM spans WHERE ${parts.join(" AND ")} ORDER BY id DESC LIMIT ?`);
  const lq = s.q?.toLowerCase() ?? "";
  const seen = new Set<string>();
  const out: SpanEntry[] = [];
  // `limit` counts traces, not root spans: rows are read (lazily) until that many distinct traces
  // are found, however many roots one trace has; the cap bounds the scan of a pathological window.
  for (const r of st.iterate(...params, ROOT_SCAN_CAP) as IterableIterator<SpanDbRow>) {
    if (!ascii && !r.name.toLowerCase().includes(lq)) continue;
    if (seen.has(r.trace_id)) continue;
    seen.add(r.trace_id);
    out.push(toEntry(r, s.scope));
    if (out.length >= s.limit) break;
  }
  return out;
}

/** Every span of a trace the caller may see, in start order; empty when none is visible. */
export function traceSpans(db: Database, scope: Scope, traceId: string): SpanEntry[] {
  if (scope.projects.length === 0 || !/^[0-9a-f]{32}$/.test(traceId)) return [];
  const where = scopeSql(scope);
  const rows = db.query(`SELECT ${COLUMNS} FROM spans WHERE trace_id = ? AND ${where.sql} ORDER BY id`).all(traceId, ...where.params) as SpanDbRow[];
  return rows.map((r) => toEntry(r, scope));
}
