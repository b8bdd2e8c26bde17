/**
 * `ops doctor`'s engine checks (src/adapters/runtime/doctor-engine.ts) against a real three-node
 * Swarm of Debian's dockerd 20.10 on this machine (test/support/engine-cluster.ts) and a real test
 * app whose embedded registry holds a busybox image pushed with skopeo. The nodes reach the app at
 * the host namespace's address on their bridge, through a plain TCP forwarder to its loopback
 * listener (listed in their insecure-registries), as OPS_PUBLIC_URL says; a second forwarder that is
 * not in their insecure-registries, and a port where nothing listens, make the pulls fail the way a
 * misconfigured estate does. Run as root (namespaces, dockerd), as CI runs it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { connect, createServer, type Server } from "node:net";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "./harness";
import { skopeoPush } from "./runtime-fixtures";
import { registryCast, writeOciLayout, type RegistryCast } from "./support/registries";
import { startSwarm, waitFor, type SwarmCluster } from "./support/engine-cluster";
import { busyboxTar } from "./support/engine-images";
import { freeLoopbackPort } from "../src/adapters/runtime/process";
import { engineChecks, ENGINE_CHECK, isSkipped, newestImageFor, type EngineDoctorSettings } from "../src/adapters/runtime/doctor-engine";
import type { DoctorCheck } from "../src/adapters/sandbox/doctor-types";
import { issueRuntimePullToken } from "../src/domains/registries/service";

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");

interface World {
  swarm: SwarmCluster;
  t: TestApp;
  cast: RegistryCast;
  forwards: Server[];
  /** host:port of the forwarder the nodes may speak plain HTTP to. */
  registry: string;
  /** host:port of a forwarder to the same app that is not in their insecure-registries. */
  httpsOnly: string;
  /** host:port where nothing listens. */
  closed: string;
  digest: string;
}

function forward(t: TestApp, host: string, port: number): Promise<Server> {
  const s = createServer((c) => {
    const up = connect(t.port, "127.0.0.1");
    c.pipe(up).pipe(c);
    c.on("error", () => up.destroy());
    up.on("error", () => c.destroy());
  });
  return new Promise((resolve) => s.listen(port, host, () => resolve(s)));
}

let world: Promise<World> | null = null;
function setUp(): Promise<World> {
  world ??= (async () => {
    const t0 = performance.now();
    const [port, port2, port3] = [freeLoopbackPort(), freeLoopbackPort(), freeLoopbackPort()];
    const swarm = await startSwarm(3, { insecureRegistries: (host) => [`${host}:${port}`, `${host}:${port3}`] });
    const registry = `${swarm.hostAddress}:${port}`;
    const t = await createTestApp({ env: { OPS_PUBLIC_URL: `http://${registry}`, OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: `unix://${swarm.nodes[0]!.socket}` } });
    const forwards = [await forward(t, swarm.hostAddress, port), await forward(t, swarm.hostAddress, port2)];
    const cast = await registryCast(t);
    const layout = tempDir("ops-doctor-layout-");
    const written = writeOciLayout(layout, (await busyboxTar({})) as Uint8Array<ArrayBuffer>, { architecture: "amd64", os: "linux", config: { Cmd: ["/bin/sh"], Env: ["PATH=/bin"] } }, "v1");
    await skopeoPush(t, cast, { layout, manifestDigest: written.manifestDigest }, "web", "v1");
    console.log(`doctor-engine: 3-node swarm up in ${swarm.setupMs} ms, image pushed after ${Math.round(performance.now() - t0)} ms`);
    return { swarm, t, cast, forwards, registry, httpsOnly: `${swarm.hostAddress}:${port2}`, closed: `${swarm.hostAddress}:${port3}`, digest: written.manifestDigest };
  })();
  return world;
}

afterAll(async () => {
  if (!world) return;
  const w = await world;
  for (const f of w.forwards) f.close();
  await w.t.close();
  const left = await w.swarm.stop();
  expect(left).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
}, 120_000);

