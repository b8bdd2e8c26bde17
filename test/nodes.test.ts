/**
 * Where replicas run (`GET /api/v1/admin/nodes`, `ops nodes`, `ops status`, the MCP tool
 * `nodes_list`): on the process runtime this host with a real deployed replica, which the service's
 * status also places (`host`, `node`); on one real Docker Engine that engine and the containers
 * labelled as ops's replicas; on a real three-node Swarm of Debian's dockerd 20.10
 * (test/support/engine-cluster.ts) the manager's nodes with their roles and addresses, a service
 * made on the manager with ops's labels shown on the node its task runs on, a drained node, and a
 * worker whose dockerd was killed reported down; an engine that does not answer is a 200 that says
 * why, naming OPS_DOCKER_HOST. Only estate admins read it (401 without credentials, 403 for a
 * project's developer).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import os from "node:os";
import { createTestApp, expectStatus, freePort, tempDir, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { pushApp } from "./deploy-fixtures";
import { WallClock } from "./chromium";
import { startEngine, startSwarm, waitFor, type EngineCluster, type SwarmCluster } from "./support/engine-cluster";
import { runCli } from "../src/main";
import { call, connectHttp } from "./mcp-fixtures";

setDefaultTimeout(120_000);

interface NodeReplica {
  id: string;
  project: string | null;
  environment: string | null;
  service: string | null;
  deployment: string | null;
  task_id: string | null;
  task_state: string;
  port: number | null;
}
interface NodeEntry {
  id: string;
  hostname: string;
  address: string | null;
  role: string;
  leader: boolean;
  state: string;
  availability: string;
  engine_version: string | null;
  cpus: number | null;
  memory_mb: number | null;
  labels: Record<string, string>;
  replicas: NodeReplica[];
}
interface Report {
  runtime: string;
  manager: { endpoint: string; reachable: boolean; error: string | null; swarm_state: string | null; is_manager: boolean | null; engine_version: string | null } | null;
  nodes: NodeEntry[];
}

const report = async (t: TestApp, who: Person) => expectStatus<Report>(await t.request("GET", "/api/v1/admin/nodes", { token: who.session }), 200);

async function cli(t: TestApp, token: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const home = tempDir("ops-cli-home-");
  const code = await runCli(argv, { stdout: (s) => void (out += s), stderr: (s) => void (err += s), env: { HOME: home, OPS_SERVER: t.url, OPS_TOKEN: token }, cwd: home });
  return { code, out, err };
}

describe("the process runtime: this host and its replicas", () => {
  let t: TestApp;
  let owner: Person;
  let dev: Person;
  let devToken: string;
  let slug: string;

  beforeAll(async () => {
    t = await createTestApp({ clock: new WallClock(), env: { OPS_SCHEDULER_TICK_MS: "100", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5" } });
    owner = await makeOwner(t);
    slug = makeProject(t, "harbour").slug;
    dev = await makePerson(t, [{ role: "developer", project: slug }]);
    devToken = mintToken(t, dev.principal, { role: "developer", project: slug });
    const digest = await pushApp(t, slug, "web", { version: "v1" });
    await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/resources/service`, { token: dev.session, body: { name: "web", spec: { image: `${slug}/web`, replicas: 2 } } }), 201);
    t.core.scheduler.start();
    const r = await cli(t, devToken, "deploy", "web", "--digest", digest);
    expect(r.err).toContain("healthy");
    expect(r.code).toBe(0);
  });

  afterAll(async () => {
    await t?.core.scheduler.stop(5000);
    await t?.close();
  });

  test("an estate admin reads this host (name, CPUs, memory) with the service's two running replicas; others get 401 and 403", async () => {
    const r = await report(t, owner);
    expect(r.runtime).toBe("process");
    expect(r.manager).toBeNull();
    expect(r.nodes.length).toBe(1);
    const [node] = r.nodes;
    expect(node).toMatchObject({ hostname: os.hostname(), role: "standalone", state: "ready", availability: "active", cpus: os.cpus().length, engine_version: null });
    expect(node.memory_mb).toBe(Math.round(os.totalmem() / 1024 / 1024));
    const web = node.replicas.filter((x) => x.service === "web");
    expect(web.length).toBe(2);
    for (const x of web) {
      expect(x).toMatchObject({ project: slug, environment: "production", service: "web", task_id: null, task_state: "running" });
      expect(x.port).toBeGreaterThan(0);
    }
    await expectStatus(await t.request("GET", "/api/v1/admin/nodes", { token: dev.session }), 403);
    await expectStatus(await t.request("GET", "/api/v1/admin/nodes"), 401);
  });

  test("the service's status places each replica: its host, and no node off a Swarm", async () => {
    const svc = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/resources/service/web`, { token: dev.session }), 200);
    const replicas = svc.status.detail.replicas as Array<{ id: string; host: string; node: unknown; port: number }>;
    expect(replicas.length).toBe(2);
    for (const x of replicas) {
      expect(x.node).toBeNull();
      expect(typeof x.host).toBe("string");
      expect(x.host.length).toBeGreaterThan(0);
    }
  });

  test("ops status: the project's services with each replica's state and where it listens; --json; a service by name; an unknown one", async () => {
    const r = await cli(t, devToken, "status");
    expect(r.code).toBe(0);
    expect(r.out).toContain("web");
    expect(r.out).toContain("ready");
    const svc = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/resources/service/web`, { token: dev.session }), 200);
    for (const x of svc.status.detail.replicas as Array<{ id: string; host: string; port: number }>) {
      expect(r.out).toContain(`${x.host}:${x.port}`);
      expect(r.out).toContain(x.id.split(".").at(-1)!);
    }
    const one = await cli(t, devToken, "status", "web", "--project", slug, "--environment", "production", "--json");
    expect(one.code).toBe(0);
    const parsed = JSON.parse(one.out);
    expect(parsed).toMatchObject({ project: slug, environment: "production" });
    expect(parsed.services.map((s: { name: string }) => s.name)).toEqual(["web"]);
    expect(parsed.services[0].replicas.length).toBe(2);
    const missing = await cli(t, devToken, "status", "nope");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("nope");
    const usage = await cli(t, devToken, "status", "a", "b");
    expect(usage.code).toBe(2);
  });

  test("ops nodes: the host and its replicas for an estate admin; a developer is told it needs estate.manage", async () => {
    const adminToken = mintToken(t, owner.principal, { role: "owner" });
    const r = await cli(t, adminToken, "nodes");
    expect(r.code).toBe(0);
    expect(r.out).toContain(os.hostname());
    expect(r.out).toMatch(/standalone/);
    expect(r.out).toContain("web");
    const json = JSON.parse((await cli(t, adminToken, "nodes", "--json")).out) as Report;
    expect(json.runtime).toBe("process");
    const denied = await cli(t, devToken, "nodes");
    expect(denied.code).not.toBe(0);
    expect(denied.err).toContain("estate.manage");
  });

  test("the MCP tool nodes_list: the same report for an estate admin; a developer's call is refused as the route refuses it", async () => {
    const admin = await connectHttp(t, owner.session);
    const member = await connectHttp(t, dev.session);
    try {
      const { tools } = await admin.listTools();
      const tool = tools.find((x) => x.name === "nodes_list")!;
      expect(tool.annotations?.readOnlyHint).toBe(true);
      const r = await call(admin, "nodes_list");
      expect(r.isError).toBeFalsy();
      const got = r.structuredContent as unknown as Report;
      expect(got.runtime).toBe("process");
      expect(got.nodes[0]!.hostname).toBe(os.hostname());
      expect(got.nodes[0]!.replicas.filter((x) => x.service === "web").length).toBe(2);
      expect(r.content[0]!.text).toContain(`1 node (process): ${os.hostname()} standalone ready/active with`);
      const denied = await call(member, "nodes_list");
      expect(denied.isError).toBe(true);
      expect(denied.content[0]!.text).toContain("estate.manage");
    } finally {
      await admin.close();
      await member.close();
    }
  });
});

describe("an engine that does not answer", () => {
  for (const [what, host] of [
    ["a socket that does not exist", "unix:///nonexistent/ops-nodes-test/docker.sock"],
    ["a TCP port nobody listens on", `tcp://127.0.0.1:${freePort()}`],
  ] as const) {
    test(`${what}: 200, the manager unreachable with the error naming OPS_DOCKER_HOST, no nodes`, async () => {
      const t = await createTestApp({ env: { OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: host } });
      try {
        const owner = await makeOwner(t);
        const r = await report(t, owner);
        expect(r.runtime).toBe("swarm");
        expect(r.nodes).toEqual([]);
        expect(r.manager).toMatchObject({ endpoint: host, reachable: false, engine_version: null, swarm_state: null });
        expect(r.manager!.error).toContain("OPS_DOCKER_HOST");
        expect(r.manager!.error).toContain(host);
      } finally {
        await t.close();
      }
    });
  }
});

describe("one Docker Engine (OPS_RUNTIME=docker)", () => {
  let engine: EngineCluster;
  let t: TestApp;

  beforeAll(async () => {
    engine = await startEngine();
    await engine.importImage("nodes-bb:1", { cmd: ["/bin/sleep", "3600"] });
    t = await createTestApp({ env: { OPS_RUNTIME: "docker", OPS_DOCKER_HOST: `unix://${engine.nodes[0]!.socket}` } });
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    if (engine) expect(await engine.stop()).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
  }, 120_000);

  test("the engine as one standalone node with its version, CPUs and memory, and the containers labelled as ops's replicas", async () => {
    const labels = { "dev.ops.owner": "nodes-test", "dev.ops.replica": "shop.staging.worker.4-1", "dev.ops.label.project": "shop", "dev.ops.label.environment": "staging", "dev.ops.label.service": "worker", "dev.ops.label.deployment": "4" };
    await engine.docker(1, ["run", "-d", "--name", "ops-nodes-worker", "--network", "none", ...Object.entries(labels).flatMap(([k, v]) => ["--label", `${k}=${v}`]), "nodes-bb:1"]);
    await engine.docker(1, ["run", "-d", "--name", "not-ops", "--network", "none", "nodes-bb:1"]);
    const owner = await makeOwner(t);
    const r = await report(t, owner);
    expect(r.runtime).toBe("docker");
    expect(r.manager).toMatchObject({ endpoint: `unix://${engine.nodes[0]!.socket}`, reachable: true, error: null, swarm_state: "inactive", is_manager: false });
    expect(r.nodes.length).toBe(1);
    const [node] = r.nodes;
    expect(node).toMatchObject({ hostname: engine.nodes[0]!.hostname, role: "standalone", state: "ready", availability: "active" });
    expect(node!.engine_version).toMatch(/^20\.10/);
    expect(node!.cpus).toBeGreaterThan(0);
    expect(node!.memory_mb).toBeGreaterThan(0);
    expect(node!.replicas).toEqual([{ id: "shop.staging.worker.4-1", project: "shop", environment: "staging", service: "worker", deployment: "4", task_id: null, task_state: "running", port: null }]);
  }, 60_000);
});

describe("a real three-node Swarm", () => {
  let swarm: SwarmCluster;
  let t: TestApp;
  let owner: Person;
  const IMAGE = "nodes-bb:1";

  beforeAll(async () => {
    swarm = await startSwarm(3);
    await swarm.importImage(IMAGE, { cmd: ["/bin/sleep", "3600"] });
    t = await createTestApp({ env: { OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: `unix://${swarm.nodes[0]!.socket}` } });
    owner = await makeOwner(t);
    console.log(`nodes: 3-node swarm up in ${swarm.setupMs} ms`);
  }, 300_000);

  afterAll(async () => {
    await t?.close();
    if (swarm) expect(await swarm.stop()).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
  }, 120_000);

  const byHost = (r: Report) => new Map(r.nodes.map((n) => [n.hostname, n]));

  test("three nodes ready, node 1 the leading manager, each at its address with its engine and resources", async () => {
    const t0 = performance.now();
    const r = await report(t, owner);
    console.log(`nodes: the report of 3 nodes took ${Math.round(performance.now() - t0)} ms`);
    expect(r.runtime).toBe("swarm");
    expect(r.manager).toMatchObject({ endpoint: `unix://${swarm.nodes[0]!.socket}`, reachable: true, error: null, swarm_state: "active", is_manager: true });
    expect(r.manager!.engine_version).toMatch(/^20\.10/);
    expect(r.nodes.length).toBe(3);
    const nodes = byHost(r);
    for (const n of swarm.nodes) {
      const got = nodes.get(n.hostname)!;
      expect(got).toMatchObject({ address: n.address, state: "ready", availability: "active", role: n.index === 1 ? "manager" : "worker", leader: n.index === 1 });
      expect(got.engine_version).toMatch(/^20\.10/);
      expect(got.cpus).toBeGreaterThan(0);
      expect(got.memory_mb).toBeGreaterThan(0);
    }
    expect(r.nodes[0]!.hostname).toBe(swarm.nodes[0]!.hostname);
  });

  test("a service made on the manager with ops's labels shows on the node its task runs on, with its replica's labels", async () => {
    const worker = swarm.nodes[1]!;
    const labels = { "dev.ops.instance": "nodes-test", "dev.ops.kind": "replica", "dev.ops.replica": "shop.production.web.7-1", "dev.ops.label.project": "shop", "dev.ops.label.environment": "production", "dev.ops.label.service": "web", "dev.ops.label.deployment": "7" };
    const labelFlags = Object.entries(labels).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
    await swarm.docker(1, ["service", "create", "-q", "--detach=false", "--name", "ops-nodes-web", ...labelFlags, "--constraint", `node.hostname==${worker.hostname}`, "--network", swarm.network, "--stop-grace-period", "1s", IMAGE]);
    // A service without ops's labels is not an ops replica.
    await swarm.docker(1, ["service", "create", "-q", "--detach=false", "--name", "not-ops", "--constraint", `node.hostname==${worker.hostname}`, "--network", swarm.network, "--stop-grace-period", "1s", IMAGE]);
    const [task] = (await swarm.tasks("ops-nodes-web")).filter((x) => x.state === "running");
    expect(task).toBeDefined();
    const r = await report(t, owner);
    const nodes = byHost(r);
    expect(nodes.get(worker.hostname)!.replicas).toEqual([
      { id: "shop.production.web.7-1", project: "shop", environment: "production", service: "web", deployment: "7", task_id: task!.id, task_state: "running", port: null },
    ]);
    for (const n of swarm.nodes) if (n !== worker) expect(nodes.get(n.hostname)!.replicas).toEqual([]);

    const adminToken = mintToken(t, owner.principal, { role: "owner" });
    const table = await cli(t, adminToken, "nodes");
    expect(table.code).toBe(0);
    for (const n of swarm.nodes) expect(table.out).toContain(n.hostname);
    expect(table.out).toContain("shop.production.web.7-1");
    expect(table.out).toMatch(/manager \(leader\)/);
  }, 120_000);

  test("a drained node says availability drain, and active again once restored", async () => {
    const worker = swarm.nodes[2]!;
    await swarm.docker(1, ["node", "update", "--availability", "drain", worker.hostname]);
    expect(byHost(await report(t, owner)).get(worker.hostname)!.availability).toBe("drain");
    await swarm.docker(1, ["node", "update", "--availability", "active", worker.hostname]);
    expect(byHost(await report(t, owner)).get(worker.hostname)!.availability).toBe("active");
  }, 60_000);

  // Last: it leaves a node down.
  test("kill -9 of a worker's dockerd: the node is reported down within 15 s; the others stay ready", async () => {
    const victim = swarm.nodes[2]!;
    const t0 = performance.now();
    await swarm.killDaemon(victim.index);
    const down = await waitFor("the node reported down", async () => {
      const n = byHost(await report(t, owner)).get(victim.hostname)!;
      return n.state === "down" && n;
    }, 15_000, 250);
    console.log(`nodes: ${victim.hostname} reported down ${Math.round(performance.now() - t0)} ms after kill -9 of its dockerd`);
    expect(down.state).toBe("down");
    const r = byHost(await report(t, owner));
    expect(r.get(swarm.nodes[0]!.hostname)!.state).toBe("ready");
    expect(r.get(swarm.nodes[1]!.hostname)!.state).toBe("ready");
  }, 60_000);
});
