/**
 * Metric reads: names and services seen in the last 24 hours, and a metric's series bucketed on
 * the server, one series per service.
 *
 * Which data: a window that lies inside the raw retention (14 days by default) reads the raw
 * samples (`source: raw`); one that reaches further back reads the 5-minute rollups (`source:
 * rollup`, buckets of at least 5 minutes). A name no series has answers `kind: unknown`. A bucket's value, per service:
 * - gauge: the average of the samples in the bucket (over every label set), with their min and max;
 * - counter: for each label set its last cumulative value at the bucket's end (carried forward
 *   from earlier buckets, and from before the window, up to its latest sample), summed across
 *   label sets;
 * - histogram: the mean of the values observed during the bucket (growth of the summed `sum`
 *   over growth of the summed `count`), with the min and max the points reported.
 */
import type { Database } from "bun:sqlite";
import { iso } from "../../core/clock";
import { ROLLUP_MS } from "./rollups";
import { scopeSql, type Scope } from "./visibility";
import type { MetricName, MetricSeries, SeriesPoint, SeriesResponse } from "./model";

const DAY_MS = 86_400_000;
/** Buckets of a chart at most (the step is rounded up to a tidy length). */
const MAX_POINTS = 240;
const STEPS_S = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

/** Names seen in the last 24 hours (with their kind), by name. */
export function metricNames(db: Database, scope: Scope, now: number): MetricName[] {
  if (scope.projects.length === 0) return [];
  const where = scopeSql(scope);
  return db.query(`SELECT DISTINCT name, kind FROM metric_series WHERE last_seen >= ? AND ${where.sql} ORDER BY name, kind`).all(now - DAY_MS, ...where.params) as MetricName[];
}

/** Services that sent any telemetry in the last 24 hours. */
export function servicesSeen(db: Database, scope: Scope, now: number): string[] {
  if (scope.projects.length === 0) return [];
  const where = scopeSql(scope);
  return (db.query(`SELECT DISTINCT service FROM obs_seen WHERE last_seen >= ? AND ${where.sql} ORDER BY service`).all(now - DAY_MS, ...where.params) as Array<{ service: string }>).map((r) => r.service);
}

/** A tidy bucket length for a window, in seconds. */
export function bucketSeconds(windowMs: number, minSeconds: number): number {
  const want = Math.max(minSeconds, Math.ceil(windowMs / 1000 / MAX_POINTS));
  return STEPS_S.find((s) => s >= want && s % minSeconds === 0) ?? Math.ceil(want / minSeconds) * minSeconds;
}

interface SeriesRow {
  id: number;
  service: string;
  kind: string;
}

interface DataRow {
  series: number;
  t: number;
  value: number | null;
  min: number | null;
  max: number | null;
  n: number;
  count: number | null;
  sum: number | null;
}

export interface SeriesSearch {
  scope: Scope;
  name: string;
  service: string | null;
  fromMs: number;
  toMs: number;
  now: number;
  rawRetentionMs: number;
}

/** The series of a metric, per service. */
export function metricSeries(db: Database, s: SeriesSearch): SeriesResponse {
  // The spec's switch: a window that lies inside the raw retention (14 days) reads raw samples,
  // however wide; one that reaches past it reads the rollups.
  const raw = s.fromMs >= s.now - s.rawRetentionMs;
  const source = raw ? "raw" : "rollup";
  let step = bucketSeconds(s.toMs - s.fromMs, raw ? 10 : ROLLUP_MS / 1000);
  // A name nobody sent has no kind: say so rather than guess one.
  const empty: SeriesResponse = { bucket_seconds: step, kind: "unknown", name: s.name, series: [], source };
  if (s.scope.projects.length === 0) return empty;
  const where = scopeSql(s.scope);
  const serviceClause = s.service !== null ? " AND service = ?" : "";
  const series = db
    .query(`SELECT id, service, kind FROM metric_series WHERE name = ? AND ${where.sql}${serviceClause} ORDER BY service, id`)
    .all(s.name, ...where.params, ...(s.service !== null ? [s.service] : [])) as SeriesRow[];
  if (series.length === 0) return empty;
  // A name should have one kind; if senders disagree, the most common one is charted.
  const kinds = new Map<string, number>();
  for (const r of series) kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1);
  const kind = [...kinds].sort((a, b) => b[1] - a[1])[0][0];
  const chosen = series.filter((r) => r.kind === kind);
  const ids = chosen.map((r) => r.id).join(", ");
  if (raw) step = bucketSeconds(s.toMs - s.fromMs, Math.max(10, sendingInterval(db, chosen, s.fromMs, s.toMs)));
  const stepMs = step * 1000;
  const start = Math.floor(s.fromMs / stepMs) * stepMs;
  const buckets: number[] = [];
  for (let b = start; b <= s.toMs && buckets.length <= MAX_POINTS * 2; b += stepMs) buckets.push(b);

  const table = raw ? "metric_samples" : "metric_rollups";
  const cols = raw ? "series, t, value, min, max, 1 AS n, count, sum" : "series, t, value, min, max, n, count, sum";
  const rows = db.query(`SELECT ${cols} FROM ${table} WHERE series IN (${ids}) AND t >= ? AND t <= ? ORDER BY series, t`).all(start, s.toMs) as DataRow[];
  // Cumulative kinds carry each label set's last value in from before the window.
  const carryIn = new Map<number, DataRow>();
  if (kind !== "gauge") {
    const before = db.query(`SELECT ${cols} FROM ${table} WHERE series = ? AND t < ? ORDER BY t DESC LIMIT 1`);
    for (const r of chosen) {
      const row = before.get(r.id, start) as DataRow | null;
      if (row) carryIn.set(r.id, row);
    }
  }
  const byService = new Map<string, number[]>();
  for (const r of chosen) byService.set(r.service, [...(byService.get(r.service) ?? []), r.id]);
  const bySeries = new Map<number, DataRow[]>();
  for (const r of rows) {
    const list = bySeries.get(r.series);
    if (list) list.push(r);
    else bySeries.set(r.series, [r]);
  }
  const out: MetricSeries[] = [];
  for (const [service, seriesIds] of byService) {
    const points = kind === "gauge" ? gaugePoints(buckets, stepMs, seriesIds, bySeries) : cumulativePoints(kind, buckets, stepMs, seriesIds, bySeries, carryIn);
    out.push({ service, points });
  }
  return { bucket_seconds: step, kind, name: s.name, series: out, source };
}

