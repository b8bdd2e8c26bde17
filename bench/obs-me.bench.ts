/**
 * Does telemetry ingest slow the control plane? `GET /api/v1/me` (a minted token) on `ops serve`
 * (the compiled binary) under wrk, measured idle and then while OTLP log ingest runs flat out
 * (16 requests of 2 000 records in flight, protobuf, the trigram index kept) against the same
 * server, in alternating rounds. Prints both latencies and the ingest rate reached meanwhile.
 * `npm run bench -- obs-me`, or `bun bench/obs-me.bench.ts [--duration 10] [--connections 10]`.
 */
import { type BenchContext, type LoadResult, runAlone } from "./lib";
import { encodeLogs, flood, opsWithToken } from "./obs-load";

export const name = "obs-me";
export const description = "GET /api/v1/me latency with OTLP ingest running flat out, beside it idle";

const IN_FLIGHT = 16;

function median(rs: LoadResult[]): LoadResult {
  return [...rs].sort((a, b) => a.p50Ms - b.p50Ms)[Math.floor(rs.length / 2)];
}

export async function run(ctx: BenchContext): Promise<string> {
  const bodies = Array.from({ length: IN_FLIGHT * 2 }, (_, i) => encodeLogs(2000, i + 100));
  const { server, token } = await opsWithToken(ctx);
  try {
    const me = `${server.url}/api/v1/me`;
    const headers = { authorization: `Bearer ${token}` };
    const seconds = Math.max(3, Math.round(ctx.load.duration / 3));
    const idle: LoadResult[] = [];
    const busy: LoadResult[] = [];
    let records = 0;
    let ingestSeconds = 0;
    for (let round = 0; round < 3; round++) {
      idle.push(await ctx.measure(me, headers, seconds));
      const f = flood(`${server.url}/otlp/v1/logs`, token, bodies, IN_FLIGHT, seconds + 60);
      await Bun.sleep(1000); // let ingest reach its pace before measuring
      busy.push(await ctx.measure(me, headers, seconds));
      f.stop();
      const r = await f.done;
      records += r.records;
      ingestSeconds += r.seconds;
    }
    for (const r of [...idle, ...busy]) if (r.errors > 0) throw new Error(`GET /api/v1/me answered ${r.errors} errors`);
    const a = median(idle);
    const b = median(busy);
    return (
      `obs-me: GET /api/v1/me idle p50 ${a.p50Ms.toFixed(2)} ms p99 ${a.p99Ms.toFixed(2)} ms (${a.requestsPerSec} req/s); ` +
      `during ingest p50 ${b.p50Ms.toFixed(2)} ms p99 ${b.p99Ms.toFixed(2)} ms (${b.requestsPerSec} req/s) while ${Math.round(records / ingestSeconds)} records/s were acknowledged ` +
      `(${ctx.load.connections} connections, ${ctx.load.threads} threads; median of 3 alternating rounds)`
    );
  } finally {
    await server.stop();
  }
}

if (import.meta.main) await runAlone(run, { connections: 10 });
