/**
 * Authenticated `GET /api/v1/me` with a minted token on `ops serve` (run from source, temp data
 * dir) against a bare Bun.serve hello under the same wrk load: what authentication (token digest
 * lookup), the authorization macro (grants) and the identity read cost per request.
 * `npm run bench -- me`, or on its own: `bun bench/me.bench.ts [--duration 10] [--connections 50]`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, ratioLine, type BenchContext, type LoadResult, runAlone } from "./lib";

export const name = "me";
export const description = "GET /api/v1/me with a token: ops serve (from source) vs a bare Bun.serve";

const OWNER = { email: "bench-owner@ops.test", password: "bench-owner-password" };

async function json(url: string, init: RequestInit): Promise<any> {
  const res = await fetch(url, { ...init, headers: { "content-type": "application/json", ...(init.headers ?? {}) } });
  const body = await res.json();
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

export async function run(ctx: BenchContext): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-me-"));
  try {
    const ops = await ctx.startServer(
      ["env", `OPS_BOOTSTRAP_EMAIL=${OWNER.email}`, `OPS_BOOTSTRAP_PASSWORD=${OWNER.password}`, process.execPath, path.join(ROOT, "src/main.ts"), "serve", "--data-dir", path.join(dir, "data"), "--listen", "127.0.0.1:{port}"],
      "/readyz",
    );
    const hello = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
    let opsResult: LoadResult;
    let baseResult: LoadResult;
    let healthResult: LoadResult;
    try {
      // Set-up through the API: sign in as the bootstrapped owner, create a project, mint a token.
      const login = await json(`${ops.url}/api/v1/auth/login`, { method: "POST", body: JSON.stringify({ ...OWNER, client: "cli" }) });
      const auth = { authorization: `Bearer ${login.token}` };
      await json(`${ops.url}/api/v1/projects`, { method: "POST", headers: auth, body: JSON.stringify({ slug: "bench", name: "Bench" }) });
      const roles = await json(`${ops.url}/api/v1/projects/bench/roles`, { headers: auth });
      const developer = roles.find((r: { slug: string }) => r.slug === "developer");
      const minted = await json(`${ops.url}/api/v1/tokens`, { method: "POST", headers: auth, body: JSON.stringify({ name: "bench", role_id: developer.id }) });
      const me = await json(`${ops.url}/api/v1/me`, { headers: { authorization: `Bearer ${minted.secret}` } });
      if (me.via !== "token") throw new Error("the bench token did not authenticate as a token");
      ({ a: opsResult, b: baseResult } = await ctx.compare({ url: `${ops.url}/api/v1/me`, headers: { authorization: `Bearer ${minted.secret}` } }, { url: `${hello.url}/health` }));
      // The same server's unauthenticated /health: the ceiling the kernel's plumbing sets.
      healthResult = await ctx.measure(`${ops.url}/health`, {}, Math.max(2, Math.round(ctx.load.duration / 3)));
    } finally {
      await ops.stop();
      await hello.stop();
    }
    return ratioLine(
      "me",
      opsResult,
      baseResult,
      ctx.load,
      `the same server's /health ${healthResult.requestsPerSec} req/s, so /me runs at ${(opsResult.requestsPerSec / healthResult.requestsPerSec).toFixed(2)} of the plumbing's ceiling`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runAlone(run);
