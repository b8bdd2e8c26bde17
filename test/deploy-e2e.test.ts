/**
 * The delivery loop end to end, as a user runs it: a real `ops serve` child process with its
 * ingress, the real `git` CLI pushing a small Node HTTP app to the built-in host, and only the
 * HTTP API beside it.
 *
 * v1 is pushed, built, signed and rolled out, and answers through the ingress; v2 is pushed while
 * a bounded loop of requests runs against the ingress, with zero failed requests across the
 * switch; v3's health check fails, v2 keeps answering, the timeline says `rolled_back` with
 * `failure_kind: health` and a notice says so; a rollback to v1; then `ops serve` is stopped and
 * started again on the same data dir, and v1 answers again. One server, one app, several checks.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir, waitFor } from "./harness";
import { cloneUrl, git, workDir } from "./sources-git-helpers";

setDefaultTimeout(180_000);

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const EMAIL = "owner@ops.test";
const PASSWORD = "deploy-e2e-owner-password";
const root = tempDir("ops-deploy-e2e-");
chmodSync(root, 0o755);
const dataDir = path.join(root, "data");
const ingressPort = freePort();
const ingress = `http://127.0.0.1:${ingressPort}`;
const HOST = "web.production.shop.localhost";
let server: { base: string; child: ReturnType<typeof Bun.spawn> } | null = null;
let token = "";
let repoDir = "";

function app(version: string, healthy = true): Record<string, string> {
  return {
    "ops.toml": '[services.web]\nstart = "node server.js"\nhealth = "/healthz"\n',
    "server.js": `const http = require("http");
const server = http.createServer((req, res) => {
  if (req.url === "/healthz") { res.statusCode = ${healthy ? 200 : 500}; return res.end(${healthy ? '"ok"' : '"sick"'}); }
  res.end("${version}");
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
server.listen(Number(process.env.PORT));
`,
  };
}

async function serve(): Promise<void> {
  const port = freePort();
  const child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], {
    cwd: root,
    env: {
      ...process.env,
      OPS_BOOTSTRAP_EMAIL: EMAIL,
      OPS_BOOTSTRAP_PASSWORD: PASSWORD,
      OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}`,
      OPS_SCHEDULER_TICK_MS: "100",
      OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "6",
      OPS_SHUTDOWN_GRACE_MS: "3000",
      OPS_BUILD_MEMORY_MB: "256",
      OPS_LOG_LEVEL: "warn",
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  server = { base, child };
  await waitFor(`${base}/readyz`, 200, 30_000);
}

async function api<T = any>(method: string, p: string, body?: unknown, expected?: number): Promise<T> {
  const res = await fetch(`${server!.base}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (expected !== undefined && res.status !== expected) throw new Error(`${method} ${p}: expected ${expected}, got ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

/** Poll until `check` returns a value (a build and a rollout of real processes take seconds). */
async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(200);
  }
}

async function answer(): Promise<string> {
  const res = await fetch(ingress, { headers: { host: HOST } });
  return `${res.status} ${await res.text()}`;
}

async function pushVersion(version: string, healthy = true): Promise<void> {
  for (const [p, text] of Object.entries(app(version, healthy))) writeFileSync(path.join(repoDir, p), text);
  await git(repoDir, "add", "-A");
  await git(repoDir, "commit", "-q", "-m", `Version ${version}`);
  await git(repoDir, "push", "-q", "origin", "main");
}

/** The newest timeline row of the build of the commit message `Version <v>`, once it reached `state`. */
function rowOf(version: string, states: string[]) {
  return until(`${version} to be ${states.join(" or ")}`, async () => {
    const rows = await api<any[]>("GET", "/api/v1/projects/shop/deployments?service=web");
    const row = rows.find((r) => r.message === `Version ${version}`);
    return row && states.includes(row.state) ? row : null;
  });
}

beforeAll(async () => {
  mkdirSync(dataDir, { mode: 0o755 });
  await serve();
  token = (await api<{ token: string }>("POST", "/api/v1/auth/login", { email: EMAIL, password: PASSWORD, client: "cli" }, 200)).token;
  await api("POST", "/api/v1/projects", { slug: "shop", name: "Shop" }, 201);
  await api("POST", "/api/v1/projects/shop/sources", { repo: "shop/app" }, 201);
  await api("PUT", "/api/v1/projects/shop/resources/service/web", { spec: { source: { repo: "shop/app" }, health_check_path: "/healthz" } }, 201);
  const work = workDir("ops-deploy-e2e-work-");
  repoDir = path.join(work, "app");
  await git(work, "clone", "-q", cloneUrl(server!.base, "shop/app", token), "app");
  await git(repoDir, "checkout", "-q", "-B", "main");
});

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.child.exited;
  }
  rmSync(root, { recursive: true, force: true });
});

