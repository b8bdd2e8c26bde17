/**
 * The metric half of the telemetry writer (writer-store.ts): a point's series is looked up once
 * and cached, a delta point is folded into its series' running total (every series is stored
 * cumulative), and each point is one sample row; a sample older than the rollup watermark is
 * noted for its bucket to be folded again (`LateSamples`). Runs on the writer's connection, inside
 * the transaction of the batch it belongs to.
 */
import type { Database, Statement } from "bun:sqlite";
import type { PointRow } from "./rows";
import { LateSamples } from "./rollups";

interface SeriesState {
  id: number;
  deltaValue: number | null;
  deltaCount: number | null;
  deltaSum: number | null;
}

export class MetricWriter {
  private readonly series = new Map<string, SeriesState>();
  private readonly st: Record<string, Statement>;
  /** Samples written before the rollup watermark; `refresh()` it after a rollup run. */
  readonly late: LateSamples;

  constructor(db: Database) {
    this.late = new LateSamples(db);
    this.st = {
      seriesGet: db.prepare("SELECT id, delta_value, delta_count, delta_sum FROM metric_series WHERE name = ? AND project = ? AND environment = ? AND service = ? AND attrs = ?"),
      seriesAdd: db.prepare("INSERT INTO metric_series (project, environment, service, name, kind, unit, attrs, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"),
      seriesSeen: db.prepare("UPDATE metric_series SET last_seen = max(last_seen, ?), kind = ?, unit = ? WHERE id = ?"),
      seriesDelta: db.prepare("UPDATE metric_series SET delta_value = ?, delta_count = ?, delta_sum = ? WHERE id = ?"),
      sample: db.prepare("INSERT OR REPLACE INTO metric_samples (series, t, value, count, sum, min, max, buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
    };
  }

  private seriesOf(p: PointRow, project: number): SeriesState {
    const k = `${p.name}\u0000${project}\u0000${p.environment}\u0000${p.service}\u0000${p.attrs}`;
    let s = this.series.get(k);
    if (!s) {
      const row = this.st.seriesGet.get(p.name, project, p.environment, p.service, p.attrs) as { id: number; delta_value: number | null; delta_count: number | null; delta_sum: number | null } | null;
      s = row
        ? { id: row.id, deltaValue: row.delta_value, deltaCount: row.delta_count, deltaSum: row.delta_sum }
        : { id: (this.st.seriesAdd.get(project, p.environment, p.service, p.name, p.kind, p.unit, p.attrs, Math.floor(p.ms)) as { id: number }).id, deltaValue: null, deltaCount: null, deltaSum: null };
      if (this.series.size > 100_000) this.series.clear();
      this.series.set(k, s);
    }
    return s;
  }

  /**
   * Write points inside the caller's transaction. `projectId` maps a project's id to its number in
   * telemetry.db; `seenStatement` is the writer's statement recording when a service was last heard from.
   */
  write(rows: PointRow[], projectId: (uuid: string) => number, seenStatement: Statement): void {
    const seen = new Map<string, [number, string, string, number]>();
    const touchedSeries = new Map<number, { s: SeriesState; last: number; kind: string; unit: string }>();
    for (const p of rows) {
      const project = projectId(p.project);
      const s = this.seriesOf(p, project);
      let { value, count, sum } = p;
      if (p.delta) {
        // Store every series as cumulative: a delta point adds to the running total.
        if (value !== null) value = s.deltaValue = (s.deltaValue ?? 0) + value;
        if (count !== null) count = s.deltaCount = (s.deltaCount ?? 0) + count;
        if (sum !== null) sum = s.deltaSum = (s.deltaSum ?? 0) + sum;
        this.st.seriesDelta.run(s.deltaValue, s.deltaCount, s.deltaSum, s.id);
      }
      this.st.sample.run(s.id, Math.floor(p.ms), value, count, sum, p.min, p.max, p.buckets);
      this.late.note(s.id, Math.floor(p.ms));
      const t = touchedSeries.get(s.id);
      if (!t || t.last < p.ms) touchedSeries.set(s.id, { s, last: Math.floor(p.ms), kind: p.kind, unit: p.unit });
      const sk = `${project}\u0000${p.environment}\u0000${p.service}`;
      const prior = seen.get(sk);
      if (!prior || prior[3] < p.ms) seen.set(sk, [project, p.environment, p.service, Math.floor(p.ms)]);
    }
    for (const t of touchedSeries.values()) this.st.seriesSeen.run(t.last, t.kind, t.unit, t.s.id);
    for (const s of seen.values()) seenStatement.run(...s);
  }

  /** Forget the cached series: retention may have deleted some of them. */
  forget(): void {
    this.series.clear();
  }
}
