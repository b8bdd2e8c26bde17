/**
 * What a replica's network namespace costs (decision 0206): the sample app (bench/hello-server.ts)
 * on the host's loopback beside the same app inside a pasta namespace reached through its
 * forwarded port, as a replica is; then ops's ingress in front of each. Same run, rounds in
 * alternation (ctx.compare), so the ratios hold on a busy machine.
 *
 * Needs pasta (Debian package passt) and root, as `ops serve` on a VM runs.
 */
import path from "node:path";
import { ROOT, assertNoErrors, type BenchContext, type ChildServer } from "./lib";
import { openNetns } from "../src/adapters/sandbox/netns";
import { networkPolicy } from "../src/adapters/sandbox/network";
import { networkTools } from "../src/adapters/sandbox";

export const name = "sandbox-net";
export const description = "a replica behind its network namespace (pasta) vs on the host's loopback, directly and through ops's ingress";

async function appInNamespace(): Promise<ChildServer & { port: number }> {
  const tools = networkTools();
  if (typeof tools === "string") throw new Error(tools);
  const policy = networkPolicy({ publicUrl: "http://127.0.0.1:9", sandboxAllowCidrs: [], sandboxHostPorts: [] });
  const ns = await openNetns({ ...tools, policy, forward: true });
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
    cpuMs: () => 0,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
      await ns.close();
    },
  };
}

export async function run(ctx: BenchContext): Promise<string> {
  const host = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
  const boxed = await appInNamespace();
  const ingress = path.join(ROOT, "bench/ingress.bench.ts");
  const viaHost = await ctx.startServer([process.execPath, ingress, "ingress", "{port}", new URL(host.url).port], "/health");
  const viaBoxed = await ctx.startServer([process.execPath, ingress, "ingress", "{port}", String(boxed.port)], "/health");
  try {
    const direct = await ctx.compare({ url: `${host.url}/health` }, { url: `${boxed.url}/health` });
    const proxied = await ctx.compare({ url: `${viaHost.url}/health` }, { url: `${viaBoxed.url}/health` });
    assertNoErrors({ "app on the host": direct.a, "app in its namespace": direct.b, "ingress to the host app": proxied.a, "ingress to the namespaced app": proxied.b });
    const r = (x: number, y: number) => (x / y).toFixed(2);
    return (
      `sandbox-net: app on loopback ${direct.a.requestsPerSec} req/s, in its namespace ${direct.b.requestsPerSec} req/s (${r(direct.b.requestsPerSec, direct.a.requestsPerSec)}, p50 ${direct.a.p50Ms.toFixed(2)} → ${direct.b.p50Ms.toFixed(2)} ms);` +
      ` through ops's ingress ${proxied.a.requestsPerSec} → ${proxied.b.requestsPerSec} req/s (${r(proxied.b.requestsPerSec, proxied.a.requestsPerSec)}, p50 ${proxied.a.p50Ms.toFixed(2)} → ${proxied.b.p50Ms.toFixed(2)} ms)` +
      ` (${ctx.load.connections} connections, ${ctx.load.threads} threads; medians of alternating rounds)`
    );
  } finally {
    for (const s of [viaHost, viaBoxed, host, boxed]) await s.stop();
  }
}
