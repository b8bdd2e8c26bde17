/**
 * The Docker runtime against a real engine (Debian's dockerd 20.10 in a namespace of its own,
 * test/support/engine-cluster.ts), exactly as OPS_RUNTIME=docker runs: a static Go app on a
 * busybox root is pushed with real skopeo into a test app's embedded registry, `prepareImage`
 * gives its digest reference at OPS_PUBLIC_URL's host, and the engine pulls it from there with
 * `registryAuth` (a project viewer's token). The engine reaches ops at the host namespace's address
 * on the engine's bridge, where a plain TCP forwarder hands connections to the test app's loopback
 * listener (the test harness listens on 127.0.0.1 only).
 *
 * It passes the runtime contract, refuses what it must (no or foreign registry credentials, a
 * reference that is not by digest), enforces its limits, and its containers keep running while
 * ops is down: an ops killed with SIGKILL leaves its app serving, and the next one takes it on.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, connect, type Server } from "node:net";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "./harness";
import { skopeoPush } from "./runtime-fixtures";
import { registryCast, writeOciLayout, type RegistryCast } from "./support/registries";
import { startEngine, waitFor, type EngineCluster } from "./support/engine-cluster";
import { busyboxTar, goApp } from "./support/engine-images";
import { runtimeContract } from "./support/runtime-contract";
import { prepareImage } from "../src/adapters/runtime";
import { issueRuntimePullToken } from "../src/domains/registries/service";
import { createDockerRuntime, type DockerRuntimeOptions } from "../src/adapters/runtime/docker";
import { freeLoopbackPort } from "../src/adapters/runtime/process";
import type { ReplicaStatus, RuntimeImage } from "../src/adapters/runtime/types";

interface World {
  engine: EngineCluster;
  t: TestApp;
  cast: RegistryCast;
  forward: Server;
  registry: string;
  image: RuntimeImage;
  /** Pushed, never pulled but by the refusals below. */
  spare: RuntimeImage;
}

/** The Go app on a busybox root, as an OCI layout (Cmd /app/server, GREETING=from-image). */
async function goAppLayout(tag: string): Promise<{ layout: string; manifestDigest: string }> {
  const tar = await busyboxTar({ "app/server": await goApp() });
  const layout = tempDir("ops-goapp-layout-");
  const config = { Cmd: ["/app/server"], WorkingDir: "/app", Env: ["PATH=/bin", "PORT=8080", "GREETING=from-image"], ExposedPorts: { "8080/tcp": {} }, Labels: { "org.opencontainers.image.revision": `rev-${tag}` } };
  return { layout, ...writeOciLayout(layout, tar as Uint8Array<ArrayBuffer>, { architecture: "amd64", os: "linux", config }, tag) };
}

let world: Promise<World> | null = null;
function setUp(): Promise<World> {
  world ??= (async () => {
    const t0 = performance.now();
    const port = freeLoopbackPort();
    const engine = await startEngine({ insecureRegistries: (host) => [`${host}:${port}`] });
    const registry = `${engine.hostAddress}:${port}`;
    const t = await createTestApp({ env: { OPS_PUBLIC_URL: `http://${registry}`, OPS_RUNTIME: "docker", OPS_DOCKER_SOCKET: engine.nodes[0]!.socket } });
    const forward = createServer((c) => {
      const up = connect(t.port, "127.0.0.1");
      c.pipe(up).pipe(c);
      c.on("error", () => up.destroy());
      up.on("error", () => c.destroy());
    });
    await new Promise<void>((resolve) => forward.listen(port, engine.hostAddress, resolve));
    const cast = await registryCast(t);
    await skopeoPush(t, cast, await goAppLayout("v1"), "web", "v1");
    await skopeoPush(t, cast, await goAppLayout("v2"), "web", "v2");
    const repo = `${cast.project.slug}/web`;
    const image = (await prepareImage(t.core, repo, "v1")).image;
    const spare = (await prepareImage(t.core, repo, "v2")).image;
    console.log(`runtime-docker: engine up in ${engine.setupMs} ms, image pushed and prepared, ${Math.round(performance.now() - t0)} ms in all`);
    return { engine, t, cast, forward, registry, image, spare };
  })();
  return world;
}

afterAll(async () => {
  if (!world) return;
  const w = await world;
  w.forward.close();
  await w.t.close();
  const left = await w.engine.stop();
  expect(left).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
}, 120_000);

