/**
 * The delivery loop on a Docker Swarm (OPS_RUNTIME=swarm, decision 0615), as a user runs it: a
 * real three-node Swarm of Debian's dockerd 20.10 on this machine (test/support/engine-cluster.ts,
 * each node in a network namespace of its own), a real `ops serve` child process driving its
 * manager's Engine API with its ingress on loopback, the real `git` CLI pushing a static Go app on
 * a busybox base (the recipe of docs/guide/recipes.md), and only the HTTP API beside it. ops
 * listens on the host's address on the nodes' bridge, so the nodes pull from its registry there.
 *
 * v1 with `replicas: 2` is built, signed and rolled out as two Swarm services on two nodes, and
 * answers through ops's ingress; v2 is pushed under a request loop with no failed request, and the
 * rollout says start-first; v3's health check fails and it rolls back with v2 serving; then the
 * dockerd of a worker holding a replica is killed with SIGKILL: requests succeed again within 20 s
 * and Swarm's replacement is what the ingress routes to. Then `ops serve` stops and nothing of it is
 * left on the swarm. One swarm, one server, one app.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir } from "./harness";
import { cloneUrl, git, workDir } from "./sources-git-helpers";
import { startSwarm, waitFor, type SwarmCluster } from "./support/engine-cluster";
import { busyboxRoot, pushLayout, writeLayout } from "./support/base-images";
import { runCli } from "../src/main";
import { recipeBlock } from "./support/recipes";

setDefaultTimeout(240_000);

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const EMAIL = "owner@ops.test";
const PASSWORD = "swarm-e2e-owner-password";
const HOST = "web.production.shop.localhost";
const INSTANCE = `e2e${process.pid}`;

const root = tempDir("ops-swarm-e2e-");
chmodSync(root, 0o755);
const dataDir = path.join(root, "data");
const ingressPort = freePort();
const ingress = `http://127.0.0.1:${ingressPort}`;
let swarm: SwarmCluster;
let server: { base: string; child: ReturnType<typeof Bun.spawn> } | null = null;
let token = "";
let repoDir = "";
let registry = "";


/** The Go recipe answering `version` at / and `/healthz` with 200 (or 500). */
function app(version: string, healthy = true): Record<string, string> {
  const main = recipeBlock("Go", "main.go")
    .replace('w.Write([]byte("hello from go"))', `w.Write([]byte("${version}"))`)
    .replace('w.Write([]byte("ok"))', healthy ? 'w.Write([]byte("ok"))' : 'w.WriteHeader(500); w.Write([]byte("sick"))')
    .replace("\tif err := http.ListenAndServe", `\tos.Stdout.WriteString("${version} listening on " + os.Getenv("PORT") + "\\n")\n\tif err := http.ListenAndServe`);
  const toml = recipeBlock("A static Go app on a bare engine", "ops.toml").replace("[services.api]", "[services.web]");
  return { "ops.toml": toml, "go.mod": recipeBlock("Go", "go.mod"), "main.go": main };
}

async function api<T = any>(method: string, p: string, body?: unknown, expected?: number): Promise<T> {
  const res = await fetch(`${server!.base}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (expected !== undefined && res.status !== expected) throw new Error(`${method} ${p}: expected ${expected}, got ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, ms = 180_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(200);
  }
}

async function answer(): Promise<string> {
  const res = await fetch(ingress, { headers: { host: HOST }, signal: AbortSignal.timeout(5000) });
  return `${res.status} ${await res.text()}`;
}

async function pushVersion(version: string, healthy = true): Promise<void> {
  for (const [p, text] of Object.entries(app(version, healthy))) writeFileSync(path.join(repoDir, p), text);
  await git(repoDir, "add", "-A");
  await git(repoDir, "commit", "-q", "-m", `Version ${version}`);
  await git(repoDir, "push", "-q", "origin", "main");
}

function rowOf(version: string, states = ["healthy", "failed", "rolled_back", "refused"]) {
  return until(`${version} to be ${states.join(" or ")}`, async () => {
    const rows = await api<any[]>("GET", "/api/v1/projects/shop/deployments?service=web");
    const row = rows.find((r) => r.message === `Version ${version}`);
    return row && states.includes(row.state) ? row : null;
  });
}

/** The service's replicas as its status says: id, state, node name, host and port. */
async function replicas(): Promise<Array<{ id: string; state: string; node: { name: string; addr: string } | null; host: string; port: number }>> {
  const svc = await api<any>("GET", "/api/v1/projects/shop/resources/service/web?environment=production");
  return svc.status?.detail?.replicas ?? [];
}

