/**
 * Log segments: logs are stored in time-ordered segments, each a content table `logs_<n>` (row id
 * = the line's time key, keys.ts) and a contentless FTS5 trigram index `logs_fts_<n>` over
 * `target \n message`. The catalog is `log_segments`; the writer creates a new segment when the
 * newest one is full (rows) or a day old, so retention and eviction drop whole segments (a DROP
 * TABLE, not millions of index deletes), and a search reads newest segments first and stops when
 * it has enough lines. docs/decisions/0415-observability.md ("Log search") explains the plan and its measurements.
 */
import type { Database } from "bun:sqlite";

export interface SegmentRow {
  id: number;
  /** Lowest key this segment takes (the one after it starts where it ends). */
  lo: number;
  /** Lowest and highest key stored (null while empty). */
  min_key: number | null;
  max_key: number | null;
  rows: number;
  /** Text stored (target and message), the measure segments are sized by. */
  bytes: number;
  created_at: number;
}

export const logTable = (id: number) => `logs_${id}`;
export const ftsTable = (id: number) => `logs_fts_${id}`;

/** Columns of a segment's content table, in insert order. */
export const LOG_COLUMNS = "id, project, environment, service, severity, level, host, target, message, trace_id, span_id, client, method, route, status";

/** Create segment `id`'s two tables. */
export function createSegmentTables(db: Database, id: number): void {
  db.exec(`CREATE TABLE ${logTable(id)} (
    id INTEGER PRIMARY KEY,
    project INTEGER NOT NULL,
    environment TEXT NOT NULL,
    service TEXT NOT NULL,
    severity INTEGER NOT NULL,
    level TEXT,
    host TEXT NOT NULL,
    target TEXT NOT NULL,
    message TEXT NOT NULL,
    trace_id TEXT,
    span_id TEXT,
    client TEXT,
    method TEXT,
    route TEXT,
    status TEXT
  )`);
  // Contentless (the text lives in logs_<n>), no positions (detail=none: substring search needs
  // only "which rows hold every trigram"), no column sizes: the smallest and fastest index to write.
  db.exec(`CREATE VIRTUAL TABLE ${ftsTable(id)} USING fts5(text, content='', tokenize='trigram', detail=none, columnsize=0)`);
  // Merge index segments less eagerly than the default (4): ingest spends less time merging, and
  // a search still touches few enough of them.
  db.exec(`INSERT INTO ${ftsTable(id)} (${ftsTable(id)}, rank) VALUES ('automerge', 8)`);
}

/** Drop segment `id`'s tables (the catalog row is the caller's). */
export function dropSegmentTables(db: Database, id: number): void {
  db.exec(`DROP TABLE IF EXISTS ${ftsTable(id)}`);
  db.exec(`DROP TABLE IF EXISTS ${logTable(id)}`);
}

/** The catalog, oldest first. */
export function listSegments(db: Database): SegmentRow[] {
  return db.query("SELECT id, lo, min_key, max_key, rows, bytes, created_at FROM log_segments ORDER BY lo").all() as SegmentRow[];
}