const options = (w: World, more: Partial<DockerRuntimeOptions> = {}): DockerRuntimeOptions => ({
  socket: w.engine.nodes[0]!.socket,
  registryAuth: (ref) => {
    // The caller is told which image, so it can mint a credential of that image's project.
    if (!ref.startsWith(`${w.registry}/${w.cast.project.slug}/web@sha256:`)) throw new Error(`asked for credentials of ${ref}`);
    return { username: "reader", password: w.cast.readerToken, serveraddress: w.registry };
  },
  publish: { hostIp: w.engine.nodes[0]!.address },
  limits: { memoryMb: 256, pids: 128, tmpMb: 32 },
  graceMs: 2000,
  ...more,
});

runtimeContract("docker", async (hooks) => {
  const w = await setUp();
  return { runtime: createDockerRuntime({ ...options(w), owner: "contract", ...hooks }), image: w.image, serve: "exec /app/server" };
});

describe("docker runtime", () => {
  let w: World;
  beforeAll(async () => {
    w = await setUp();
  }, 300_000);

  const containersOf = async (owner: string) => w.engine.nodes[0]!.engine.json<Array<{ Id: string }>>("GET", `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`dev.ops.owner=${owner}`] }))}`);

  test("the engine pulls only with the project's credentials: none, or another project's, are refused and leave no container", async () => {
    for (const [owner, auth] of [
      ["no-auth", undefined],
      ["outsider", () => ({ username: "outsider", password: w.cast.outsiderToken, serveraddress: w.registry })],
    ] as const) {
      const rt = createDockerRuntime({ ...options(w), owner, registryAuth: auth });
      await expect(rt.start({ id: `${owner}-web`, image: w.spare })).rejects.toThrow(/could not pull .*(unauthorized|denied|authentication required|not found)/i);
      expect(rt.list()).toEqual([]);
      expect(await containersOf(owner)).toEqual([]);
    }
  }, 60_000);

  test("as ops serve wires it: the engine pulls with ops's pull-only token of the image's repository, and one of another repository is refused", async () => {
    const repo = `${w.cast.project.slug}/web`;
    const wrong = createDockerRuntime({ ...options(w), owner: "runtime-token-wrong", registryAuth: async () => ({ registrytoken: await issueRuntimePullToken(w.t.core, "another/web", 300), serveraddress: w.registry }) });
    await expect(wrong.start({ id: "wrong-web", image: w.spare })).rejects.toThrow(/could not pull/i);
    expect(await containersOf("runtime-token-wrong")).toEqual([]);
    const rt = createDockerRuntime({ ...options(w), owner: "runtime-token", registryAuth: async () => ({ registrytoken: await issueRuntimePullToken(w.t.core, repo, 300), serveraddress: w.registry }) });
    const st = await rt.start({ id: "token-web", image: w.spare });
    await waitFor("running", () => rt.status(st.id)?.state === "running", 30_000, 100);
    expect((await rt.stop(st.id, 1000))?.state).toBe("stopped");
  }, 90_000);

  test("a reference that is not by digest never reaches the engine", async () => {
    const rt = createDockerRuntime(options(w, { owner: "refs" }));
    for (const reference of [`${w.registry}/x/web:latest`, `${w.registry}/x/web@sha256:${"a".repeat(64)}&fromSrc=-`, `${w.registry}/x/web?tag=1@sha256:${"a".repeat(64)}`]) {
      await expect(rt.start({ id: "r", image: { ...w.image, reference } })).rejects.toThrow("not an image reference by digest");
    }
  });

  test("limits reach the engine and hold: memory, processes, CPUs, /tmp; the port is published on the given address only; no secret in a label", async () => {
    const secret = "limits-secret-value-5531";
    const rt = createDockerRuntime(options(w, { owner: "limits", limits: { memoryMb: 256, pids: 24, tmpMb: 8 } }));
    const st = await rt.start({ id: "lim", image: w.image, memoryMb: 64, cpus: 0.5, env: [["SECRET", secret]], masked: [secret], labels: { service: "web" } });
    await waitFor("running", () => rt.status("lim")?.state === "running", 30_000, 100);
    const [{ Id }] = await containersOf("limits");
    const info = await w.engine.nodes[0]!.engine.json<{ HostConfig: Record<string, any>; Config: { Labels: Record<string, string> } }>("GET", `/containers/${Id}/json`);
    expect(info.HostConfig).toMatchObject({ Memory: 64 << 20, PidsLimit: 24, NanoCpus: 5e8, Init: true, RestartPolicy: { Name: "unless-stopped" }, SecurityOpt: ["no-new-privileges"] });
    expect(info.HostConfig.Tmpfs["/tmp"]).toContain("size=8m");
    expect(info.HostConfig.PortBindings["8080/tcp"]).toEqual([{ HostIp: w.engine.nodes[0]!.address, HostPort: String(st.port) }]);
    expect(JSON.stringify(info.Config.Labels)).not.toContain(secret);
    expect(info.Config.Labels["dev.ops.masked-env"]).toBe("SECRET");
    const cg = (ctl: string, file: string) => readFileSync(`/sys/fs/cgroup/${ctl}/${w.engine.nodes[0]!.hostname}/${Id}/${file}`, "utf8").trim();
    expect([cg("memory", "memory.limit_in_bytes"), cg("pids", "pids.max"), cg("cpu", "cpu.cfs_quota_us")]).toEqual([String(64 << 20), "24", "50000"]);
    await rt.stop("lim", 1000);
    const once = await rt.run({ id: "fork", image: w.image, command: "(for i in $(seq 1 40); do sleep 2 & done; wait) 2>&1 | tail -1; dd if=/dev/zero of=/tmp/fill bs=1M count=32 2>&1; echo done", timeoutMs: 30_000 });
    expect(once.tail.join("\n")).toMatch(/can't fork/);
    expect(once.tail.join("\n")).toMatch(/No space left on device/);
  }, 90_000);

  test("its containers keep running while ops is down: an ops killed with SIGKILL leaves the app serving; the next one takes it on, once, and drives it", async () => {
    const secret = "kept-secret-value-7788";
    const child = path.join(tempDir("ops-docker-child-"), "ops.ts");
    writeFileSync(
      child,
      `import { createDockerRuntime } from ${JSON.stringify(path.resolve(import.meta.dir, "../src/adapters/runtime/docker.ts"))};
const o = JSON.parse(process.env.OPTS);
const rt = createDockerRuntime({ ...o, registryAuth: () => o.auth });
await rt.start({ id: "kept", image: o.image, env: [["SECRET", o.secret], ["GREETING", "kept"]], masked: [o.secret], labels: { service: "web", deployment: "7" } });
while (rt.status("kept")?.state !== "running") await Bun.sleep(50);
console.log(JSON.stringify(rt.status("kept")));
await new Promise(() => {});
`,
    );
    const o = options(w, { owner: "kept" });
    const auth = o.registryAuth!(w.image.reference!);
    const ops = Bun.spawn([process.execPath, child], { env: { ...process.env, OPTS: JSON.stringify({ ...o, registryAuth: undefined, auth, image: w.image, secret }) }, stdout: "pipe", stderr: "inherit" });
    const reader = ops.stdout.getReader();
    const first = JSON.parse(new TextDecoder().decode((await reader.read()).value)) as ReplicaStatus;
    ops.kill("SIGKILL");
    await ops.exited;
    const url = `http://${first.host}:${first.port}/`;
    const body = (await (await fetch(url)).json()) as { greeting: string; pid: number };
    expect(body.greeting).toBe("kept");

    const lines: string[] = [];
    const next = createDockerRuntime(options(w, { owner: "kept", onLine: (id, stream, line) => lines.push(`${id} ${stream} ${line}`) }));
    const taken = await next.takeOn();
    expect(taken.map((s) => [s.id, s.host, s.port, s.labels])).toEqual([["kept", first.host, first.port, { service: "web", deployment: "7" }]]);
    expect(await next.takeOn()).toEqual([]);
    expect((await containersOf("kept")).length).toBe(1);
    await waitFor("running", () => next.status("kept")?.state === "running", 30_000, 100);
    await expect(next.start({ id: "kept", image: w.image })).rejects.toThrow("already live");
    // It is supervised again: a crash is seen, the engine restarts it, and its output (masked) flows from now on.
    await fetch(`${url}crash`);
    await waitFor("restarted", () => next.status("kept")?.state === "running" && (next.status("kept")?.restarts ?? 0) >= 1, 30_000, 100);
    expect(next.status("kept")?.lastExit?.code).toBe(3);
    await waitFor("its output after the restart", () => lines.some((l) => l === "kept stdout listening on 8080"), 10_000, 100);
    expect(lines.join("\n")).not.toContain(secret);
    const again = (await (await fetch(url)).json()) as { greeting: string };
    expect(again.greeting).toBe("kept");
    // detach leaves it running; stop ends it and removes its container.
    next.detach();
    expect(next.list()).toEqual([]);
    expect((await fetch(url)).ok).toBe(true);
    const last = createDockerRuntime(options(w, { owner: "kept" }));
    expect((await last.takeOn()).map((s) => s.id)).toEqual(["kept"]);
    expect((await last.stop("kept", 1000))?.state).toBe("stopped");
    expect(await containersOf("kept")).toEqual([]);
    await expect(fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.status)).rejects.toThrow();
    expect(existsSync(child)).toBe(true);
  }, 120_000);
});
