/**
 * GET /health on `ops serve` (the compiled binary, default settings: router, request ids, authz
 * plugin, one JSON log line per request) against a bare Bun.serve returning the same body: what
 * the kernel's plumbing costs per request.
 */
import path from "node:path";
import { ROOT, type BenchContext } from "./lib";

export const name = "health";
export const description = "GET /health: ops serve vs a bare Bun.serve";

export async function run(ctx: BenchContext): Promise<string> {
  const ops = await ctx.startOps();
  const hello = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
  const { a: opsResult, b: baseResult } = await ctx.compare({ url: `${ops.url}/health` }, { url: `${hello.url}/health` });
  await ops.stop();
  await hello.stop();

  for (const [who, r] of [["ops", opsResult], ["Bun.serve", baseResult]] as const) {
    if (r.errors > 0) throw new Error(`${who} answered ${r.errors} errors under load`);
  }
  const ratio = opsResult.requestsPerSec / baseResult.requestsPerSec;
  return (
    `health: ops ${opsResult.requestsPerSec} req/s, Bun.serve ${baseResult.requestsPerSec} req/s, ratio ${ratio.toFixed(2)}` +
    ` (p50 ${opsResult.p50Ms.toFixed(2)} ms vs ${baseResult.p50Ms.toFixed(2)} ms, p99 ${opsResult.p99Ms.toFixed(2)} ms vs ${baseResult.p99Ms.toFixed(2)} ms;` +
    ` ${ctx.load.connections} connections, ${ctx.load.threads} threads; median of 3 alternating rounds)`
  );
}
