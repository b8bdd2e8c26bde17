/**
 * GET /health on `ops serve` (the compiled binary, default settings: router, request ids, authz
 * plugin, one JSON log line per request) against a bare Bun.serve returning the same body: what
 * the kernel's plumbing costs per request.
 */
import path from "node:path";
import { ROOT, ratioLine, type BenchContext } from "./lib";

export const name = "health";
export const description = "GET /health: ops serve vs a bare Bun.serve";

export async function run(ctx: BenchContext): Promise<string> {
  const ops = await ctx.startOps();
  const hello = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
  const { a: opsResult, b: baseResult } = await ctx.compare({ url: `${ops.url}/health` }, { url: `${hello.url}/health` });
  await ops.stop();
  await hello.stop();

  return ratioLine("health", opsResult, baseResult, ctx.load);
}
