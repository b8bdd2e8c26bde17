/**
 * GET /api/v1/status/public on `ops serve` (the compiled binary): the components, the worst
 * state and the incidents folded from 30 days of transitions, against GET /health on the same
 * server. The data dir gets 20 extra components with a day of flapping each (about 2,900
 * transitions) before the load, so the fold has work to do (the server refolds at most every 5 s; the document then holds ~1,440 incidents, ~200 KB).
 */
import { assertNoErrors, type BenchContext } from "./lib";

export const name = "status";
export const description = "GET /api/v1/status/public (with ~2,900 transitions to fold) vs GET /health on the same server";

export async function run(ctx: BenchContext): Promise<string> {
  const ops = await ctx.startOps({ OPS_BOOTSTRAP_EMAIL: "bench@ops.test", OPS_BOOTSTRAP_PASSWORD: "bench-password-long" });
  try {
    const login = await fetch(`${ops.url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "bench@ops.test", password: "bench-password-long", client: "cli" }),
    });
    if (!login.ok) throw new Error(`sign-in for the bench failed: ${login.status}`);
    const token = ((await login.json()) as { token: string }).token;
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    for (let c = 0; c < 20; c++) {
      const slug = `svc-${c}`;
      await fetch(`${ops.url}/api/v1/status/components`, { method: "POST", headers: auth, body: JSON.stringify({ slug, name: `Service ${c}` }) });
      for (let i = 0; i < 144; i++) {
        const state = i % 2 === 0 ? (i % 4 === 0 ? "down" : "degraded") : "operational";
        await fetch(`${ops.url}/api/v1/status/components/${slug}/transitions`, { method: "POST", headers: auth, body: JSON.stringify({ state }) });
      }
    }
    const status = await ctx.measure(`${ops.url}/api/v1/status/public`);
    const health = await ctx.measure(`${ops.url}/health`);
    assertNoErrors({ status, health });
    return (
      `status: /api/v1/status/public ${status.requestsPerSec} req/s (p50 ${status.p50Ms.toFixed(2)} ms, p99 ${status.p99Ms.toFixed(2)} ms), ` +
      `/health ${health.requestsPerSec} req/s on the same server, ratio ${(status.requestsPerSec / health.requestsPerSec).toFixed(2)} ` +
      `(26 components, ~2,900 transitions; ${ctx.load.connections} connections, ${ctx.load.threads} threads, ${ctx.load.duration} s each)`
    );
  } finally {
    await ops.stop();
  }
}