describe("push to deploy", () => {
  test("v1: pushed with git, built, signed, rolled out, answers through the ingress", async () => {
    await pushVersion("v1");
    const row = await rowOf("v1", ["healthy", "failed", "rolled_back", "refused"]);
    expect(row).toMatchObject({ state: "healthy", build: { status: "healthy", trigger: "push" }, deployment: { trigger: "build", rollout: "healthy" } });
    expect(await answer()).toBe("200 v1");
  });

  test("v2 under a bounded request loop: zero failed requests across the switch", async () => {
    let stop = false;
    const failures: string[] = [];
    const seen = new Set<string>();
    let count = 0;
    const loop = (async () => {
      while (!stop && count < 20_000) {
        count++;
        try {
          const a = await answer();
          if (!a.startsWith("200 ")) failures.push(a.slice(0, 100));
          else seen.add(a.slice(4));
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
    })();
    await pushVersion("v2");
    const row = await rowOf("v2", ["healthy", "failed", "rolled_back", "refused"]);
    await Bun.sleep(300);
    stop = true;
    await loop;
    expect(row.state).toBe("healthy");
    console.log(`deploy-e2e: v2 rolled out (build excluded) in ${Date.parse(row.deployment.finished_at) - Date.parse(row.deployment.created_at)} ms on the process runtime, ${count} requests, ${failures.length} failed`);
    expect(failures).toEqual([]);
    expect([...seen].sort()).toEqual(["v1", "v2"]);
    expect(await answer()).toBe("200 v2");
  });

  test("the ingress's request metrics reach Metrics from the data plane's ingress processes, with no telemetry in the app", async () => {
    const before = Date.now();
    for (let i = 0; i < 50; i++) expect(await answer()).toBe("200 v2");
    const from = new Date(before - 3_600_000).toISOString();
    const total = await until("the ingress's request count in Metrics", async () => {
      const s = await api<any>("GET", `/api/v1/obs/metrics/series?project=shop&environment=production&service=web&name=ops.ingress.requests&from=${from}`);
      const last = (s.series as any[]).flatMap((x) => x.points).filter((p: any) => p.value !== null).at(-1)?.value ?? 0;
      return last >= 50 ? last : null;
    }, 40_000);
    expect(total).toBeGreaterThanOrEqual(50);
    const p95 = await api<any>("GET", `/api/v1/obs/metrics/series?project=shop&environment=production&service=web&name=ops.ingress.request.duration.p95&from=${from}`);
    expect((p95.series as any[]).flatMap((x) => x.points).some((p: any) => p.value !== null && p.value > 0)).toBe(true);
  });

  test("v3 fails its health check: v2 keeps answering, the timeline says rolled_back (health), a notice", async () => {
    await pushVersion("v3", false);
    const row = await rowOf("v3", ["healthy", "failed", "rolled_back", "refused"]);
    expect(row).toMatchObject({ state: "rolled_back", failure_kind: "health", build: { status: "rolled_back" }, deployment: { rollout: "rolled_back" } });
    expect(row.state_text).toContain("/healthz answered HTTP 500");
    expect(await answer()).toBe("200 v2");
    const notices = await api<Array<{ kind: string; params: Record<string, unknown> }>>("GET", "/api/v1/notifications?project=shop");
    expect(notices.some((n) => n.kind === "deployment.auto_rollback" && n.params.service === "web")).toBe(true);
  });

  test("rollback to v1, then ops serve restarts and v1 answers again", async () => {
    const v1 = (await rowOf("v1", ["healthy"])).deployment.image_digest as string;
    const d = await api("POST", "/api/v1/projects/shop/resources/service/web/rollback", { digest: v1 }, 201);
    expect(d).toMatchObject({ trigger: "rollback", image_digest: v1 });
    await until("the rollback", async () => (await answer()) === "200 v1" && (await api<any[]>("GET", "/api/v1/projects/shop/deployments?service=web&limit=1"))[0].state === "healthy");

    server!.child.kill("SIGTERM");
    expect(await server!.child.exited).toBe(0);
    await expect(fetch(ingress, { headers: { host: HOST } })).rejects.toThrow();
    await serve();
    expect(await until("v1 after the restart", async () => ((await answer()) === "200 v1" ? "yes" : null), 60_000)).toBe("yes");
  });
});
