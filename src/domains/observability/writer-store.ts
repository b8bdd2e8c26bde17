/**
 * Every write to telemetry.db: batches of logs, spans and metric points (writer-metrics.ts), log
 * segment rotation, metric rollups, retention and size eviction. One instance owns one connection
 * and is the only writer of the file; it runs on the writer thread (writer-worker.ts), so a batch's
 * transaction (a few hundred milliseconds for tens of thousands of lines with their trigram index)
 * never stalls the HTTP thread. Each method is one or more IMMEDIATE transactions.
 */
import type { Database, Statement } from "bun:sqlite";
import { KEY_SEQ, keyOf, lowKey, msOfKey } from "./keys";
import { createSegmentTables, dropSegmentTables, ftsTable, listSegments, logTable, LOG_COLUMNS, type SegmentRow } from "./segments";
import type { LogRow, SpanRow, WriteBatch } from "./rows";
import { MetricWriter } from "./writer-metrics";
import { foldRollups } from "./rollups";

const DAY_MS = 86_400_000;
const DELETE_CHUNK = 20_000;

export interface WriterOptions {
  /** A new segment starts past this many lines, past `segmentMaxBytes` of text, and when the newest is a day old. */
  segmentMaxRows: number;
  segmentMaxBytes: number;
}

export interface WriteResult {
  logs: number;
  spans: number;
  points: number;
}

function isKeyConflict(e: unknown): boolean {
  const code = (e as { code?: string }).code ?? "";
  return code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE";
}

export class TelemetryWriter {
  private segments: SegmentRow[];
  private readonly segStatements = new Map<number, { log: Statement; fts: Statement }>();
  private readonly projectIds = new Map<string, number>();
  private readonly metrics: MetricWriter;
  private seq = 0;
  /** Where to go on in a millisecond whose keys ran into each other (see insertKeyed). */
  private readonly nextKey = new Map<number, number>();
  /** Set when eviction had to trim the newest segment: the next write starts a new one, so the old one can be dropped whole. */
  private rotateNext = false;
  private readonly st: Record<string, Statement>;

