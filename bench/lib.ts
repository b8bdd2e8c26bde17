/**
 * What every benchmark gets: the ops binary (built if missing), a way to start it and other
 * servers as child processes on loopback ports with temp data dirs, and a load generator (wrk).
 * Each `bench/<name>.bench.ts` exports `name`, `description` and `run(ctx)`; bench/run.ts finds
 * them. Load only ever targets 127.0.0.1, for a bounded duration.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { tmpdir } from "node:os";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dir, "..");

export interface LoadOptions {
  /** Seconds of load per measurement. */
  duration: number;
  connections: number;
  threads: number;
}

export interface LoadResult {
  requestsPerSec: number;
  /** Requests answered in the run. */
  requests: number;
  /** Median and 99th percentile latency in ms. */
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers and socket errors; a fair comparison needs 0. */
  errors: number;
}

export interface ChildServer {
  url: string;
  stop(): Promise<void>;
  /** CPU time (user + system, ms) the server and the processes it started have used so far. */
  cpuMs(): number;
}

export interface BenchContext {
  load: LoadOptions;
  /** Absolute path of the compiled binary. */
  binary: string;
  /** `ops serve` (the compiled binary) on a free loopback port with an empty temp data dir. */
  startOps(env?: Record<string, string>): Promise<ChildServer>;
  /** Any server command; `{port}` in argv is replaced with a free port; ready when `readyPath` answers 200. */
  startServer(argv: string[], readyPath: string): Promise<ChildServer>;
  /** Run wrk against `url` with the context's load options (and extra request headers). */
  measure(url: string, headers?: Record<string, string>, seconds?: number): Promise<LoadResult>;
  /**
   * Measure `a` and `b` in alternation (a, b, a, b, a, b; each a third of the duration, at least
   * 2 s) and return each side's median round. Both servers run throughout, so a burst of load from
   * elsewhere on the machine hits both sides alike and the ratio holds.
   */
  compare(a: Target, b: Target): Promise<{ a: LoadResult; b: LoadResult }>;
}

export interface Target {
  url: string;
  headers?: Record<string, string>;
}

export interface Benchmark {
  name: string;
  description: string;
  /** Returns the line to print, e.g. `health: ops 41234 req/s, Bun.serve 80211 req/s, ratio 0.51`. */
  run(ctx: BenchContext): Promise<string>;
}

/** Clock ticks per second of /proc's CPU times. */
let clockTicks = 0;

/** CPU time (ms) of `pid` and its descendants, from /proc (0 once gone). */
export function processCpuMs(pid: number): number {
  if (clockTicks === 0) clockTicks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;
  let ticks = 0;
  const seen = new Set<number>();
  const walk = (p: number) => {
    if (seen.has(p)) return;
    seen.add(p);
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "latin1");
      // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]);
      for (const t of readFileSync(`/proc/${p}/task/${p}/children`, "latin1").split(" ")) if (t.trim()) walk(Number(t));
    } catch {
      // Gone.
    }
  };
  walk(pid);
  return (ticks * 1000) / clockTicks;
}

export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port as number;
  s.stop(true);
  return port;
}

async function waitReady(url: string, child: Bun.Subprocess, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the server exited with ${child.exitCode} before it was ready`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(50);
  }
  throw new Error(`${url} was not ready within ${ms} ms`);
}

export function ensureBinary(): string {
  const binary = path.join(ROOT, "dist", "ops");
  if (!existsSync(binary)) {
    console.log("dist/ops is missing; building it");
    const r = Bun.spawnSync([process.execPath, "build.ts"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if (r.exitCode !== 0) throw new Error("the build failed");
  }
  return binary;
}

/** Parse wrk's latency text (`1.23ms`, `850.00us`, `1.02s`) into ms. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

export function parseWrk(out: string): LoadResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const total = /(\d+) requests in/.exec(out);
  if (!rps) throw new Error(`could not read wrk's output:\n${out}`);
  const p50 = /^\s+50%\s+(\S+)/m.exec(out);
  const p99 = /^\s+99%\s+(\S+)/m.exec(out);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const sockErrors = sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return {
    requestsPerSec: Math.round(Number(rps[1])),
    requests: total ? Number(total[1]) : 0,
    p50Ms: p50 ? ms(p50[1]) : NaN,
    p99Ms: p99 ? ms(p99[1]) : NaN,
    errors: (non2xx ? Number(non2xx[1]) : 0) + sockErrors,
  };
}

/** Fail when any measured side answered errors: a comparison is only fair with none. */
export function assertNoErrors(results: Record<string, LoadResult>): void {
  for (const [who, r] of Object.entries(results)) if (r.errors > 0) throw new Error(`${who} answered ${r.errors} errors under load`);
}

/**
 * The one-line report of an ops-vs-baseline comparison made with `ctx.compare`:
 * `<name>: ops N req/s, Bun.serve M req/s, ratio R (latencies; load[; extra])`.
 */
