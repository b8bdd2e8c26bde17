/**
 * Log search on 1 000 000 stored lines: the newest 200 matches for a term in 1 line of 100 000
 * (10 lines), a term in half of the lines, and a term in none — through ops's search plan
 * (src/domains/observability/search.ts over the segments the telemetry writer built), beside two
 * naive plans on the same lines in the same run: a plain `LIKE` scan newest first, and one FTS5
 * trigram index over every line ordered by time. p50 and worst of each; the bar is ≤ 20 ms p50 and
 * ≤ 50 ms worst for ops. A fourth row shows the hardest absent term for any trigram index: a
 * phrase whose words are all common but never in that order.
 * `npm run bench -- obs-search`, or `bun bench/obs-search.bench.ts [--rounds 25]`.
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Database } from "bun:sqlite";
import type { BenchContext } from "./lib";
import { logLine, seeded } from "./obs-load";
import { openDatabase, closeDatabase } from "../src/core/db/client";
import { runMigrations } from "../src/core/db/migrate";
import { TelemetryWriter } from "../src/domains/observability/writer-store";
import { segmentBytesFor, SEGMENT_MAX_ROWS } from "../src/domains/observability/writer";
import { searchLogs } from "../src/domains/observability/search";
import { listSegments } from "../src/domains/observability/segments";
import type { LogRow } from "../src/domains/observability/rows";
import type { Scope } from "../src/domains/observability/visibility";

export const name = "obs-search";
export const description = "newest 200 matches on 1 000 000 log lines: ops's segmented trigram plan vs LIKE newest-first and FTS-only";

const LINES = 1_000_000;
const RARE = "zebrafinch";
const COMMON = "upstream-ok";
const ABSENT = "quokka";
const ADVERSARIAL = `${COMMON} payment`;

interface Stats {
  p50: number;
  worst: number;
  found: number;
}

function measure(rounds: number, fn: () => number): Stats {
  // Collect the garbage of building a million lines (and of the previous shape) before timing.
  Bun.gc(true);
  fn();
  const times: number[] = [];
  let found = 0;
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    found = fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)], worst: times[times.length - 1], found };
}

const fmt = (s: Stats) => `p50 ${s.p50.toFixed(1)} ms, worst ${s.worst.toFixed(1)} ms`;

/** 1 000 000 lines, a second apart, ending now: service-like text, COMMON in every other line, RARE in every 100 000th. */
function fill(db: Database, now: number): void {
  const writer = new TelemetryWriter(db, { segmentMaxRows: SEGMENT_MAX_ROWS, segmentMaxBytes: segmentBytesFor(10 * 1024 ** 3) });
  const rnd = seeded(7);
  const base = { project: "bench-project", environment: "production", severity: 9, level: null, host: "bench", traceId: null, spanId: null, client: null, method: null, route: null, status: null };
  for (let start = 0; start < LINES; start += 20_000) {
    const rows: LogRow[] = [];
    for (let i = start; i < start + 20_000; i++) {
      let message = logLine(i, rnd);
      if (i % 2 === 0) message += ` ${COMMON}`;
      if (i % 100_000 === 31_337) message += ` ${RARE}`;
      rows.push({ ...base, ms: now - (LINES - i) * 1000, service: `svc-${i % 8}`, target: `app.module${i % 20}`, message });
    }
    writer.write({ logs: rows, spans: [], points: [] }, now);
  }
  // The naive plans' tables: every line once, with an id in arrival order and its time.
  db.exec("CREATE TABLE naive (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, target TEXT NOT NULL, message TEXT NOT NULL)");
  db.exec("CREATE INDEX naive_ts ON naive (ts)");
  for (const seg of listSegments(db)) db.exec(`INSERT INTO naive (ts, target, message) SELECT id, target, message FROM logs_${seg.id} ORDER BY id`);
  db.exec("CREATE VIRTUAL TABLE naive_fts USING fts5(message, target, content='naive', content_rowid='id', tokenize='trigram', detail=none)");
  db.exec("INSERT INTO naive_fts (naive_fts) VALUES ('rebuild')");
}

export async function run(ctx: BenchContext | null, rounds = 25): Promise<string> {
  void ctx;
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-search-"));
  try {
    const { sqlite: db } = openDatabase(path.join(dir, "telemetry.db"), "telemetry");
    runMigrations(db, "telemetry", Date.now());
    db.exec("PRAGMA cache_size = -65536");
    const now = Date.now();
    const t0 = performance.now();
    fill(db, now);
    const built = (performance.now() - t0) / 1000;
    const pid = (db.query("SELECT id FROM obs_projects").get() as { id: number }).id;
    const scope: Scope = { projects: [{ pid, ref: { id: "bench-project", slug: "bench", name: "bench", archived: false, environments: ["production"] }, denied: new Set() }], environment: null };
    const ops = (q: string) => () => searchLogs(db, { scope, q, service: null, levels: [], fromMs: now - 30 * 86_400_000, toMs: now + 300_000, limit: 200 }).length;
    const like = db.query("SELECT id, message, target FROM naive WHERE message LIKE ?1 OR target LIKE ?1 ORDER BY id DESC LIMIT 200");
    const fts = db.query("SELECT n.id, n.message, n.target FROM naive_fts JOIN naive n ON n.id = naive_fts.rowid WHERE naive_fts.message LIKE ?1 ORDER BY n.ts DESC LIMIT 200");
    const naiveLike = (q: string) => () => like.all(`%${q}%`).length;
    const naiveFts = (q: string) => () => fts.all(`%${q}%`).length;
    const rows: string[] = [];
    const slow = Math.max(3, Math.round(rounds / 5));
    let pass = true;
    for (const [label, term] of [
      ["rare (10 lines)", RARE],
      ["common (half)", COMMON],
      ["absent", ABSENT],
      ["absent, common words", ADVERSARIAL],
    ] as const) {
      const a = measure(rounds, ops(term));
      const b = measure(slow, naiveLike(term));
      const c = measure(slow, naiveFts(term));
      if (label !== "absent, common words" && (a.p50 > 20 || a.worst > 50)) pass = false;
      rows.push(`  ${label.padEnd(22)} ops ${fmt(a)} (${a.found} lines) | LIKE newest-first ${fmt(b)} | FTS-only ${fmt(c)}`);
    }
    const segments = listSegments(db).length;
    closeDatabase(db);
    return [`obs-search: ${LINES} lines in ${segments} segments (written in ${built.toFixed(0)} s), newest 200 matches, ${rounds} rounds (baselines ${slow}); bar ≤ 20 ms p50, ≤ 50 ms worst: ${pass ? "met" : "NOT met"}`, ...rows].join("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { rounds: { type: "string", default: "25" } }, strict: true });
  console.log(await run(null, Number(values.rounds)));
}