const settings = (w: World, more: Partial<EngineDoctorSettings> = {}): EngineDoctorSettings => ({
  runtime: "swarm",
  dockerHost: `unix://${w.swarm.nodes[0]!.socket}`,
  dockerTls: null,
  publicUrl: `http://${w.registry}`,
  registryToken: w.cast.readerToken,
  newestImage: (token) => newestImageFor(w.t.core, token),
  instance: `doctor-test-${process.pid}`,
  waitMs: 60_000,
  ...more,
});

const byName = (checks: DoctorCheck[], name: string) => {
  const c = checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check ${name} in ${JSON.stringify(checks, null, 2)}`);
  return c;
};

async function doctorServices(w: World): Promise<unknown[]> {
  return w.swarm.nodes[0]!.engine.json<unknown[]>("GET", `/services?filters=${encodeURIComponent(JSON.stringify({ label: ["dev.ops.kind=doctor"] }))}`);
}

describe("ops doctor: the engine API (no engine needed)", () => {
  test("the process runtime has no engine checks", async () => {
    expect(await engineChecks({ runtime: "process", dockerHost: "unix:///nowhere.sock", dockerTls: null, publicUrl: "http://127.0.0.1:8080", registryToken: null, newestImage: () => null })).toEqual([]);
  });

  test("an unreachable socket, a closed TCP port and an unreadable TLS file each fail naming the setting and the error", async () => {
    const none = { dockerTls: null, publicUrl: "http://127.0.0.1:8080", registryToken: null, newestImage: () => null };
    const [sock] = await engineChecks({ runtime: "swarm", dockerHost: "unix:///tmp/ops-doctor-no-such.sock", ...none });
    expect(sock).toMatchObject({ name: ENGINE_CHECK.engine, ok: false });
    expect(sock!.detail).toContain("does not answer at OPS_DOCKER_HOST=unix:///tmp/ops-doctor-no-such.sock: the Docker Engine socket /tmp/ops-doctor-no-such.sock does not exist");
    expect(sock!.fix).toContain("OPS_DOCKER_HOST");
    const port = freeLoopbackPort();
    const [tcp] = await engineChecks({ runtime: "docker", dockerHost: `tcp://127.0.0.1:${port}`, ...none });
    expect(tcp!.ok).toBe(false);
    expect(tcp!.detail).toMatch(new RegExp(`does not answer at OPS_DOCKER_HOST=tcp://127.0.0.1:${port}: could not reach the Docker Engine at tcp://127.0.0.1:${port}: .*(refused|ECONNREFUSED|Unable to connect)`, "i"));
    expect(tcp!.fix).toContain("tlsverify");
    const [tls] = await engineChecks({ ...none, runtime: "swarm", dockerHost: `tcp://127.0.0.1:${port}`, dockerTls: { ca: "/tmp/ops-doctor-no-ca.pem", cert: "/tmp/c.pem", key: "/tmp/k.pem" } });
    expect(tls).toMatchObject({ name: ENGINE_CHECK.engine, ok: false });
    expect(tls!.detail).toStartWith("OPS_DOCKER_TLS_CA=/tmp/ops-doctor-no-ca.pem cannot be read: ENOENT");
  });

  test("`ops doctor` with OPS_RUNTIME=swarm and no engine: the check is on its list, failed, and the exit code is 1", () => {
    const dir = tempDir("ops-doctor-cli-");
    const p = Bun.spawnSync([process.execPath, MAIN, "doctor", "--json"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", OPS_DATA_DIR: dir, OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: "unix:///tmp/ops-doctor-no-such.sock" }, cwd: "/" });
    expect(p.exitCode).toBe(1);
    const checks = JSON.parse(p.stdout.toString()) as DoctorCheck[];
    const c = byName(checks, ENGINE_CHECK.engine);
    expect(c.ok).toBe(false);
    expect(c.detail).toContain("the Swarm manager's Engine API does not answer at OPS_DOCKER_HOST=unix:///tmp/ops-doctor-no-such.sock");
    expect(checks.some((x) => x.name === ENGINE_CHECK.manager)).toBe(false);
  }, 60_000);
});

