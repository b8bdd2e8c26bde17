/**
 * Metric rollups: raw samples folded into 5-minute buckets per series (gauges: average, min, max
 * and sample count; counters and histograms: their last cumulative value in the bucket), run by
 * the writer thread for the `observability.rollup` task.
 */
import type { Database, Statement } from "bun:sqlite";

export const ROLLUP_MS = 300_000;
/** A bucket is first folded this long after it ends (points a little late are in it). */
export const ROLLUP_GRACE_MS = 60_000;
/** Each run folds the buckets of this span before its watermark again, so later points still count. */
export const ROLLUP_REFOLD_MS = 15 * 60_000;

function tx<T>(db: Database, fn: () => T): T {
  return db.transaction(fn).immediate();
}

function watermark(db: Database): number | undefined {
  return (db.query("SELECT value FROM obs_state WHERE key = 'rollup_until'").get() as { value: number } | null)?.value;
}

/**
 * Notes the series and bucket of each sample written before the rollup watermark in
 * `metric_refold`, for the next run to fold again (docs/decisions/0292). Kept by the writer, the
 * only one who moves the watermark, so a sample costs one comparison (a trigger doing the same
 * doubled the cost of a sample's insert).
 */
export class LateSamples {
  private until: number;
  private readonly put: Statement;

  constructor(private readonly db: Database) {
    this.put = db.prepare("INSERT OR IGNORE INTO metric_refold (series, t) VALUES (?, ?)");
    this.until = watermark(db) ?? -Infinity;
  }

  /** A sample of `series` at `t` (ms) was written. */
  note(series: number, t: number): void {
    if (t < this.until) this.put.run(series, Math.floor(t / ROLLUP_MS) * ROLLUP_MS);
  }

  /** Read the watermark again (after a rollup run). */
  refresh(): void {
    this.until = watermark(this.db) ?? -Infinity;
  }
}

type SampleRow = { series: number; t: number; value: number | null; count: number | null; sum: number | null; min: number | null; max: number | null; buckets: string | null; kind: string };
type RollupRow = [series: number, t: number, value: number | null, min: number | null, max: number | null, n: number, count: number | null, sum: number | null, buckets: string | null];

/** Fold samples ordered by series and time into one rollup row per series and bucket. */
function* foldSamples(rows: Iterable<SampleRow>): Generator<RollupRow> {
  type Acc = { series: number; t: number; kind: string; sum: number; n: number; min: number | null; max: number | null; last: number | null; count: number | null; hsum: number | null; buckets: string | null };
  let acc: Acc | null = null;
  const row = (a: Acc): RollupRow => [a.series, a.t, a.kind === "gauge" ? (a.n > 0 ? a.sum / a.n : null) : a.last, a.min, a.max, a.n, a.count, a.hsum, a.buckets];
  for (const r of rows) {
    const bucket = Math.floor(r.t / ROLLUP_MS) * ROLLUP_MS;
    if (!acc || acc.series !== r.series || acc.t !== bucket) {
      if (acc) yield row(acc);
      acc = { series: r.series, t: bucket, kind: r.kind, sum: 0, n: 0, min: null, max: null, last: null, count: null, hsum: null, buckets: null };
    }
    acc.n++;
    if (r.kind === "histogram") {
      acc.count = r.count;
      acc.hsum = r.sum;
      acc.buckets = r.buckets;
      if (r.min !== null) acc.min = acc.min === null ? r.min : Math.min(acc.min, r.min);
      if (r.max !== null) acc.max = acc.max === null ? r.max : Math.max(acc.max, r.max);
    } else if (r.value !== null) {
      acc.sum += r.value;
      acc.last = r.value;
      acc.min = acc.min === null ? r.value : Math.min(acc.min, r.value);
      acc.max = acc.max === null ? r.value : Math.max(acc.max, r.value);
    }
  }
  if (acc) yield row(acc);
}

const SAMPLE_COLUMNS = "s.series, s.t, s.value, s.count, s.sum, s.min, s.max, s.buckets, m.kind FROM metric_samples s JOIN metric_series m ON m.id = s.series";
const PUT = "INSERT OR REPLACE INTO metric_rollups (series, t, value, min, max, n, count, sum, buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";

/**
 * Fold raw samples into 5-minute rollups for every bucket that ended at least a minute ago and
 * was not folded yet (the watermark `rollup_until`), so a stop of any length (within the raw
 * retention) is caught up by the next run; the last 15 minutes before the watermark are folded
 * again, so points that arrive late still count in their bucket. Points later than that (an
 * exporter that was offline for days, a backfill) are noted with their series and bucket in
 * `metric_refold` as they are written (`LateSamples`), and just those buckets are folded again
 * (docs/decisions/0292). Returns the buckets written.
 */
export function foldRollups(db: Database, now: number, rawRetentionMs: number): number {
  const until = Math.floor((now - ROLLUP_GRACE_MS) / ROLLUP_MS) * ROLLUP_MS;
  const mark = watermark(db);
  let from = mark !== undefined ? mark - ROLLUP_REFOLD_MS : (db.query("SELECT min(t) AS t FROM metric_samples").get() as { t: number | null }).t;
  if (from === null || from === undefined) return 0;
  from = Math.max(Math.floor(from / ROLLUP_MS) * ROLLUP_MS, Math.floor((now - rawRetentionMs) / ROLLUP_MS) * ROLLUP_MS);
  let written = refoldLate(db, from);
  const select = db.prepare(`SELECT ${SAMPLE_COLUMNS} WHERE s.t >= ? AND s.t < ? ORDER BY s.series, s.t`);
  const put = db.prepare(PUT);
  // An hour of buckets per transaction: the writer stays responsive while it catches up.
  for (let start = from; start < until; start += 12 * ROLLUP_MS) {
    const end = Math.min(until, start + 12 * ROLLUP_MS);
    written += tx(db, () => {
      let n = 0;
      for (const r of foldSamples(select.iterate(start, end) as IterableIterator<SampleRow>)) {
        put.run(...r);
        n++;
      }
      db.query("INSERT INTO obs_state (key, value) VALUES ('rollup_until', ?) ON CONFLICT DO UPDATE SET value = excluded.value").run(end);
      return n;
    });
  }
  // Buckets noted while this run folded them anyway.
  db.query("DELETE FROM metric_refold WHERE t >= ?").run(from);
  return written;
}

/**
 * Fold again the buckets noted in `metric_refold` before `from` (the ones the regular run does
 * not reach), a few hundred per transaction; a bucket whose samples are gone (past the raw
 * retention) keeps its rollup. Returns the buckets written.
 */
function refoldLate(db: Database, from: number): number {
  const next = db.prepare("SELECT series, t FROM metric_refold WHERE t < ? ORDER BY series, t LIMIT 500");
  const select = db.prepare(`SELECT ${SAMPLE_COLUMNS} WHERE s.series = ? AND s.t >= ? AND s.t < ? ORDER BY s.t`);
  const done = db.prepare("DELETE FROM metric_refold WHERE series = ? AND t = ?");
  const put = db.prepare(PUT);
  let written = 0;
  for (;;) {
    const batch = next.all(from) as Array<{ series: number; t: number }>;
    if (batch.length === 0) return written;
    written += tx(db, () => {
      let n = 0;
      for (const b of batch) {
        for (const r of foldSamples(select.iterate(b.series, b.t, b.t + ROLLUP_MS) as IterableIterator<SampleRow>)) {
          put.run(...r);
          n++;
        }
        done.run(b.series, b.t);
      }
      return n;
    });
  }
}
