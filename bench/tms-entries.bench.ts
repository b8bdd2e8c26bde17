/**
 * `PUT /api/v1/projects/bench/translations/entries` writes per second on `ops serve` (from source,
 * a bundle of 10 000 keys): wrk sends distinct texts (new keys, then edits of them, English and
 * French, each checked as an ICU message against its source) with a machine token. Each write is
 * one durable transaction (synchronous=FULL): key, value, the replaced value into history, the
 * bundle's change counters and the audit row.
 *
 * Beside it, in the same run (alternating rounds): a raw SQLite upsert loop in this process on a
 * file with the same pragmas (WAL, synchronous=FULL), one row per transaction — the floor of a
 * durable write on this disk.
 *
 * `npm run bench -- tms-entries`, or on its own: `bun bench/tms-entries.bench.ts [--duration 10]`.
 */
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Database } from "bun:sqlite";
import { ROOT, parseWrk, assertNoErrors, type BenchContext, type LoadResult, runAlone } from "./lib";
import { seedTms } from "./tms-export.bench";

export const name = "tms-entries";
export const description = "PUT /entries writes/s on ops serve vs a raw SQLite upsert loop (WAL, synchronous=FULL)";

function script(token: string): string {
  return `
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end
function init(args)
  n = 0
  wrk.method = "PUT"
  wrk.headers["content-type"] = "application/json"
  wrk.headers["authorization"] = "Bearer ${token}"
end
function request()
  n = n + 1
  local locale = (n % 2 == 0) and "en" or "fr"
  local body = string.format('{"bundle":"bench","namespace":"load","key":"t%d.k%d","locale":"%s","value":"Text %d of %d for {name}"}', tid, math.floor(n / 2) % 5000, locale, n, tid)
  return wrk.format(nil, nil, nil, body)
end
`;
}

function wrk(ctx: BenchContext, url: string, scriptFile: string, seconds: number): LoadResult {
  const bin = Bun.which("wrk");
  if (!bin) throw new Error("wrk is not installed");
  const r = Bun.spawnSync([bin, `-t${ctx.load.threads}`, `-c${ctx.load.connections}`, `-d${seconds}s`, "--latency", "-s", scriptFile, url], { stdout: "pipe", stderr: "pipe", timeout: (seconds + 30) * 1000 });
  if (r.exitCode !== 0) throw new Error(`wrk failed: ${r.stderr.toString()}`);
  return parseWrk(r.stdout.toString());
}

/** Upserts per second, one durable transaction each, for `seconds`. */
function rawUpserts(db: Database, seconds: number, offset: number): number {
  const upsert = db.query("INSERT INTO kv (key_id, locale, value, version) VALUES (?1, ?2, ?3, 1) ON CONFLICT(key_id, locale) DO UPDATE SET value = ?3, version = version + 1");
  const write = db.transaction((i: number) => upsert.run(i % 10_000, i % 2 === 0 ? "en" : "fr", `Text ${i} for {name}`));
  const end = performance.now() + seconds * 1000;
  let n = 0;
  const t0 = performance.now();
  while (performance.now() < end) write.immediate(offset + n++);
  return n / ((performance.now() - t0) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(ctx: BenchContext): Promise<string> {
  const seed = await seedTms(10_000, 1_000);
  const ops = await ctx.startServer([process.execPath, path.join(ROOT, "src/main.ts"), "serve", "--data-dir", seed.dataDir, "--listen", "127.0.0.1:{port}"], "/readyz");
  const scriptFile = path.join(seed.dir, "put-entries.lua");
  writeFileSync(scriptFile, script(seed.token));
  const raw = new Database(path.join(seed.dir, "raw.db"), { create: true });
  raw.exec("PRAGMA journal_mode = WAL");
  raw.exec("PRAGMA synchronous = FULL");
  raw.exec("CREATE TABLE kv (key_id INTEGER NOT NULL, locale TEXT NOT NULL, value TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (key_id, locale))");
  const url = `${ops.url}/api/v1/projects/bench/translations/entries`;
  const seconds = Math.max(2, Math.round(ctx.load.duration / 3));
  const opsRounds: LoadResult[] = [];
  const rawRounds: number[] = [];
  try {
    const probe = await fetch(url, { method: "PUT", headers: { authorization: `Bearer ${seed.token}`, "content-type": "application/json" }, body: JSON.stringify({ bundle: "bench", namespace: "load", key: "probe", locale: "en", value: "Probe" }) });
    if (probe.status !== 200) throw new Error(`PUT /entries answered ${probe.status}: ${await probe.text()}`);
    for (let round = 0; round < 3; round++) {
      opsRounds.push(wrk(ctx, url, scriptFile, seconds));
      rawRounds.push(rawUpserts(raw, seconds, round * 1_000_000));
    }
  } finally {
    raw.close();
    await ops.stop();
    rmSync(seed.dir, { recursive: true, force: true });
  }
  const opsMedian = [...opsRounds].sort((a, b) => a.requestsPerSec - b.requestsPerSec)[1]!;
  assertNoErrors({ ops: { ...opsMedian, errors: opsRounds.reduce((n, r) => n + r.errors, 0) } });
  const rawRate = median(rawRounds);
  return (
    `tms-entries: ops ${opsMedian.requestsPerSec} writes/s (PUT /entries, p50 ${opsMedian.p50Ms.toFixed(2)} ms, p99 ${opsMedian.p99Ms.toFixed(2)} ms), ` +
    `raw SQLite upsert loop ${Math.round(rawRate)} writes/s, ratio ${(opsMedian.requestsPerSec / rawRate).toFixed(2)} ` +
    `(both one durable transaction per write, WAL, synchronous=FULL; ${ctx.load.connections} connections, ${ctx.load.threads} threads; median of 3 alternating ${seconds} s rounds)`
  );
}

if (import.meta.main) await runAlone(run);
