/**
 * Apps keep serving when ops itself dies (issue 33, decision 0600), against a real `ops serve`
 * child process and the data plane it starts: a signed Node app (an id made at its start, a
 * numbered line every 100 ms) is deployed behind the ingress, and a request loop runs through the
 * ingress the whole time.
 *
 * - `kill -9` of the process that serves the API: no request fails while it is down or after it
 *   is started again (as systemd would), the app is the same process (the same id), and every line
 *   it printed meanwhile is searchable in Logs afterwards.
 * - `kill -9` of the ingress's process: it serves again within a second; the app is untouched.
 * - With the control plane down, `kill -9` of the app: the data plane starts it again.
 * - Hostile: the app cannot see, signal or read the data plane's processes.
 * - A control plane killed at any moment of a rollout leaves the old or the new replicas serving,
 *   never none: no request fails, and the next start finishes the job.
 * - SIGTERM of ops stops the data plane, the ingress and the app.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, freePort, tempDir, type TestApp } from "./harness";
import { registryCast } from "./support/registries";
import { pushPacked } from "./support/builds";
import { defaultHostOf } from "./deploy-fixtures";
import { FixedClock } from "../src/core/clock";
import { bootstrapOwner } from "../src/domains/access/bootstrap";
import { packImage } from "../src/domains/builds/image";
import { ensureSigningKey, signImage } from "../src/domains/builds/signing";
import { descendants } from "../src/adapters/runtime/process";

setDefaultTimeout(240_000);

const ROOT = path.resolve(import.meta.dir, "..");
const root = tempDir("ops-crash-apps-");
chmodSync(root, 0o755);
const dataDir = path.join(root, "data");
const port = freePort();
const ingressPort = freePort();
const base = `http://127.0.0.1:${port}`;
const ingress = `http://127.0.0.1:${ingressPort}`;

/** The app: an id of this run, its version, health, a numbered line every 100 ms, and a probe of host pids. */
const APP = String.raw`
const http = require("http");
const fs = require("fs");
const id = require("crypto").randomUUID();
let tick = 0;
setInterval(() => console.log("tick " + tick++ + " of " + id), 100);
http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/id") return res.end(id);
  if (url.pathname === "/version") return res.end(process.env.APP_VERSION || "");
  if (url.pathname === "/healthz") return res.end("ok");
  if (url.pathname === "/probe") {
    const pid = Number(url.searchParams.get("pid"));
    const out = {};
    try { process.kill(pid, 0); out.signal = "sent"; } catch (e) { out.signal = e.code; }
    for (const f of ["environ", "cmdline", "status"]) {
      try { fs.readFileSync("/proc/" + pid + "/" + f); out[f] = "read"; } catch (e) { out[f] = e.code; }
    }
    out.pids = fs.readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number);
    res.setHeader("content-type", "application/json");
    return res.end(JSON.stringify(out));
  }
  res.end("hello");
}).listen(Number(process.env.PORT));
`;

let slug = "";
let token = "";
let v1 = "";
let v2 = "";
let server: ReturnType<typeof Bun.spawn> | null = null;
const serverOut: string[] = [];

const env = {
  ...process.env,
  OPS_DATA_DIR: dataDir,
  OPS_LISTEN: `127.0.0.1:${port}`,
  OPS_PUBLIC_URL: base,
  OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}`,
  OPS_BOOTSTRAP_EMAIL: "owner@ops.test",
  OPS_BOOTSTRAP_PASSWORD: "owner-password-for-tests",
  OPS_SCHEDULER_TICK_MS: "100",
  OPS_SHUTDOWN_GRACE_MS: "3000",
  OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "30",
  OPS_LOG_LEVEL: "info",
};

async function until<T>(what: string, check: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; ops said: ${serverOut.join("").slice(-3000)}`);
    await Bun.sleep(50);
  }
}

async function api<T = any>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

const via = (p: string, ms = 3000) => fetch(`${ingress}${p}`, { headers: { host: defaultHostOf(slug, "web") }, signal: AbortSignal.timeout(ms) });
const text = (p: string) => via(p).then((r) => (r.status === 200 ? r.text() : null), () => null);

/** The data plane's pid (its pid file), and its processes: the ingress processes and the app's node. */
function plane(): { pid: number; ingress: number | null; ingresses: number[]; app: number | null } | null {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(dataDir, "run", "data-plane", "pid"), "utf8").split(" ")[0]);
  } catch {
    return null;
  }
  const below = descendants(pid);
  const cmd = (p: number) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, "utf8");
    } catch {
      return "";
    }
  };
  const ingresses = below.filter((p) => cmd(p.pid).includes("ingress")).map((p) => p.pid);
  return { pid, ingress: ingresses[0] ?? null, ingresses, app: below.find((p) => p.comm === "node")?.pid ?? null };
}

const alive = (pid: number) => {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
};

function startOps(): void {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
  for (const stream of [proc.stdout, proc.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      const reader = stream.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) serverOut.push(new TextDecoder().decode(r.value));
    })();
  }
  server = proc;
}

