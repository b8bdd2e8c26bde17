/**
 * Apps keep answering across `ops restart` (issue 23 item 5, docs/decisions/0390; since 0600 the
 * replicas live in the data plane, which a restart leaves alone), against a real
 * `ops serve` child process: a signed Node app (which also writes a numbered line every 100 ms) is
 * deployed behind the ingress; a bounded request loop runs through the ingress while `ops restart`
 * re-executes ops, and a second loop watches ops's own /readyz. Checked: the app's process is the
 * same one after, every failed request was sent while ops's own listener was down (between its last
 * ready answer before and its first after) and no more failed than were sent then, no numbered
 * line is lost and those written after the restart are searchable; a crash of the adopted process
 * restarts it the usual way in its namespace, and it survives a second restart; a later
 * `replicas: 0` stops the adopted process, new replicas start beside the kept ones' ids, and
 * SIGTERM still stops every process ops started.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { chmodSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, freePort, tempDir } from "./harness";
import { registryCast } from "./support/registries";
import { defaultHostOf, pushApp } from "./deploy-fixtures";
import { FixedClock } from "../src/core/clock";
import { bootstrapOwner } from "../src/domains/access/bootstrap";
import { runCli } from "../src/main";
import { descendants } from "../src/adapters/runtime/process";

setDefaultTimeout(180_000);

const ROOT = path.resolve(import.meta.dir, "..");
const root = tempDir("ops-restart-apps-");
chmodSync(root, 0o755);
const dataDir = path.join(root, "data");
const port = freePort();
const ingressPort = freePort();
const base = `http://127.0.0.1:${port}`;
const ingress = `http://127.0.0.1:${ingressPort}`;
const TICKS = `(i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.1; done) & APP_VERSION=v1 HEALTH=ok exec node wrap.js`;
let slug = "";
let token = "";
let server: ReturnType<typeof Bun.spawn> | null = null;
const serverErr: string[] = [];
/** When the real ops started (the in-process set-up ran the app once before: its lines are older). */
let servedFrom = 0;

async function api<T = any>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

async function until<T>(what: string, check: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; ops said: ${serverErr.join("").slice(-2000)}`);
    await Bun.sleep(100);
  }
}

const via = (p: string) => fetch(`${ingress}${p}`, { headers: { host: defaultHostOf(slug, "web"), connection: "close" }, signal: AbortSignal.timeout(3000) });
/** The data plane's pid (decision 0600: replicas live there, apart from ops serve). */
const planePid = () => {
  try {
    return Number(readFileSync(path.join(dataDir, "run", "data-plane", "pid"), "utf8").split(" ")[0]);
  } catch {
    return null;
  }
};
/** The app's node process and every other process below ops and its data plane. */
const below = () => [...descendants(server!.pid), ...(planePid() ? descendants(planePid()!) : [])];
const appPid = () => below().find((p) => p.comm === "node")?.pid ?? null;
const startOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19];
const gone = (pid: number) => {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
};
const spec = (replicas: number) => ({ spec: { image: `${slug}/web`, health_check_path: "/healthz", replicas } });

beforeAll(async () => {
  // The data dir, the project and a deployed app, made in-process; then a real ops serves it.
  const t = await createTestApp({ dataDir, clock: new FixedClock(Date.now()), env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "20" } });
  await bootstrapOwner(t.core);
  const cast = await registryCast(t);
  slug = cast.project.slug;
  const digest = await pushApp(t, slug, "web", { version: "v1", start: TICKS });
  await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/resources/service`, { token: cast.publisher.session, body: { name: "web", ...spec(1) } }), 201);
  await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/resources/service/web/deploy`, { token: cast.publisher.session, body: { digest } }), 201);
  await t.core.scheduler.runDue();
  await t.close();

  servedFrom = Date.now();
  server = Bun.spawn([process.execPath, "src/main.ts", "serve"], {
    cwd: ROOT,
    env: {
      ...process.env,
      OPS_DATA_DIR: dataDir,
      OPS_LISTEN: `127.0.0.1:${port}`,
      OPS_PUBLIC_URL: base,
      OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}`,
      OPS_BOOTSTRAP_EMAIL: "owner@ops.test",
      OPS_BOOTSTRAP_PASSWORD: "owner-password-for-tests",
      OPS_SCHEDULER_TICK_MS: "100",
      OPS_SHUTDOWN_GRACE_MS: "3000",
      OPS_LOG_LEVEL: "info",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const stream of [server.stdout, server.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      const reader = stream.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) serverErr.push(new TextDecoder().decode(r.value));
    })();
  }
  await until("ops to be ready", () => fetch(`${base}/readyz`).then((r) => r.status === 200, () => false));
  const login = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "owner@ops.test", password: "owner-password-for-tests", client: "cli" }) });
  const session = (await login.json()) as { token?: string };
  if (!session.token) throw new Error(`login failed: ${login.status} ${JSON.stringify(session)}`);
  token = session.token;
  await until("the app to answer through the ingress", () => via("/version").then(async (r) => r.status === 200 && (await r.text()) === "v1", () => false));
});