/** Requests in a loop until stopped: failures and the answers seen. */
function requestLoop() {
  let stop = false;
  const failures: Array<{ at: number; what: string }> = [];
  const seen = new Set<string>();
  let count = 0;
  const until = performance.now() + 240_000;
  const done = (async () => {
    // Bounded by time, not by count: the ingress answers thousands a second, a build takes seconds.
    while (!stop && performance.now() < until) {
      count++;
      try {
        const a = await answer();
        if (!a.startsWith("200 ")) failures.push({ at: performance.now(), what: a.slice(0, 100) });
        else {
          seen.add(a.slice(4));
        }
      } catch (e) {
        failures.push({ at: performance.now(), what: (e as Error).message });
      }
    }
  })();
  return {
    failures,
    seen,
    get count() {
      return count;
    },
    async stop() {
      stop = true;
      await done;
    },
  };
}

async function serve(port: number): Promise<void> {
  const child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `${swarm.hostAddress}:${port}`], {
    cwd: root,
    env: {
      ...process.env,
      OPS_PUBLIC_URL: `http://${registry}`,
      OPS_BOOTSTRAP_EMAIL: EMAIL,
      OPS_BOOTSTRAP_PASSWORD: PASSWORD,
      OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}`,
      OPS_RUNTIME: "swarm",
      OPS_DOCKER_HOST: `unix://${swarm.nodes[0]!.socket}`,
      OPS_ENGINE_INSTANCE: INSTANCE,
      OPS_SCHEDULER_TICK_MS: "100",
      OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "25",
      OPS_SHUTDOWN_GRACE_MS: "3000",
      OPS_BUILD_MEMORY_MB: "512",
      OPS_REPLICA_MEMORY_MB: "64",
      OPS_LOG_LEVEL: "warn",
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  server = { base: `http://${registry}`, child };
  await until("ops serve to be ready", async () => (await fetch(`${server!.base}/readyz`)).status === 200, 60_000);
}