describe("ops doctor: a real three-node swarm", () => {
  test("without a token, each node pulls with the pull-only credential ops gives the runtime (signed with the data dir's registry key); one for another repository pulls nothing", async () => {
    const w = await setUp();
    // First (no node holds the image yet): a credential of another repository is refused by the registry.
    const wrong = await engineChecks(settings(w, { registryToken: null, runtimePullToken: () => issueRuntimePullToken(w.t.core, "another/repo", 300) }));
    for (const n of w.swarm.nodes) expect(byName(wrong, ENGINE_CHECK.pull(n.hostname)).ok).toBe(false);
    const asked: string[] = [];
    const checks = await engineChecks(
      settings(w, {
        registryToken: null,
        runtimePullToken: (repository) => {
          asked.push(repository);
          return issueRuntimePullToken(w.t.core, repository, 300);
        },
      }),
    );
    expect(asked).toEqual([`${w.cast.project.slug}/web`]);
    const ref = `${w.registry}/${w.cast.project.slug}/web@${w.digest}`;
    for (const n of w.swarm.nodes) expect(byName(checks, ENGINE_CHECK.pull(n.hostname))).toMatchObject({ ok: true, detail: expect.stringContaining(`had ${ref} to run`) });
    expect(await doctorServices(w)).toEqual([]);
  }, 240_000);

  test("every check holds: the engine, the manager, three nodes ready, and each node pulls the newest image from ops's registry; the doctor's service is removed", async () => {
    const w = await setUp();
    const t0 = performance.now();
    const checks = await engineChecks(settings(w));
    const ms = Math.round(performance.now() - t0);
    console.log(`doctor-engine: every check in ${ms} ms (a global service's pull on three nodes included)`);
    expect(checks.every((c) => c.ok && !isSkipped(c))).toBe(true);
    expect(byName(checks, ENGINE_CHECK.engine).detail).toMatch(/answers at OPS_DOCKER_HOST=unix:\/\/.*: Docker Engine 20\.10\.\S+ \(API 1\.41, linux\/amd64\)/);
    expect(byName(checks, ENGINE_CHECK.manager).detail).toMatch(/manages swarm \w{12}: 3 nodes, 1 manager\b/);
    const ref = `${w.registry}/${w.cast.project.slug}/web@${w.digest}`;
    for (const n of w.swarm.nodes) {
      expect(byName(checks, ENGINE_CHECK.node(n.hostname)).detail).toStartWith(`${n.index === 1 ? "manager (leader)" : "worker"} at ${n.address}, ready, availability active`);
      expect(byName(checks, ENGINE_CHECK.pull(n.hostname)).detail).toStartWith(`${n.hostname} (${n.address}) had ${ref} to run`);
    }
    expect(await doctorServices(w)).toEqual([]);
    // A second run: every node now holds the digest; the manager says so.
    const again = await engineChecks(settings(w));
    expect(byName(again, ENGINE_CHECK.pull(w.swarm.nodes[0]!.hostname)).detail).toContain("it held that digest already");
  }, 180_000);

  test("no token, or no image the token may pull: the registry check is skipped, saying what it needs", async () => {
    const w = await setUp();
    const noToken = await engineChecks(settings(w, { registryToken: null }));
    const skipped = byName(noToken, ENGINE_CHECK.registry);
    expect(isSkipped(skipped)).toBe(true);
    expect(skipped.detail).toContain("needs a credential that may pull an image");
    expect(skipped.fix).toContain("ops doctor --registry-token");
    const outsider = await engineChecks(settings(w, { registryToken: w.cast.outsiderToken }));
    const none = byName(outsider, ENGINE_CHECK.registry);
    expect(isSkipped(none)).toBe(true);
    expect(none.fix).toContain("deploy a service first");
    expect(noToken.filter((c) => c.name.startsWith("registry from node "))).toEqual([]);
    expect(await doctorServices(w)).toEqual([]);
  }, 120_000);

  test("nodes that cannot pull: plain HTTP without insecure-registries, nothing listening; each node fails with the engine's message and its fix", async () => {
    const w = await setUp();
    // The nodes hold the digest from ops's own address now: drop it so they must pull again.
    const ref = (host: string) => `${host}/${w.cast.project.slug}/web@${w.digest}`;
    const https = await engineChecks(settings(w, { publicUrl: `http://${w.httpsOnly}` }));
    for (const n of w.swarm.nodes) {
      const c = byName(https, ENGINE_CHECK.pull(n.hostname));
      expect(c.ok).toBe(false);
      expect(c.detail).toStartWith(`${n.hostname} (${n.address}) could not pull ${ref(w.httpsOnly)}: No such image`);
      expect(c.detail).toContain("server gave HTTP response to HTTPS client");
      expect(c.fix).toContain(`"insecure-registries": ["${w.httpsOnly}"]`);
    }
    const closed = await engineChecks(settings(w, { publicUrl: `http://${w.closed}` }));
    const c = byName(closed, ENGINE_CHECK.pull(w.swarm.nodes[1]!.hostname));
    expect(c.ok).toBe(false);
    expect(c.detail).toContain("connection refused");
    expect(c.detail).toContain("the manager's own pull of it said");
    expect(c.fix).toContain("nothing listens at");
    expect(await doctorServices(w)).toEqual([]);
  }, 180_000);

  test("a worker's engine is not a manager: the check says to point OPS_DOCKER_HOST at one", async () => {
    const w = await setUp();
    const checks = await engineChecks(settings(w, { dockerHost: `unix://${w.swarm.nodes[1]!.socket}` }));
    expect(checks.map((c) => [c.name, c.ok])).toEqual([[ENGINE_CHECK.engine, true], [ENGINE_CHECK.manager, false]]);
    expect(checks[1]!.detail).toContain("is a worker of its swarm");
    expect(checks[1]!.fix).toContain("point OPS_DOCKER_HOST at a manager");
  }, 60_000);

  test("`ops doctor` on the app's data dir, with --registry-token and without: the engine checks hold, printed after the sandbox's", async () => {
    const w = await setUp();
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", OPS_DATA_DIR: w.t.dataDir, OPS_PUBLIC_URL: `http://${w.registry}`, OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: `unix://${w.swarm.nodes[0]!.socket}` };
    const p = Bun.spawn([process.execPath, MAIN, "doctor", "--registry-token", w.cast.readerToken], { env, cwd: "/", stdout: "pipe", stderr: "pipe" });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    const lines = out.split("\n");
    for (const n of w.swarm.nodes) {
      expect(lines.some((l) => l.startsWith(`ok    node ${n.hostname}: `))).toBe(true);
      expect(lines.some((l) => l.startsWith(`ok    registry from node ${n.hostname}: ${n.hostname} (${n.address}) had `))).toBe(true);
    }
    expect(lines.findIndex((l) => l.startsWith("ok    engine API: "))).toBeGreaterThan(lines.findIndex((l) => / {2}dependency caches: /.test(l)));
    expect(err).not.toContain(w.cast.readerToken);
    // Without a token, on the data dir: the pull-only credential ops gives the runtime.
    const own = Bun.spawnSync([process.execPath, MAIN, "doctor"], { env, cwd: "/" }).stdout.toString().split("\n");
    for (const n of w.swarm.nodes) expect(own.some((l) => l.startsWith(`ok    registry from node ${n.hostname}: ${n.hostname} (${n.address}) had `))).toBe(true);
  }, 180_000);

  test("a node whose dockerd is killed: its node check fails saying it is down, and no pull is asked of it", async () => {
    const w = await setUp();
    const n3 = w.swarm.nodes[2]!;
    await w.swarm.killDaemon(3);
    try {
      await waitFor("node 3 down", async () => (await w.swarm.nodes[0]!.engine.json<Array<{ Description: { Hostname: string }; Status: { State: string } }>>("GET", "/nodes")).find((n) => n.Description.Hostname === n3.hostname)?.Status.State === "down", 30_000);
      const checks = await engineChecks(settings(w));
      const node = byName(checks, ENGINE_CHECK.node(n3.hostname));
      expect(node.ok).toBe(false);
      expect(node.detail).toStartWith(`worker at ${n3.address}, down`);
      expect(node.fix).toContain(`systemctl start docker`);
      expect(isSkipped(byName(checks, ENGINE_CHECK.pull(n3.hostname)))).toBe(true);
      expect(byName(checks, ENGINE_CHECK.pull(w.swarm.nodes[1]!.hostname)).ok).toBe(true);
    } finally {
      await w.swarm.restartDaemon(3);
    }
  }, 180_000);
});