afterAll(async () => {
  if (process.env.OPS_TEST_SHOW_LOG) console.log(serverErr.join(""));
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await server.exited;
  }
  rmSync(root, { recursive: true, force: true });
});

describe("ops restart keeps apps running", () => {
  test("same app process; requests fail only while ops's own listener is down; no output lost", async () => {
    const pidBefore = appPid()!;
    expect(pidBefore).toBeGreaterThan(0);
    const startBefore = startOf(pidBefore);
    const requests: Array<{ sent: number; ok: boolean }> = [];
    const ready: Array<{ sent: number; got: number; ok: boolean }> = [];
    let stop = false;
    const loop = (async () => {
      while (!stop && requests.length < 20_000) {
        const sent = performance.now();
        const ok = await via("/version").then(async (r) => r.status === 200 && (await r.text()) === "v1", () => false);
        requests.push({ sent, ok });
        await Bun.sleep(2);
      }
    })();
    const watch = (async () => {
      while (!stop) {
        const sent = performance.now();
        const ok = await fetch(`${base}/readyz`, { headers: { connection: "close" }, signal: AbortSignal.timeout(3000) }).then((r) => r.status === 200, () => false);
        ready.push({ sent, got: performance.now(), ok });
        await Bun.sleep(5);
      }
    })();
    await Bun.sleep(500);
    let out = "";
    let err = "";
    const code = await runCli(["restart", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], { stdout: (s) => (out += s), stderr: (s) => (err += s), env: {}, cwd: ROOT });
    const restartedAt = Date.now();
    const settled = requests.length;
    await until("100 requests after the restart", () => requests.length >= settled + 100, 20_000);
    stop = true;
    await Promise.all([loop, watch]);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toContain(`ops serve (pid ${server!.pid}) restarted`);

    // The same process, not a new one with a reused pid.
    expect(appPid()).toBe(pidBefore);
    expect(startOf(pidBefore)).toBe(startBefore);

    // ops's own downtime: from its last ready answer before the outage to its first after.
    const firstDown = ready.findIndex((r) => !r.ok);
    expect(firstDown).toBeGreaterThan(0);
    const backUp = ready.findIndex((r, i) => i > firstDown && r.ok);
    expect(backUp).toBeGreaterThan(firstDown);
    const windowStart = ready[firstDown - 1]!.sent;
    const windowEnd = ready[backUp]!.got;
    const failed = requests.filter((r) => !r.ok);
    const sentInWindow = requests.filter((r) => r.sent >= windowStart && r.sent <= windowEnd).length;
    console.log(`ops restart with a kept app: ${requests.length} requests through the ingress, ${failed.length} failed, ${sentInWindow} sent during ${Math.round(windowEnd - windowStart)} ms of ops's own downtime`);
    for (const f of failed) {
      expect(f.sent).toBeGreaterThanOrEqual(windowStart);
      expect(f.sent).toBeLessThanOrEqual(windowEnd);
    }
    expect(failed.length).toBeLessThanOrEqual(sentInWindow);
    expect(requests.filter((r) => r.sent > windowEnd).length).toBeGreaterThan(20);
    expect(requests.at(-1)!.ok).toBe(true);

    // The numbered lines: every one kept, those written after the restart searchable too.
    const ticks = await until("tick lines after the restart in the log search", async () => {
      const r = await api<Array<{ message: string; timestamp: string }>>("GET", `/api/v1/obs/logs?project=${slug}&service=web&environment=production&q=tick&limit=1000`);
      const after = r.body.filter((e) => Date.parse(e.timestamp) > restartedAt + 500);
      return after.length >= 5 && r.body;
    });
    const numbers = ticks.filter((e) => Date.parse(e.timestamp) >= servedFrom).map((e) => Number(/tick (\d+)/.exec(e.message)?.[1])).sort((a, b) => a - b);
    const first = numbers[0]!;
    if (process.env.OPS_TEST_SHOW_LOG) console.log("ticks", JSON.stringify(numbers));
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => first + i));
  });

  test("the adopted replica: a crash restarts it in its namespace; a second restart keeps it; replicas 0 stops it; 1 starts a new one beside; SIGTERM stops every process ops started, kept ones too", async () => {
    // A crash of the adopted process is seen (waitpid) and restarted the usual way, on the same port.
    const adopted = appPid()!;
    await via("/crash").catch(() => null);
    await until("the crashed replica to answer again", async () => appPid() !== adopted && appPid() !== null && (await via("/version").then((r) => r.status === 200, () => false)));
    const status = await api("GET", `/api/v1/projects/${slug}/resources/service/web`);
    expect(JSON.stringify(status.body)).toContain('"restarts":1');
    // Handed over a second time: the restarted process survives a restart too.
    const again = appPid()!;
    let out = "";
    const code = await runCli(["restart", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], { stdout: (x) => (out += x), stderr: (x) => (out += x), env: {}, cwd: ROOT });
    expect(out).toContain("restarted");
    expect(code).toBe(0);
    await until("the app to answer after the second restart", () => via("/version").then((r) => r.status === 200, () => false));
    expect(appPid()).toBe(again);

    const kept = appPid()!;
    expect((await api("PUT", `/api/v1/projects/${slug}/resources/service/web`, spec(0))).status).toBe(200);
    await until("the adopted app's process to end", () => gone(kept));
    await until("the service to stop answering", () => via("/version").then((r) => r.status === 502, () => false));
    await until("the service to say it is stopped", async () => ((await api("GET", `/api/v1/projects/${slug}/resources/service/web`)).body.status?.summary ?? "").startsWith("stopped (replicas: 0)"));
    // At once: a change while the service's reconcile still runs is reconciled again after it.
    expect((await api("PUT", `/api/v1/projects/${slug}/resources/service/web`, spec(1))).status).toBe(200);
    await until("a new replica to answer", () => via("/version").then((r) => r.status === 200, () => false));
    const fresh = appPid()!;
    // Started by an image that took a hand-over: none of the kept descriptors (the other replica's
    // pipes, its namespace, the hand-over memfd) reached it; a program it starts holds only stdio.
    const fds = await (await via("/fds")).text();
    expect([...fds.matchAll(/ (\d+) -> /g)].map((m) => Number(m[1])), fds).toEqual([0, 1, 2, 3]);
    expect(fresh).not.toBe(kept);
    expect(serverErr.join("")).not.toContain("already live");

    // Kept across one more restart, then SIGTERM: the adopted replica and its namespace end too.
    expect(await runCli(["restart", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], { stdout: () => {}, stderr: () => {}, env: {}, cwd: ROOT })).toBe(0);
    await until("the app to answer after the third restart", () => via("/version").then((r) => r.status === 200, () => false));
    expect(appPid()).toBe(fresh);
    const started = [...below().map((p) => p.pid), planePid()!];
    expect(started.length).toBeGreaterThan(3); // the data plane, pasta, its holder, the sandbox and the app at least
    server!.kill("SIGTERM");
    expect(await server!.exited).toBe(0);
    await until("every process ops started to end", () => started.every(gone), 15_000);
  });
});