async function ready(): Promise<void> {
  await until("ops to be ready", () => fetch(`${base}/readyz`).then((r) => r.status === 200, () => false));
}

async function killOps(): Promise<void> {
  server!.kill("SIGKILL");
  await server!.exited;
}

/** A request loop through the ingress; `stop()` ends it and returns what it saw. */
function requestLoop(): { stop(): Promise<Array<{ at: number; body: string | null }>> } {
  const seen: Array<{ at: number; body: string | null }> = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const at = Date.now();
      seen.push({ at, body: await text("/version") });
      await Bun.sleep(5);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

async function pushVersion(t: TestApp, version: string): Promise<string> {
  const work = tempDir("ops-crash-image-");
  const out = path.join(work, "out");
  mkdirSync(out);
  writeFileSync(path.join(out, "app.js"), APP);
  const img = await packImage({ outputDir: out, layerFile: path.join(work, "layer.tar.gz"), start: `APP_VERSION=${version} exec node app.js`, port: 8080, commit: `c4a5${version}`.padEnd(40, "0"), commitTime: Date.UTC(2026, 11, 1), source: `${slug}/web` });
  const pushed = await pushPacked(t.core, img, `${slug}/web`, version);
  ensureSigningKey(t.core);
  await signImage(t.core, `${slug}/web`, pushed.digest);
  return pushed.digest;
}

beforeAll(async () => {
  const t = await createTestApp({ dataDir, clock: new FixedClock(Date.now()), env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "20" } });
  await bootstrapOwner(t.core);
  const cast = await registryCast(t);
  slug = cast.project.slug;
  v1 = await pushVersion(t, "v1");
  v2 = await pushVersion(t, "v2");
  await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/resources/service`, { token: cast.publisher.session, body: { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz", replicas: 1 } } }), 201);
  await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/resources/service/web/deploy`, { token: cast.publisher.session, body: { digest: v1 } }), 201);
  await t.core.scheduler.runDue();
  await t.close();

  startOps();
  await ready();
  const login = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "owner@ops.test", password: "owner-password-for-tests", client: "cli" }) });
  token = ((await login.json()) as { token: string }).token;
  await until("the app to answer through the ingress", async () => (await text("/version")) === "v1");
});

afterAll(async () => {
  if (process.env.OPS_TEST_SHOW_LOG) console.log(serverOut.join(""));
  const p = plane();
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await server.exited;
  }
  // A test that failed half way may leave the data plane without its control plane.
  if (p && alive(p.pid)) process.kill(p.pid, "SIGTERM");
  rmSync(root, { recursive: true, force: true });
});

