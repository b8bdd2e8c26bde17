/**
 * Log search: the newest `limit` lines matching the filters and a case-insensitive substring `q`
 * of the message or target.
 *
 * The plan (docs/decisions/0415-observability.md, "Log search"): segments are read newest first and the search stops
 * as soon as it has `limit` lines. In each segment a `q` of three or more characters goes through
 * the segment's trigram index — every trigram of `q` must be in the line — walked in descending row
 * id, which is descending time (keys.ts), so FTS5 streams candidates newest first and stops early
 * for a common term, while a rare or absent term costs a few index lookups per segment. Candidates
 * are then checked for the real substring (the index only says "has every trigram"): in SQL with
 * `LIKE` when `q` is ASCII (SQLite's LIKE folds ASCII case), in JavaScript with full Unicode case
 * folding otherwise. A `q` of one or two characters has no trigram and scans newest first.
 */
import type { Database, Statement } from "bun:sqlite";
import { iso } from "../../core/clock";
import { highKey, lowKey, msOfKey } from "./keys";
import { ftsTable, listSegments, logTable } from "./segments";
import { levelOf, LEVELS, severityRange, type LevelName } from "./rows";
import { scopeSql, slugOf, type Scope } from "./visibility";
import type { LogEntry } from "./model";

export interface LogSearch {
  scope: Scope;
  q: string | null;
  service: string | null;
  /** Severity ranges, any of which matches; empty = every level. */
  levels: Array<[number, number]>;
  fromMs: number;
  toMs: number;
  limit: number;
}

interface LogDbRow {
  id: number;
  project: number;
  environment: string;
  service: string;
  severity: number;
  level: string | null;
  host: string;
  target: string;
  message: string;
  span_id: string | null;
  client: string | null;
  method: string | null;
  route: string | null;
  status: string | null;
}

const COLUMNS = "l.id, l.project, l.environment, l.service, l.severity, l.level, l.host, l.target, l.message, l.span_id, l.client, l.method, l.route, l.status";
/** Candidates fetched per step when the substring check runs in JavaScript. */
const PAGE = 500;
/**
 * Trigrams used from a long `q`, spread over it. More is not better: each one more is another
 * posting list to walk, and for a phrase of common words six measured faster than twelve or all
 * (docs/decisions/0415-observability.md, "Log search").
 */
const MAX_TRIGRAMS = 6;

/** Parse `level=warn,error` into severity ranges; null names an unknown level. */
export function parseLevels(text: string | undefined): Array<[number, number]> | null {
  if (!text) return [];
  const out: Array<[number, number]> = [];
  for (const part of text.split(",")) {
    const name = part.trim().toLowerCase();
    if (name === "") continue;
    if (name !== "unspecified" && !LEVELS.includes(name as LevelName)) return null;
    out.push(severityRange(name as LevelName | "unspecified"));
  }
  return out;
}

/** Distinct trigrams (by code point) of `text`, spread over its length, at most `MAX_TRIGRAMS`. */
export function trigramsOf(text: string): string[] {
  const cps = Array.from(text);
  const all: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i + 3 <= cps.length; i++) {
    const g = cps[i] + cps[i + 1] + cps[i + 2];
    if (!seen.has(g)) {
      seen.add(g);
      all.push(g);
    }
  }
  if (all.length <= MAX_TRIGRAMS) return all;
  const picked: string[] = [];
  for (let i = 0; i < MAX_TRIGRAMS; i++) picked.push(all[Math.round((i * (all.length - 1)) / (MAX_TRIGRAMS - 1))]);
  return [...new Set(picked)];
}

/** An FTS5 query requiring every trigram (each a quoted single-token phrase). */
export function ftsQuery(trigrams: string[]): string {
  return trigrams.map((g) => `"${g.replaceAll('"', '""')}"`).join(" AND ");
}

const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const isAscii = (q: string) => /^[\x20-\x7e]*$/.test(q);

/** Fingerprint: the message with numbers, hex ids and quoted values masked, hashed. */
export function fingerprintOf(message: string): string {
  const shape = message
    .slice(0, 2000)
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "*")
    .replace(/\b[0-9a-f]{12,}\b/gi, "*")
    .replace(/"[^"]*"|'[^']*'/g, "*")
    .replace(/\d+(\.\d+)?/g, "#");
  return Bun.hash(shape).toString(16).padStart(16, "0");
}

function toEntry(r: LogDbRow, scope: Scope): LogEntry {
  return {
    client: r.client,
    environment: r.environment,
    fingerprint: fingerprintOf(r.message),
    host: r.host,
    level: r.level ?? levelOf(r.severity),
    message: r.message,
    method: r.method,
    project: slugOf(scope, r.project),
    route: r.route,
    service: r.service,
    span: r.span_id,
    status: r.status,
    target: r.target,
    timestamp: iso(msOfKey(r.id)),
  };
}

function filterSql(s: LogSearch): { sql: string; params: Array<string | number> } {
  const scope = scopeSql(s.scope, "l");
  const parts = [scope.sql];
  const params = [...scope.params];
  if (s.service !== null) {
    parts.push("l.service = ?");
    params.push(s.service);
  }
  if (s.levels.length > 0) {
    parts.push(`(${s.levels.map(() => "l.severity BETWEEN ? AND ?").join(" OR ")})`);
    for (const [lo, hi] of s.levels) params.push(lo, hi);
  }
  return { sql: parts.join(" AND "), params };
}