  constructor(
    private readonly db: Database,
    private readonly opts: WriterOptions,
  ) {
    this.segments = listSegments(db);
    this.metrics = new MetricWriter(db);
    this.st = {
      projectGet: db.prepare("SELECT id FROM obs_projects WHERE project_id = ?"),
      projectAdd: db.prepare("INSERT INTO obs_projects (project_id) VALUES (?) RETURNING id"),
      segAdd: db.prepare("INSERT INTO log_segments (lo, rows, created_at) VALUES (?, 0, ?) RETURNING id"),
      segStats: db.prepare("UPDATE log_segments SET min_key = ?, max_key = ?, rows = ?, bytes = ? WHERE id = ?"),
      volume: db.prepare(
        "INSERT INTO log_volume (minute, project, environment, service, severity, n) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n",
      ),
      seen: db.prepare("INSERT INTO obs_seen (project, environment, service, last_seen) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)"),
      span: db.prepare(
        "INSERT INTO spans (id, project, environment, service, trace_id, span_id, parent_span_id, name, kind, status, duration_ms, method, route, http_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
    };
  }

  private tx<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private projectId(uuid: string): number {
    let id = this.projectIds.get(uuid);
    if (id === undefined) {
      const row = this.st.projectGet.get(uuid) as { id: number } | null;
      id = row ? row.id : (this.st.projectAdd.get(uuid) as { id: number }).id;
      this.projectIds.set(uuid, id);
    }
    return id;
  }

  /** Write one batch in one transaction. */
  write(batch: WriteBatch, now: number): WriteResult {
    return this.writeEach([batch], now);
  }

  /**
   * Write batches in one transaction, each as it is produced: a generator that decodes the next
   * request only when the previous one's rows are in lets each request's rows go before the next
   * is decoded, so a write holds one request's rows at a time, not all of them.
   */
  writeEach(batches: Iterable<WriteBatch>, now: number): WriteResult {
    return this.tx(() => {
      const n: WriteResult = { logs: 0, spans: 0, points: 0 };
      for (const batch of batches) {
        if (batch.logs.length > 0) this.writeLogs(batch.logs, now);
        if (batch.spans.length > 0) this.writeSpans(batch.spans, now);
        if (batch.points.length > 0) this.metrics.write(batch.points, (uuid) => this.projectId(uuid), this.st.seen);
        n.logs += batch.logs.length;
        n.spans += batch.spans.length;
        n.points += batch.points.length;
      }
      return n;
    });
  }

  /**
   * Insert a row under a time key of `ms`: a spread sequence number first; when that key is taken
   * (a burst within one millisecond), the key after the highest one used from there on, and that
   * millisecond remembers where to go on, so a long burst costs one lookup, not one per line.
   * Past 4096 lines in one millisecond the keys run into the next one.
   */
  private insertKeyed(ms: number, table: string, insert: (key: number) => void): number {
    const whole = Math.floor(ms);
    let key = this.nextKey.get(whole) ?? keyOf(whole, this.seq++ & (KEY_SEQ - 1));
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        insert(key);
        if (this.nextKey.has(whole)) this.nextKey.set(whole, key + 1);
        return key;
      } catch (e) {
        if (!isKeyConflict(e)) throw e;
        const taken = this.db.query(`SELECT max(id) AS m FROM ${table} WHERE id >= ? AND id < ?`).get(key, key + 16 * KEY_SEQ) as { m: number };
        key = taken.m + 1;
        if (this.nextKey.size > 10_000) this.nextKey.clear();
        this.nextKey.set(whole, key);
      }
    }
    throw new Error(`no free time key near ${new Date(ms).toISOString()} in ${table}`);
  }

  // ---- logs ---------------------------------------------------------------------------------

  private newSegment(lo: number, now: number): SegmentRow {
    const id = (this.st.segAdd.get(lo, now) as { id: number }).id;
    createSegmentTables(this.db, id);
    const seg: SegmentRow = { id, lo, min_key: null, max_key: null, rows: 0, bytes: 0, created_at: now };
    this.segments.push(seg);
    return seg;
  }

  /** The newest segment, after starting a new one when it is full or a day old. */
  private currentSegment(now: number): SegmentRow {
    const newest = this.segments[this.segments.length - 1];
    if (!newest) return this.newSegment(0, now);
    const full = newest.rows >= this.opts.segmentMaxRows || newest.bytes >= this.opts.segmentMaxBytes;
    if (full || (newest.rows > 0 && now - newest.created_at >= DAY_MS) || (this.rotateNext && newest.max_key !== null)) {
      this.rotateNext = false;
      return this.newSegment(Math.max(newest.lo, newest.max_key ?? newest.lo) + 1, now);
    }
    return newest;
  }

  /** The segment whose range holds `key` (the oldest one for keys older than every range). */
  private segmentFor(key: number): SegmentRow {
    const segs = this.segments;
    let lo = 0;
    let hi = segs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (segs[mid].lo <= key) lo = mid;
      else hi = mid - 1;
    }
    return segs[lo];
  }

  private statementsOf(seg: SegmentRow): { log: Statement; fts: Statement } {
    let s = this.segStatements.get(seg.id);
    if (!s) {
      s = {
        log: this.db.prepare(`INSERT INTO ${logTable(seg.id)} (${LOG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
        fts: this.db.prepare(`INSERT INTO ${ftsTable(seg.id)} (rowid, text) VALUES (?, ?)`),
      };
      this.segStatements.set(seg.id, s);
    }
    return s;
  }

  private writeLogs(rows: LogRow[], now: number): void {
    this.currentSegment(now);
    const touched = new Set<SegmentRow>();
    const volume = new Map<string, { minute: number; project: number; environment: string; service: string; severity: number; n: number }>();
    const seen = new Map<string, [number, string, string, number]>();
    for (const r of rows) {
      const project = this.projectId(r.project);
      const seg = this.segmentFor(keyOf(r.ms, 0));
      const s = this.statementsOf(seg);
      const key = this.insertKeyed(r.ms, logTable(seg.id), (k) =>
        s.log.run(k, project, r.environment, r.service, r.severity, r.level, r.host, r.target, r.message, r.traceId, r.spanId, r.client, r.method, r.route, r.status),
      );
      s.fts.run(key, `${r.target}\n${r.message}`);
      seg.rows++;
      seg.bytes += r.target.length + r.message.length;
      if (seg.min_key === null || key < seg.min_key) seg.min_key = key;
      if (seg.max_key === null || key > seg.max_key) seg.max_key = key;
      touched.add(seg);
      const family = r.severity <= 0 ? 0 : Math.min(21, Math.floor((r.severity - 1) / 4) * 4 + 1);
      const minute = Math.floor(r.ms / 60_000) * 60_000;
      const vk = `${minute}\u0000${project}\u0000${r.environment}\u0000${r.service}\u0000${family}`;
      const v = volume.get(vk);
      if (v) v.n++;
      else volume.set(vk, { minute, project, environment: r.environment, service: r.service, severity: family, n: 1 });
      const sk = `${project}\u0000${r.environment}\u0000${r.service}`;
      const prior = seen.get(sk);
      if (!prior || prior[3] < r.ms) seen.set(sk, [project, r.environment, r.service, Math.floor(r.ms)]);
    }
    for (const seg of touched) this.st.segStats.run(seg.min_key, seg.max_key, seg.rows, seg.bytes, seg.id);
    for (const v of volume.values()) this.st.volume.run(v.minute, v.project, v.environment, v.service, v.severity, v.n);
    for (const s of seen.values()) this.st.seen.run(...s);
  }

  // ---- spans --------------------------------------------------------------------------------

  private writeSpans(rows: SpanRow[], _now: number): void {
    const seen = new Map<string, [number, string, string, number]>();
    for (const r of rows) {
      const project = this.projectId(r.project);
      this.insertKeyed(r.ms, "spans", (k) =>
        this.st.span.run(k, project, r.environment, r.service, r.traceId, r.spanId, r.parentSpanId, r.name, r.kind, r.status, r.durationMs, r.method, r.route, r.httpStatus),
      );
      const sk = `${project}\u0000${r.environment}\u0000${r.service}`;
      const prior = seen.get(sk);
      if (!prior || prior[3] < r.ms) seen.set(sk, [project, r.environment, r.service, Math.floor(r.ms)]);
    }
    for (const s of seen.values()) this.st.seen.run(...s);
  }

  // ---- rollups ------------------------------------------------------------------------------

  /** See rollups.ts. */
  rollup(now: number, rawRetentionMs: number): number {
    const n = foldRollups(this.db, now, rawRetentionMs);
    this.metrics.late.refresh();
    return n;
  }

  // ---- retention and eviction ---------------------------------------------------------------

  /**
   * Delete the rows of `table` whose `column` (indexed) is below `cutoff`, at most about
   * `DELETE_CHUNK` rows per transaction so the writer never holds the lock for long.
   */
  private deleteBefore(table: string, column: string, cutoff: number): number {
    const probe = this.db.prepare(`SELECT ${column} AS v FROM ${table} WHERE ${column} < ? ORDER BY ${column} LIMIT 1 OFFSET ${DELETE_CHUNK}`);
    const below = this.db.prepare(`DELETE FROM ${table} WHERE ${column} < ?`);
    const upTo = this.db.prepare(`DELETE FROM ${table} WHERE ${column} <= ?`);
    let total = 0;
    for (;;) {
      const row = probe.get(cutoff) as { v: number } | null;
      const bound = row ? row.v : cutoff;
      let n = this.tx(() => below.run(bound).changes);
      // Many rows sharing the lowest value: take them together.
      if (n === 0 && row) n = this.tx(() => upTo.run(bound).changes);
      total += n;
      if (!row) return total;
    }
  }

  private dropSegment(seg: SegmentRow): void {
    this.tx(() => {
      dropSegmentTables(this.db, seg.id);
      this.db.query("DELETE FROM log_segments WHERE id = ?").run(seg.id);
    });
    this.segStatements.delete(seg.id);
    this.segments = this.segments.filter((s) => s !== seg);
    // The oldest remaining segment now also takes keys that would have gone to the dropped one.
    const first = this.segments[0];
    if (first && first.lo > seg.lo) {
      first.lo = seg.lo;
      this.db.query("UPDATE log_segments SET lo = ? WHERE id = ?").run(seg.lo, first.id);
    }
  }

  /** Remove every log line older than `cutoffMs`: whole segments dropped, the straddling one trimmed. */
  private dropLogsBefore(cutoffMs: number): number {
    const cutKey = lowKey(cutoffMs);
    let removed = 0;
    for (const seg of [...this.segments]) {
      const newest = seg === this.segments[this.segments.length - 1];
      if (!newest && (seg.max_key === null || seg.max_key < cutKey)) {
        removed += seg.rows;
        this.dropSegment(seg);
      } else if (seg.min_key !== null && seg.min_key < cutKey) {
        // The text goes now; its trigram postings (which hold no text) go with the segment.
        removed += this.deleteBefore(logTable(seg.id), "id", cutKey);
        const range = this.db.query(`SELECT min(id) AS lo, max(id) AS hi, count(*) AS n FROM ${logTable(seg.id)}`).get() as { lo: number | null; hi: number | null; n: number };
        seg.min_key = range.lo;
        seg.max_key = range.hi ?? seg.max_key;
        seg.rows = range.n;
        this.st.segStats.run(seg.min_key, seg.max_key, seg.rows, seg.bytes, seg.id);
        if (!newest && range.n === 0) this.dropSegment(seg);
      }
    }
    return removed;
  }

  /**
   * Retention: logs, spans, raw samples and the log volume older than `rawCutoffMs`, rollups older
   * than `rollupCutoffMs`, and series and "seen" rows nothing refers to any more. Deletes
   * everything past the cut-off however long ops was down.
   */
  retention(rawCutoffMs: number, rollupCutoffMs: number): { logs: number; spans: number; samples: number; rollups: number } {
    const logs = this.dropLogsBefore(rawCutoffMs);
    const spans = this.deleteBefore("spans", "id", lowKey(rawCutoffMs));
    const samples = this.deleteBefore("metric_samples", "t", Math.floor(rawCutoffMs));
    this.deleteBefore("log_volume", "minute", Math.floor(rawCutoffMs));
    const rollups = this.deleteBefore("metric_rollups", "t", Math.floor(rollupCutoffMs));
    this.tx(() => {
      this.db.query("DELETE FROM metric_series WHERE last_seen < ? AND NOT EXISTS (SELECT 1 FROM metric_samples s WHERE s.series = metric_series.id) AND NOT EXISTS (SELECT 1 FROM metric_rollups r WHERE r.series = metric_series.id)").run(Math.floor(rollupCutoffMs));
      this.db.query("DELETE FROM obs_seen WHERE last_seen < ?").run(Math.floor(rawCutoffMs));
    });
    this.metrics.forget();
    return { logs, spans, samples, rollups };
  }

  /** Bytes the file's live pages take (freed pages are reused, so they do not count). */
  usedBytes(): number {
    const pages = (this.db.query("PRAGMA page_count").get() as { page_count: number }).page_count;
    const free = (this.db.query("PRAGMA freelist_count").get() as { freelist_count: number }).freelist_count;
    const size = (this.db.query("PRAGMA page_size").get() as { page_size: number }).page_size;
    return (pages - free) * size;
  }

  /** The oldest stored log, span or raw sample, in epoch ms, or null when there is none. */
  private oldestMs(): number | null {
    const candidates: number[] = [];
    const seg = this.segments.find((s) => s.min_key !== null);
    if (seg?.min_key !== null && seg?.min_key !== undefined) candidates.push(msOfKey(seg.min_key));
    const span = this.db.query("SELECT min(id) AS k FROM spans").get() as { k: number | null };
    if (span.k !== null) candidates.push(msOfKey(span.k));
    const sample = this.db.query("SELECT min(t) AS t FROM metric_samples").get() as { t: number | null };
    if (sample.t !== null) candidates.push(sample.t);
    return candidates.length === 0 ? null : Math.min(...candidates);
  }

  /**
   * Keep the file's live bytes under `maxBytes` by removing the oldest telemetry first: each round
   * cuts everything older than a step past the oldest timestamp (a twentieth of the time kept),
   * across logs, spans and raw samples; rollups go last. Returns the rounds taken.
   */
  evict(maxBytes: number, now: number): number {
    let rounds = 0;
    while (this.usedBytes() > maxBytes && rounds < 1000) {
      const oldest = this.oldestMs();
      if (oldest === null) {
        const r = this.db.query("SELECT min(t) AS t FROM metric_rollups").get() as { t: number | null };
        if (r.t === null) break;
        this.deleteBefore("metric_rollups", "t", r.t + DAY_MS);
      } else {
        const cut = oldest + Math.max(1000, (now - oldest) / 20);
        if (this.segments.length === 1) this.rotateNext = true;
        this.dropLogsBefore(cut);
        this.deleteBefore("spans", "id", lowKey(cut));
        this.deleteBefore("metric_samples", "t", Math.floor(cut));
        this.deleteBefore("log_volume", "minute", Math.floor(cut));
        if (this.oldestMs() === oldest) break;
      }
      rounds++;
    }
    return rounds;
  }
}