const t0 = performance.now();
beforeAll(async () => {
  const port = freePort();
  swarm = await startSwarm(3, { insecureRegistries: (host) => [`${host}:${port}`] });
  registry = `${swarm.hostAddress}:${port}`;
  mkdirSync(dataDir, { mode: 0o755 });
  await serve(port);
  token = (await api<{ token: string }>("POST", "/api/v1/auth/login", { email: EMAIL, password: PASSWORD, client: "cli" }, 200)).token;
  await api("POST", "/api/v1/projects", { slug: "shop", name: "Shop" }, 201);
  await api("POST", "/api/v1/projects/shop/sources", { repo: "shop/app" }, 201);
  await api("PUT", "/api/v1/projects/shop/resources/service/web", { spec: { source: { repo: "shop/app" }, health_check_path: "/healthz", port: 8080, replicas: 2 } }, 201);
  await pushLayout(writeLayout(busyboxRoot(), { Env: ["PATH=/bin"] }), registry, "shop/base-busybox", "1", token);
  const work = workDir("ops-swarm-e2e-work-");
  repoDir = path.join(work, "app");
  await git(work, "clone", "-q", cloneUrl(server!.base, "shop/app", token), "app");
  await git(repoDir, "checkout", "-q", "-B", "main");
}, 240_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.child.exited;
  }
  if (swarm) {
    // A stop of ops stops its apps: nothing of this ops is left on the swarm (services, secrets, networks aside).
    const left = await swarm.nodes[0]!.engine.json<unknown[]>("GET", `/services?filters=${encodeURIComponent(JSON.stringify({ label: [`dev.ops.instance=${INSTANCE}`] }))}`).catch(() => null);
    expect(left).toEqual([]);
    expect(await swarm.stop()).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
  }
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("push to deploy on a Swarm", () => {
  test("v1 with two replicas: built on its base, rolled out on two nodes, answers through the ingress", async () => {
    const pushed = performance.now();
    await pushVersion("v1");
    const row = await rowOf("v1");
    expect(row).toMatchObject({ state: "healthy", deployment: { rollout: "healthy" } });
    const reps = await until("two replicas running", async () => {
      const r = await replicas();
      return r.length === 2 && r.every((x) => x.state === "running") && r;
    }, 30_000);
    const nodes = new Map(swarm.nodes.map((n) => [n.hostname, n.address]));
    expect(new Set(reps.map((r) => r.node?.name)).size).toBe(2);
    for (const r of reps) expect(r.host).toBe(nodes.get(r.node!.name)!);
    expect(await answer()).toBe("200 v1");
    // Each task's output reaches the log store with its node and task: `<node>/<replica>/<task>`.
    const logs = await until("the replicas' output in the log store", async () => {
      const entries = await api<Array<{ host: string; message: string }>>("GET", "/api/v1/obs/logs?project=shop&service=web&environment=production&limit=200");
      return reps.every((r) => entries.some((e) => e.host.startsWith(`${r.node!.name}/${r.id}/`) && e.message === "v1 listening on 8080")) && entries;
    }, 30_000);
    expect(logs.find((e) => e.host.startsWith(`${reps[0]!.node!.name}/`))!.host).toMatch(/^[^/]+\/shop\.production\.web\.[0-9-]+\/[0-9a-z]{12}$/);
    // `ops status` and `ops nodes` say where they run.
    let out = "";
    const env = { OPS_SERVER: server!.base, OPS_TOKEN: token, HOME: root };
    const code = await runCli(["status", "--project", "shop", "web"], { stdout: (x) => (out += x), stderr: (x) => (out += x), env, cwd: root });
    expect({ code, out }).toMatchObject({ code: 0 });
    for (const r of reps) expect(out).toContain(r.node!.name);
    out = "";
    const nodesCode = await runCli(["nodes"], { stdout: (x) => (out += x), stderr: (x) => (out += x), env, cwd: root });
    expect({ code: nodesCode, out }).toMatchObject({ code: 0 });
    for (const n of swarm.nodes) expect(out).toContain(n.hostname);
    console.log(`swarm-e2e: swarm and ops up, then push → v1 serving on 2 nodes in ${Math.round((performance.now() - pushed) / 1000)} s (${Math.round((pushed - t0) / 1000)} s of set-up before)`);
  });

  test("v2 under a request loop: no failed request across the switch; the rollout says start-first", async () => {
    const loop = requestLoop();
    await pushVersion("v2");
    const row = await rowOf("v2");
    await Bun.sleep(300);
    await loop.stop();
    expect(row.state).toBe("healthy");
    expect(loop.failures).toEqual([]);
    expect([...loop.seen].sort()).toEqual(["v1", "v2"]);
    expect(await answer()).toBe("200 v2");
    expect(row.deployment.rollout_note ?? row.state_text ?? "").toContain("start-first");
    const rollMs = Date.parse(row.deployment.finished_at) - Date.parse(row.deployment.created_at);
    console.log(`swarm-e2e: v2 rolled out (build excluded) in ${rollMs} ms, ${loop.count} requests, 0 failed`);
  });

  test("v3 fails its health check: it rolls back and v2 keeps answering", async () => {
    await pushVersion("v3", false);
    const row = await rowOf("v3");
    expect(row).toMatchObject({ state: "rolled_back", failure_kind: "health" });
    expect(await answer()).toBe("200 v2");
    const services = await swarm.nodes[0]!.engine.json<unknown[]>("GET", `/services?filters=${encodeURIComponent(JSON.stringify({ label: [`dev.ops.instance=${INSTANCE}`, "dev.ops.kind=replica"] }))}`);
    expect(services.length).toBe(2); // v3's are gone
  });

  // Last: it leaves a node down.
  test("kill -9 of the dockerd of a worker holding a replica: requests succeed again within 20 s and the replacement is routed", async () => {
    const before = await replicas();
    const victim = before.find((r) => r.node && r.node.name !== swarm.nodes[0]!.hostname)!;
    const node = swarm.nodes.find((n) => n.hostname === victim.node!.name)!;
    const loop = requestLoop();
    await Bun.sleep(500);
    const killedAt = performance.now();
    await swarm.killDaemon(node.index);
    const moved = await until("the replacement running on another node", async () => {
      const r = (await replicas()).find((x) => x.id === victim.id);
      return r && r.state === "running" && r.node && r.node.name !== node.hostname && r;
    }, 30_000);
    const movedMs = performance.now() - killedAt;
    await Bun.sleep(2000);
    await loop.stop();
    const lastFailure = loop.failures.length ? loop.failures[loop.failures.length - 1]!.at - killedAt : 0;
    console.log(`swarm-e2e: kill -9 of ${node.hostname}'s dockerd: ${loop.failures.length} of ${loop.count} requests failed, the last ${Math.round(lastFailure)} ms after; the replica ran on ${moved.node!.name} after ${Math.round(movedMs)} ms`);
    expect(lastFailure).toBeLessThan(20_000);
    expect(movedMs).toBeLessThan(20_000);
    expect(moved.host).not.toBe(victim.host);
    expect(await (await fetch(`http://${moved.host}:${moved.port}/`, { signal: AbortSignal.timeout(3000) })).text()).toBe("v2");
    // The ingress routes to where the replicas run now: every request answers, none waits on the lost node.
    for (let i = 0; i < 40; i++) {
      const t = performance.now();
      expect(await answer()).toBe("200 v2");
      expect(performance.now() - t).toBeLessThan(1000);
    }
  });
});