describe("the data plane keeps apps up when ops dies", () => {
  test("kill -9 of the API's process: no request fails, the same app process, its lines while ops was down are in Logs", async () => {
    const before = plane()!;
    expect(before.app).not.toBeNull();
    const id = (await text("/id"))!;
    const loop = requestLoop();
    await Bun.sleep(500);
    await killOps();
    const downAt = Date.now();
    await Bun.sleep(2500);
    expect(plane()!.pid).toBe(before.pid);
    startOps();
    await ready();
    const upAt = Date.now();
    await Bun.sleep(1000);
    const seen = await loop.stop();
    const down = seen.filter((r) => r.at > downAt && r.at < upAt);
    console.log(`kill -9 of ops: ${seen.length} requests through the ingress, ${down.length} while the API was down (${upAt - downAt} ms), ${seen.filter((r) => r.body !== "v1").length} failed`);
    expect(down.length).toBeGreaterThan(20);
    expect(seen.filter((r) => r.body !== "v1")).toEqual([]);
    expect(await text("/id")).toBe(id);
    expect(plane()!.app).toBe(before.app);

    // Every tick the app printed from before the kill to after the start, none missing.
    const ticks = await until("the lines printed while ops was down in the log search", async () => {
      const r = await api<Array<{ message: string; timestamp: string }>>("GET", `/api/v1/obs/logs?project=${slug}&service=web&environment=production&q=${encodeURIComponent(id)}&limit=1000&from=5m`);
      const times = r.body.map((e) => Date.parse(e.timestamp));
      return times.some((at) => at < downAt - 200) && times.some((at) => at > upAt + 200) && r.body;
    });
    // After a crash a line may be stored twice (those the dead control plane stored but had not yet
    // acknowledged, decision 0600); none may be missing.
    const numbers = [...new Set(ticks.map((e) => Number(/tick (\d+)/.exec(e.message)?.[1])))].sort((a, b) => a - b);
    console.log(`lines printed while ops was down: ${numbers.length} distinct, ${ticks.length - numbers.length} stored twice`);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => numbers[0]! + i));
    const whileDown = ticks.filter((e) => Date.parse(e.timestamp) > downAt + 200 && Date.parse(e.timestamp) < upAt - 200);
    expect(whileDown.length).toBeGreaterThan(10);
  });

  test("the estate's processes: GET /api/v1/admin/processes names the control plane, the data plane and its ingress with their pids", async () => {
    const p = plane()!;
    const r = await api<{ mode: string; processes: Array<{ part: string; pid: number | null; uptime_s: number | null; detail: string }> }>("GET", "/api/v1/admin/processes");
    expect(r.status).toBe(200);
    expect(r.body.mode).toBe("process");
    expect(r.body.processes.map((x) => x.part)).toEqual(["control plane", "data plane", "ingress"]);
    expect(r.body.processes[0]!.pid).toBe(server!.pid);
    expect(r.body.processes[1]!.pid).toBe(p.pid);
    expect(p.ingresses).toContain(r.body.processes[2]!.pid!);
    if (p.ingresses.length > 1) for (const pid of p.ingresses) expect(r.body.processes[2]!.detail).toContain(String(pid));
    expect(r.body.processes.every((x) => (x.uptime_s ?? -1) >= 0)).toBe(true);
    expect(r.body.processes[1]!.detail).toStartWith("1 replica");
  });

  test("kill -9 of the ingress's processes (all of them at once): serving again within a second, the app untouched", async () => {
    const before = plane()!;
    const id = await text("/id");
    for (const pid of before.ingresses) process.kill(pid, "SIGKILL");
    const killedAt = Date.now();
    await until("the ingress to serve again", async () => (await text("/version")) === "v1", 5000);
    const back = Date.now() - killedAt;
    console.log(`kill -9 of the ingress: serving again after ${back} ms`);
    expect(back).toBeLessThan(1000);
    const after = plane()!;
    expect(after.ingresses.some((pid) => before.ingresses.includes(pid))).toBe(false);
    expect(after.app).toBe(before.app);
    expect(await text("/id")).toBe(id);
  });

  test("hostile: the app cannot see, signal or read the data plane's processes", async () => {
    const p = plane()!;
    for (const pid of [p.pid, ...p.ingresses, server!.pid]) {
      const res = await via(`/probe?pid=${pid}`);
      const seen = (await res.json()) as { signal: string; environ: string; cmdline: string; status: string; pids: number[] };
      expect(seen.signal).toBe("ESRCH");
      expect([seen.environ, seen.cmdline, seen.status]).toEqual(["ENOENT", "ENOENT", "ENOENT"]);
      // Its own pid namespace: a handful of its own processes, none of the host's.
      expect(seen.pids.length).toBeLessThan(10);
    }
  });

  test("with the API down, kill -9 of the app: the data plane starts it again", async () => {
    await killOps();
    const before = plane()!;
    const id = await text("/id");
    process.kill(before.app!, "SIGKILL");
    const again = await until("the app to answer again with a new id", async () => {
      const now = await text("/id");
      return now && now !== id ? now : null;
    }, 20_000);
    expect(again).not.toBe(id);
    expect(plane()!.pid).toBe(before.pid);
    startOps();
    await ready();
  });

  test("a control plane killed during a rollout leaves the old or the new replicas serving, never none; the next start finishes it", async () => {
    // Killed at several moments of a rollout: starting the new replica, probing it, switching, draining.
    const digests = { v1, v2 };
    for (const [to, killAfter] of [["v2", 150], ["v1", 900], ["v2", 1800], ["v1", 2800]] as const) {
      const loop = requestLoop();
      const deploy = await api("POST", `/api/v1/projects/${slug}/resources/service/web/deploy`, { digest: digests[to] });
      expect({ status: deploy.status, body: deploy.status === 201 ? null : deploy.body }).toEqual({ status: 201, body: null });
      await Bun.sleep(killAfter);
      await killOps();
      await Bun.sleep(1000);
      startOps();
      await ready();
      await until(`${to} to serve after the restart`, async () => (await text("/version")) === to, 60_000);
      await until("one replica left", () => plane()!.app !== null && descendants(plane()!.pid).filter((p) => p.comm === "node").length === 1, 30_000);
      await until("the rollout's verdict", async () => (await api<Array<{ state: string }>>("GET", `/api/v1/projects/${slug}/deployments?service=web&limit=1`)).body[0]?.state === "healthy", 30_000);
      const seen = await loop.stop();
      console.log(`rollout to ${to} interrupted by kill -9 after ${killAfter} ms: ${seen.length} requests, ${seen.filter((r) => r.body === "v1").length} v1, ${seen.filter((r) => r.body === "v2").length} v2, ${seen.filter((r) => r.body !== "v1" && r.body !== "v2").length} failed`);
      expect(seen.filter((r) => r.body !== "v1" && r.body !== "v2")).toEqual([]);
    }
  });

  test("SIGTERM of ops stops the data plane, the ingress and the app", async () => {
    const p = plane()!;
    server!.kill("SIGTERM");
    expect(await server!.exited).toBe(0);
    await until("every process of the data plane to end", () => [p.pid, ...p.ingresses, p.app!].every((pid) => !alive(pid)), 15_000);
    await expect(fetch(ingress, { signal: AbortSignal.timeout(1000) })).rejects.toThrow();
  });
});
