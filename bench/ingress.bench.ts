/**
 * Requests/s through ops's ingress to a sample app (bench/hello-server.ts), beside nginx and Caddy
 * proxying the same app with their usual reverse-proxy settings (upstream keep-alive, the same
 * X-Forwarded-* headers), and beside the app hit directly: same run, same load, rounds measured
 * in alternation (median of 3) so a burst of load from elsewhere hits every side alike.
 *
 * The ingress runs in a child Bun process of its own (bench/proxies.ts), with a route table
 * holding the app as one service: the same `createIngress` that `ops serve` runs, alone in its
 * process so that the API server's own work (scheduler, probes) is not counted against it. nginx
 * runs with one worker (its compiled default); Caddy with Go's default of every core.
 *
 * Beside the rates, each proxy's CPU time per request (user + system, from /proc, over the same
 * rounds): on a shared machine the rates of one run move with whatever else runs, while the CPU a
 * proxy spends on each request does not move much, so that ratio is the steadier figure. Each side
 * first gets one unmeasured second of the same load (decision 0249).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, assertNoErrors, medianRound, type BenchContext, type LoadResult } from "./lib";
import { NGINX, cpuRound, fillPort, mid, startNginx, startOpsIngress } from "./proxies";

export const name = "ingress";
export const description = "proxying to a sample app: ops ingress vs nginx vs Caddy vs the app directly";

const CADDY = "/usr/bin/caddy";

function caddyfile(appPort: number): string {
  return `{
  admin off
  auto_https off
}
http://127.0.0.1:__PORT__ {
  bind 127.0.0.1
  reverse_proxy 127.0.0.1:${appPort}
}
`;
}

export async function run(ctx: BenchContext): Promise<string> {
  for (const bin of [NGINX, CADDY]) if (!(await Bun.file(bin).exists())) throw new Error(`${bin} is missing (apt-get install nginx caddy)`);
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-ingress-"));
  try {
    const app = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
    const appPort = Number(new URL(app.url).port);
    writeFileSync(path.join(dir, "Caddyfile.tpl"), caddyfile(appPort));
    const ops = await startOpsIngress(ctx, appPort);
    const nginx = await startNginx(ctx, dir, appPort, { forwardedHost: true });
    const caddy = await ctx.startServer(
      ["/bin/sh", "-c", `${fillPort(dir, "Caddyfile.tpl", "Caddyfile")} && XDG_DATA_HOME=${dir} XDG_CONFIG_HOME=${dir} HOME=${dir} exec ${CADDY} run --config ${path.join(dir, "Caddyfile")} --adapter caddyfile`, "sh", "{port}"],
      "/health",
    );
    const sides = { ops, nginx, caddy, direct: app } as const;
    const seconds = Math.max(2, Math.round(ctx.load.duration / 3));
    const rounds: Record<keyof typeof sides, LoadResult[]> = { ops: [], nginx: [], caddy: [], direct: [] };
    const cpu: Record<keyof typeof sides, number[]> = { ops: [], nginx: [], caddy: [], direct: [] };
    // One unmeasured second per side first: ops's (and the Bun app's) code is compiled while it
    // runs, nginx's and Caddy's ahead of time; a long-running proxy is measured warm.
    for (const side of Object.keys(sides) as Array<keyof typeof sides>) await ctx.measure(`${sides[side].url}/health`, {}, 1);
    for (let n = 0; n < 3; n++) {
      for (const side of Object.keys(sides) as Array<keyof typeof sides>) {
        const r = await cpuRound(ctx, sides[side], `${sides[side].url}/health`, seconds);
        rounds[side].push(r.load);
        cpu[side].push(r.cpuUs);
      }
    }
    const cpuUs = { ops: mid(cpu.ops), nginx: mid(cpu.nginx), caddy: mid(cpu.caddy) };
    for (const s of [ops, nginx, caddy, app]) await s.stop();
    const r = { ops: medianRound(rounds.ops), nginx: medianRound(rounds.nginx), caddy: medianRound(rounds.caddy), direct: medianRound(rounds.direct) };
    assertNoErrors({ "ops ingress": r.ops, nginx: r.nginx, Caddy: r.caddy, app: r.direct });
    const best = r.nginx.requestsPerSec >= r.caddy.requestsPerSec ? "nginx" : "Caddy";
    const bestRps = Math.max(r.nginx.requestsPerSec, r.caddy.requestsPerSec);
    const ratio = r.ops.requestsPerSec / bestRps;
    return (
      `ingress: ops ${r.ops.requestsPerSec} req/s, nginx ${r.nginx.requestsPerSec} req/s, Caddy ${r.caddy.requestsPerSec} req/s, app direct ${r.direct.requestsPerSec} req/s;` +
      ` ops/${best} ${ratio.toFixed(2)} (goal >= 1.00: ${ratio >= 1 ? "met" : "not met"}), ops/direct ${(r.ops.requestsPerSec / r.direct.requestsPerSec).toFixed(2)}` +
      `; CPU per request ops ${cpuUs.ops.toFixed(1)} µs, nginx ${cpuUs.nginx.toFixed(1)} µs, Caddy ${cpuUs.caddy.toFixed(1)} µs, nginx/ops ${(cpuUs.nginx / cpuUs.ops).toFixed(2)}` +
      ` (p50 ops ${r.ops.p50Ms.toFixed(2)} ms, nginx ${r.nginx.p50Ms.toFixed(2)} ms, Caddy ${r.caddy.p50Ms.toFixed(2)} ms, direct ${r.direct.p50Ms.toFixed(2)} ms;` +
      ` ${ctx.load.connections} connections, ${ctx.load.threads} threads; median of 3 alternating rounds)`
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
