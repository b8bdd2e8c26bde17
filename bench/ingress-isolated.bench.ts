/**
 * Issue 33's figure (decision 0601): requests/s through ops's ingress to an isolated replica (the
 * sample app, bench/hello-server.ts, inside a pasta network namespace as a replica runs) beside
 * nginx (`worker_processes auto`, upstream keep-alive, the same forwarded headers) proxying to the
 * same app started directly on the host; ops with as many ingress processes as its data plane runs
 * on this machine (one per core, at most 4, on one port: SO_REUSEPORT). ops reaches the app two ways: inside its namespace (a
 * root ops's path, no user-space hop) and through pasta's forwarded port (non-root ops's path, and
 * every path before 0601). Same run, rounds in alternation, medians of 3.
 *
 * Needs root, pasta (passt) and nginx.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, assertNoErrors, medianRound, type BenchContext, type ChildServer, type LoadResult } from "./lib";
import { NGINX, cpuRound, mid, startNginx, startOpsIngress } from "./proxies";
import { openNetns } from "../src/adapters/sandbox/netns";
import { networkPolicy } from "../src/adapters/sandbox/network";
import { networkTools } from "../src/adapters/sandbox";

export const name = "ingress-isolated";
export const description = "ops's ingress to an app in its network namespace (inside it, and through pasta's port) vs nginx (worker_processes auto) to the same app on the host";

async function appInNamespace(): Promise<ChildServer & { port: number; netns: { path: string; ident: string } }> {
  const tools = networkTools();
  if (typeof tools === "string") throw new Error(tools);
  const policy = networkPolicy({ publicUrl: "http://127.0.0.1:9", sandboxAllowCidrs: [], sandboxHostPorts: [] });
  const ns = await openNetns({ ...tools, policy, forward: true });
  const inside = ns.inside();
  if (!inside) throw new Error("this benchmark needs root: the ingress enters the namespace only when ops is root");
  const port = ns.port!;
  const proc = Bun.spawn([...ns.enterArgv(), process.execPath, path.join(ROOT, "bench/hello-server.ts"), String(port)], { stdout: "ignore", stderr: "inherit" });
  const deadline = Date.now() + 10_000;
  while (!ns.listening(port)) {
    if (Date.now() > deadline) throw new Error("the app in the namespace did not listen within 10 s");
    await Bun.sleep(20);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    netns: inside,
    cpuMs: () => 0,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
      await ns.close();
    },
  };
}

export async function run(ctx: BenchContext): Promise<string> {
  if (!(await Bun.file(NGINX).exists())) throw new Error(`${NGINX} is missing (apt-get install nginx)`);
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-isolated-"));
  const host = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
  const boxed = await appInNamespace();
  try {
    // As many ingress processes as the data plane runs here (OPS_INGRESS_WORKERS unset: one per core, at most 4).
    const workers = Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));
    const sides = {
      inside: await startOpsIngress(ctx, boxed.port, undefined, boxed.netns, workers),
      pasta: await startOpsIngress(ctx, boxed.port, undefined, undefined, workers),
      nginx: await startNginx(ctx, dir, Number(new URL(host.url).port), { forwardedHost: true, workers: "auto" }),
    } as const;
    type Side = keyof typeof sides;
    const seconds = Math.max(2, Math.round(ctx.load.duration / 3));
    const rounds: Record<Side, LoadResult[]> = { inside: [], pasta: [], nginx: [] };
    const cpu: Record<Side, number[]> = { inside: [], pasta: [], nginx: [] };
    for (const side of Object.keys(sides) as Side[]) await ctx.measure(`${sides[side].url}/health`, {}, 1);
    for (let n = 0; n < 3; n++) {
      for (const side of Object.keys(sides) as Side[]) {
        const r = await cpuRound(ctx, sides[side], `${sides[side].url}/health`, seconds);
        rounds[side].push(r.load);
        cpu[side].push(r.cpuUs);
      }
    }
    for (const s of Object.values(sides)) await s.stop();
    const r = { inside: medianRound(rounds.inside), pasta: medianRound(rounds.pasta), nginx: medianRound(rounds.nginx) };
    assertNoErrors({ "ops inside the namespace": r.inside, "ops through pasta": r.pasta, nginx: r.nginx });
    const ratio = r.inside.requestsPerSec / r.nginx.requestsPerSec;
    return (
      `ingress-isolated (${workers} ingress process${workers === 1 ? "" : "es"}): ops inside the replica's namespace ${r.inside.requestsPerSec} req/s, ops through pasta's port ${r.pasta.requestsPerSec} req/s, nginx (workers auto) to the app on the host ${r.nginx.requestsPerSec} req/s;` +
      ` ops/nginx ${ratio.toFixed(2)} (goal >= 1.00: ${ratio >= 1 ? "met" : "not met"}), through pasta ${(r.pasta.requestsPerSec / r.nginx.requestsPerSec).toFixed(2)}` +
      `; ops CPU per request ${mid(cpu.inside).toFixed(1)} µs inside, ${mid(cpu.pasta).toFixed(1)} µs through pasta (p50 ${r.inside.p50Ms.toFixed(2)} / ${r.pasta.p50Ms.toFixed(2)} / ${r.nginx.p50Ms.toFixed(2)} ms;` +
      ` ${ctx.load.connections} connections, ${ctx.load.threads} threads; median of 3 alternating rounds)`
    );
  } finally {
    await boxed.stop();
    await host.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
