/**
 * Issue 35's start-up and idle-memory rows: `ops serve` (the compiled binary, its data plane on)
 * started again and again on one existing data dir (the estate made by a first start that is not
 * counted), timed from spawn to the first `/readyz` 200, and its memory after 5 s idle: the
 * control plane's RSS and the RSS and PSS of all its processes (control plane, `ops data-plane`,
 * the ingress workers). Beside it in the same run, alternating: a bare `Bun.serve` compiled the
 * same way (the floor a Bun binary starts at). `OPS_BENCH_BEFORE=<an older ops binary>` adds that
 * binary on its own existing data dir. Medians of the rounds (`--runs N`, default 5).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, runAloneTimes, type BenchContext } from "./lib";
import { memoryOf, processTree } from "./proc-memory";

export const name = "startup";
export const description = "ops serve on an existing data dir: spawn to /readyz 200, idle RSS after 5 s, vs a bare Bun.serve binary";

const IDLE_MS = 5000;

interface Sample {
  readyMs: number;
  /** KiB: the first process's RSS, and RSS and PSS summed over it and everything below it. */
  rss: number;
  treeRss: number;
  treePss: number;
  processes: number;
}

/** Spawn `argv` (`{port}` replaced), time it to `readyPath` answering 200, idle, measure, stop. */
async function sample(argv: string[], readyPath: string, env: Record<string, string> = {}): Promise<Sample> {
  const port = freePort();
  const url = `http://127.0.0.1:${port}${readyPath}`;
  const started = performance.now();
  const child = Bun.spawn(
    argv.map((a) => a.replaceAll("{port}", String(port))),
    { env: { ...process.env, ...env }, stdout: "ignore", stderr: "inherit" },
  );
  let readyMs = -1;
  try {
    const deadline = Date.now() + 30_000;
    while (readyMs < 0) {
      if (child.exitCode !== null) throw new Error(`${argv[0]} exited with ${child.exitCode} before ${readyPath} answered`);
      if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within 30 s`);
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status === 200) readyMs = performance.now() - started;
      } catch {
        // not listening yet
      }
      if (readyMs < 0) await Bun.sleep(2);
    }
    await Bun.sleep(IDLE_MS);
    const pids = processTree(child.pid);
    const all = memoryOf(pids);
    return { readyMs, rss: memoryOf([child.pid]).rss, treeRss: all.rss, treePss: all.pss, processes: pids.length };
  } finally {
    if (child.exitCode === null) child.kill("SIGTERM");
    await child.exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mib = (k: number) => (k / 1024).toFixed(1);

function summary(label: string, s: Sample[]): string {
  const ready = s.map((x) => x.readyMs);
  return `${label} ready ${median(ready).toFixed(0)} ms (${Math.min(...ready).toFixed(0)}–${Math.max(...ready).toFixed(0)}), RSS ${mib(median(s.map((x) => x.rss)))} MiB` +
    (s[0]!.processes > 1 ? `, ${s[0]!.processes} processes RSS ${mib(median(s.map((x) => x.treeRss)))} MiB PSS ${mib(median(s.map((x) => x.treePss)))} MiB` : "");
}

export async function run(ctx: BenchContext, runs = 5): Promise<string> {
  const temp = mkdtempSync(path.join(tmpdir(), "ops-bench-startup-"));
  try {
    // The baseline: a bare Bun.serve answering 200, compiled into one executable like ops.
    const helloSrc = path.join(temp, "hello.ts");
    writeFileSync(helloSrc, `Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[2]), fetch: () => Response.json({ status: "ok" }) });\nprocess.on("SIGTERM", () => process.exit(0));\n`);
    const helloBin = path.join(temp, "hello");
    const built = Bun.spawnSync([process.execPath, "build", "--compile", "--minify", helloSrc, "--outfile", helloBin], { stdout: "ignore", stderr: "pipe" });
    if (built.exitCode !== 0) throw new Error(`compiling the bare server failed: ${built.stderr.toString()}`);

    const serve = (binary: string, dir: string) => [binary, "serve", "--data-dir", dir, "--listen", "127.0.0.1:{port}"];
    // Its own ingress port each start; TLS ingress off (no certificate work on either side).
    const opsEnv = () => ({ OPS_INGRESS_LISTEN: `127.0.0.1:${freePort()}`, OPS_INGRESS_TLS_LISTEN: "off" });
    const sides: Array<{ label: string; argv: string[]; ready: string; env: () => Record<string, string>; samples: Sample[] }> = [
      { label: "ops", argv: serve(ctx.binary, path.join(temp, "ops-data")), ready: "/readyz", env: opsEnv, samples: [] },
      { label: "Bun.serve", argv: [helloBin, "{port}"], ready: "/", env: () => ({}), samples: [] },
    ];
    const before = process.env.OPS_BENCH_BEFORE;
    if (before) sides.push({ label: "before", argv: serve(before, path.join(temp, "before-data")), ready: "/readyz", env: opsEnv, samples: [] });
    // The first start of each ops makes its estate (migrations, the owner, the CLI release): not counted.
    for (const s of sides) if (s.label !== "Bun.serve") await sample(s.argv, s.ready, s.env());
    for (let i = 0; i < runs; i++) for (const s of sides) s.samples.push(await sample(s.argv, s.ready, s.env()));

    const [ops, bare] = sides;
    const opsReady = median(ops!.samples.map((x) => x.readyMs));
    const opsRss = median(ops!.samples.map((x) => x.rss));
    const goals = `goals: ready <= 300 ms ${opsReady <= 300 ? "met" : "not met"}, control plane RSS <= 80 MiB ${opsRss <= 80 * 1024 ? "met" : "not met"}`;
    return `startup: ${sides.map((s) => summary(s.label, s.samples)).join("; ")}; ops/Bun.serve ready ${(opsReady / median(bare!.samples.map((x) => x.readyMs))).toFixed(1)}x; ${goals} (medians of ${runs} alternating starts, ${IDLE_MS / 1000} s idle before measuring)`;
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

if (import.meta.main) await runAloneTimes(run);