export function ratioLine(name: string, ops: LoadResult, base: LoadResult, load: LoadOptions, extra?: string): string {
  assertNoErrors({ ops, "Bun.serve": base });
  const ratio = ops.requestsPerSec / base.requestsPerSec;
  return (
    `${name}: ops ${ops.requestsPerSec} req/s, Bun.serve ${base.requestsPerSec} req/s, ratio ${ratio.toFixed(2)}` +
    ` (p50 ${ops.p50Ms.toFixed(2)} ms vs ${base.p50Ms.toFixed(2)} ms, p99 ${ops.p99Ms.toFixed(2)} ms vs ${base.p99Ms.toFixed(2)} ms;` +
    ` ${load.connections} connections, ${load.threads} threads; median of 3 alternating rounds${extra ? `; ${extra}` : ""})`
  );
}

/** The round with the median throughput (its latencies come with it); errors summed over all. */
export function medianRound(rs: LoadResult[]): LoadResult {
  const sorted = [...rs].sort((x, y) => x.requestsPerSec - y.requestsPerSec);
  return { ...sorted[Math.floor(sorted.length / 2)], errors: rs.reduce((n, r) => n + r.errors, 0) };
}

export function createContext(load: LoadOptions): { ctx: BenchContext; cleanup(): Promise<void> } {
  const wrk = Bun.which("wrk");
  if (!wrk) throw new Error("wrk is not installed (apt-get install wrk); the benchmarks need it");
  const binary = ensureBinary();
  const children: ChildServer[] = [];
  const temps: string[] = [];

  const spawnServer = async (argv: string[], readyPath: string, env: Record<string, string> = {}, cwd = ROOT): Promise<ChildServer> => {
    const port = freePort();
    const cmd = argv.map((a) => a.replaceAll("{port}", String(port)));
    // Output is discarded, not piped: a full pipe would stall the server mid-benchmark.
    const child = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdout: "ignore", stderr: "inherit" });
    const url = `http://127.0.0.1:${port}`;
    const server: ChildServer = {
      url,
      async stop() {
        if (child.exitCode === null) child.kill("SIGTERM");
        await child.exited;
      },
      cpuMs: () => processCpuMs(child.pid),
    };
    children.push(server);
    await waitReady(url + readyPath, child);
    return server;
  };

  const ctx: BenchContext = {
    load,
    binary,
    startOps(env = {}) {
      const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-"));
      temps.push(dir);
      return spawnServer([binary, "serve", "--data-dir", path.join(dir, "data"), "--listen", "127.0.0.1:{port}"], "/readyz", env, dir);
    },
    startServer: (argv, readyPath) => spawnServer(argv, readyPath),
    async measure(url, headers = {}, seconds = load.duration) {
      const args = [wrk, `-t${load.threads}`, `-c${load.connections}`, `-d${seconds}s`, "--latency"];
      for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
      args.push(url);
      const r = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe", timeout: (seconds + 30) * 1000 });
      if (r.exitCode !== 0) throw new Error(`wrk failed: ${r.stderr.toString()}`);
      return parseWrk(r.stdout.toString());
    },
    async compare(a, b) {
      const seconds = Math.max(2, Math.round(load.duration / 3));
      const ra: LoadResult[] = [];
      const rb: LoadResult[] = [];
      for (let round = 0; round < 3; round++) {
        ra.push(await ctx.measure(a.url, a.headers, seconds));
        rb.push(await ctx.measure(b.url, b.headers, seconds));
      }
      return { a: medianRound(ra), b: medianRound(rb) };
    },
  };
  return {
    ctx,
    async cleanup() {
      for (const c of children) await c.stop();
      for (const d of temps) rmSync(d, { recursive: true, force: true });
    },
  };
}

/**
 * Run one benchmark on its own (`bun bench/<name>.bench.ts --duration 10 --connections 50
 * --threads 2`): parse the load flags over `defaults`, build a context, print the line, clean up.
 */
export async function runAlone(run: (ctx: BenchContext) => Promise<string>, defaults: Partial<LoadOptions> = {}): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      duration: { type: "string", default: String(defaults.duration ?? 10) },
      connections: { type: "string", default: String(defaults.connections ?? 50) },
      threads: { type: "string", default: String(defaults.threads ?? 2) },
    },
    strict: true,
  });
  const { ctx, cleanup } = createContext({ duration: Number(values.duration), connections: Number(values.connections), threads: Number(values.threads) });
  try {
    console.log(await run(ctx));
  } finally {
    await cleanup();
  }
}

/**
 * Run a benchmark that times whole operations on its own (`bun bench/<name>.bench.ts --runs N`,
 * default 5) with the default load options: build a context, print the line, clean up.
 */
export async function runAloneTimes(run: (ctx: BenchContext, runs: number) => Promise<string>): Promise<void> {
  const i = process.argv.indexOf("--runs");
  const runs = i > 0 ? Number(process.argv[i + 1]) : 5;
  const { ctx, cleanup } = createContext({ duration: 10, connections: 50, threads: 2 });
  try {
    console.log(await run(ctx, runs));
  } finally {
    await cleanup();
  }
}