/**
 * The interval (whole seconds) at which these series were sent, from their latest samples: a
 * bucket shorter than that would hold no sample most of the time (gaps in gauges, a staircase in
 * counters), so raw buckets are never shorter.
 */
function sendingInterval(db: Database, series: SeriesRow[], fromMs: number, toMs: number): number {
  const latest = db.query("SELECT t FROM metric_samples WHERE series = ? AND t >= ? AND t <= ? ORDER BY t DESC LIMIT 16");
  const gaps: number[] = [];
  for (const r of series.slice(0, 8)) {
    const ts = (latest.all(r.id, fromMs, toMs) as Array<{ t: number }>).map((x) => x.t);
    for (let i = 1; i < ts.length; i++) gaps.push(ts[i - 1] - ts[i]);
  }
  if (gaps.length === 0) return 0;
  gaps.sort((a, b) => a - b);
  return Math.ceil(gaps[Math.floor(gaps.length / 2)] / 1000);
}

function bucketIndex(t: number, first: number, stepMs: number): number {
  return Math.floor((t - first) / stepMs);
}

function gaugePoints(buckets: number[], stepMs: number, ids: number[], data: Map<number, DataRow[]>): SeriesPoint[] {
  const sum = new Float64Array(buckets.length);
  const n = new Float64Array(buckets.length);
  const min: Array<number | null> = buckets.map(() => null);
  const max: Array<number | null> = buckets.map(() => null);
  for (const id of ids) {
    for (const r of data.get(id) ?? []) {
      const i = bucketIndex(r.t, buckets[0], stepMs);
      if (i < 0 || i >= buckets.length || r.value === null) continue;
      // Rollup rows carry their own average over n samples.
      sum[i] += r.value * r.n;
      n[i] += r.n;
      const lo = r.min ?? r.value;
      const hi = r.max ?? r.value;
      min[i] = min[i] === null ? lo : Math.min(min[i]!, lo);
      max[i] = max[i] === null ? hi : Math.max(max[i]!, hi);
    }
  }
  return buckets.map((b, i) => ({ t: iso(b), value: n[i] > 0 ? sum[i] / n[i] : null, min: min[i], max: max[i] }));
}

function cumulativePoints(kind: string, buckets: number[], stepMs: number, ids: number[], data: Map<number, DataRow[]>, carryIn: Map<number, DataRow>): SeriesPoint[] {
  const histogram = kind === "histogram";
  // Per bucket, summed over label sets: the last value (counters) or count and sum (histograms).
  const total = new Float64Array(buckets.length);
  const totalSum = new Float64Array(buckets.length);
  const has = new Uint8Array(buckets.length);
  const min: Array<number | null> = buckets.map(() => null);
  const max: Array<number | null> = buckets.map(() => null);
  let before = 0;
  let beforeSum = 0;
  let hasBefore = false;
  for (const id of ids) {
    let last: DataRow | null = carryIn.get(id) ?? null;
    if (last) {
      before += (histogram ? last.count : last.value) ?? 0;
      beforeSum += last.sum ?? 0;
      hasBefore = true;
    }
    const rows = data.get(id) ?? [];
    // Carried forward between samples, not past the last one: after it the count is not known.
    const lastT = rows.length > 0 ? rows[rows.length - 1].t : (last?.t ?? Number.NEGATIVE_INFINITY);
    let k = 0;
    for (let i = 0; i < buckets.length; i++) {
      if (buckets[i] > lastT) break;
      const end = buckets[i] + stepMs;
      while (k < rows.length && rows[k].t < end) {
        const r = rows[k++];
        last = r;
        if (histogram && r.t >= buckets[i]) {
          if (r.min !== null) min[i] = min[i] === null ? r.min : Math.min(min[i]!, r.min);
          if (r.max !== null) max[i] = max[i] === null ? r.max : Math.max(max[i]!, r.max);
        }
      }
      if (!last) continue;
      total[i] += (histogram ? last.count : last.value) ?? 0;
      totalSum[i] += last.sum ?? 0;
      has[i] = 1;
    }
  }
  return buckets.map((b, i) => {
    if (!has[i]) return { t: iso(b), value: null, min: null, max: null };
    if (!histogram) return { t: iso(b), value: total[i], min: null, max: null };
    const prevCount = i > 0 && has[i - 1] ? total[i - 1] : hasBefore ? before : 0;
    const prevSum = i > 0 && has[i - 1] ? totalSum[i - 1] : hasBefore ? beforeSum : 0;
    const dc = total[i] - prevCount;
    return { t: iso(b), value: dc > 0 ? (totalSum[i] - prevSum) / dc : null, min: min[i], max: max[i] };
  });
}