/** Statements are prepared once per text; segment tables come and go, so the cache is bounded. */
const statementCache = new WeakMap<Database, Map<string, Statement>>();
function prepared(db: Database, sql: string): Statement {
  let m = statementCache.get(db);
  if (!m) {
    m = new Map();
    statementCache.set(db, m);
  }
  let st = m.get(sql);
  if (!st) {
    if (m.size > 500) {
      for (const old of m.values()) old.finalize();
      m.clear();
    }
    st = db.prepare(sql);
    m.set(sql, st);
  }
  return st;
}

function isMissingTable(e: unknown): boolean {
  return /no such table/i.test((e as Error).message ?? "");
}

/** The newest matching lines, newest first. */
export function searchLogs(db: Database, s: LogSearch): LogEntry[] {
  if (s.scope.projects.length === 0 || s.limit <= 0) return [];
  const q = s.q && s.q.length > 0 ? s.q : null;
  const lq = q?.toLowerCase() ?? "";
  const trigrams = q ? trigramsOf(lq) : [];
  const sqlCheck = q !== null && isAscii(q);
  const filter = filterSql(s);
  const fromKey = lowKey(s.fromMs);
  const toKey = highKey(s.toMs);
  const out: LogDbRow[] = [];
  const segments = listSegments(db).reverse();
  for (const seg of segments) {
    if (out.length >= s.limit) break;
    if (seg.max_key === null || seg.min_key === null || seg.max_key < fromKey || seg.min_key > toKey) continue;
    const want = () => s.limit - out.length;
    const textCheck = sqlCheck ? " AND (l.message LIKE ? ESCAPE '\\' OR l.target LIKE ? ESCAPE '\\')" : "";
    const checkParams = sqlCheck ? [likePattern(q!), likePattern(q!)] : [];
    const fts = ftsTable(seg.id);
    const sql =
      trigrams.length > 0
        ? `SELECT ${COLUMNS} FROM ${fts} JOIN ${logTable(seg.id)} l ON l.id = ${fts}.rowid WHERE ${fts} MATCH ? AND ${fts}.rowid BETWEEN ? AND ? AND ${filter.sql}${textCheck} ORDER BY ${fts}.rowid DESC LIMIT ?`
        : `SELECT ${COLUMNS} FROM ${logTable(seg.id)} l WHERE l.id BETWEEN ? AND ? AND ${filter.sql}${textCheck} ORDER BY l.id DESC LIMIT ?`;
    const match = trigrams.length > 0 ? [ftsQuery(trigrams)] : [];
    const params = (upper: number, limit: number) => [...match, fromKey, upper, ...filter.params, ...checkParams, limit];
    try {
      const st = prepared(db, sql);
      if (q === null || sqlCheck) {
        for (const r of st.all(...params(toKey, want())) as LogDbRow[]) out.push(r);
        continue;
      }
      // Non-ASCII `q`: page through candidates (moving the upper key down) and fold case in JS.
      let upper = toKey;
      for (;;) {
        const page = st.all(...params(upper, PAGE)) as LogDbRow[];
        for (const r of page) {
          if (r.message.toLowerCase().includes(lq) || r.target.toLowerCase().includes(lq)) {
            out.push(r);
            if (out.length >= s.limit) break;
          }
        }
        if (out.length >= s.limit || page.length < PAGE) break;
        upper = page[page.length - 1].id - 1;
      }
    } catch (e) {
      // Retention may drop a segment between listing and reading it: it holds nothing to show.
      if (!isMissingTable(e)) throw e;
    }
  }
  return out.map((r) => toEntry(r, s.scope));
}

/** Lines per bucket and level family, from the counts kept at ingest. */
export function logVolume(db: Database, s: Omit<LogSearch, "q" | "limit">, bucketMs: number): Array<{ t: string; counts: Record<string, number> }> {
  const scope = scopeSql(s.scope);
  if (s.scope.projects.length === 0) return [];
  const parts = [scope.sql, "minute >= ?", "minute <= ?"];
  const params: Array<string | number> = [...scope.params, Math.floor(s.fromMs / 60_000) * 60_000, s.toMs];
  if (s.service !== null) {
    parts.push("service = ?");
    params.push(s.service);
  }
  if (s.levels.length > 0) {
    parts.push(`(${s.levels.map(() => "severity BETWEEN ? AND ?").join(" OR ")})`);
    for (const [lo, hi] of s.levels) params.push(lo, hi);
  }
  const rows = prepared(db, `SELECT (minute / ${bucketMs}) * ${bucketMs} AS b, severity, sum(n) AS n FROM log_volume WHERE ${parts.join(" AND ")} GROUP BY b, severity ORDER BY b`).all(...params) as Array<{
    b: number;
    severity: number;
    n: number;
  }>;
  const buckets = new Map<number, Record<string, number>>();
  const start = Math.floor(s.fromMs / bucketMs) * bucketMs;
  for (let b = start; b <= s.toMs; b += bucketMs) buckets.set(b, {});
  for (const r of rows) {
    const counts = buckets.get(r.b) ?? {};
    const name = levelOf(r.severity);
    counts[name] = (counts[name] ?? 0) + r.n;
    buckets.set(r.b, counts);
  }
  return [...buckets].sort((a, b) => a[0] - b[0]).map(([b, counts]) => ({ t: iso(b), counts }));
}
