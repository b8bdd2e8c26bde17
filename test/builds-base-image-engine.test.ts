/**
 * The image a native build makes on a base runs on a bare engine (issue 34, decision 0620): a real
 * dockerd 20.10 in namespaces of its own (test/support/engine-cluster.ts), with no toolchain and no
 * registry but ops's. A real `git push` of the Go recipe with `base = "<project>/base-busybox:1"`
 * (busybox pushed into ops's registry with skopeo) builds and deploys on the process runtime; the
 * engine then pulls the built digest from ops's registry with a project token and runs it as the
 * image says (`/bin/sh -c ./server` in /app, the base's PATH, ops's PORT), and it answers from the
 * engine's address. The same app packed without a base cannot even start there (no /bin/sh): what
 * decision 0621's refusal spares a rollout. The engine reaches ops at the host namespace's address
 * on its bridge, where a TCP forwarder hands connections to the test app's loopback listener.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createServer, connect, type Server } from "node:net";
import { createTestApp, freePort, type TestApp } from "./harness";
import { buildsDataDir, buildWorld, drain, type BuildWorld } from "./builds-fixtures";
import { pushApp } from "./deploy-fixtures";
import { mintToken } from "./fixtures";
import { startEngine, waitFor, type EngineCluster } from "./support/engine-cluster";
import { busyboxRoot, BUSYBOX_CONFIG, pushLayout, writeLayout } from "./support/base-images";
import type { BuildResponse } from "../src/domains/builds/model";
import { recipeBlock } from "./support/recipes";



let engine: EngineCluster;
let t: TestApp;
let forward: Server;
let registry: string;
let w: BuildWorld;
let token: string;
const containers: string[] = [];

beforeAll(async () => {
  const port = freePort();
  engine = await startEngine({ insecureRegistries: (host) => [`${host}:${port}`] });
  registry = `${engine.hostAddress}:${port}`;
  t = await createTestApp({ dataDir: buildsDataDir(), env: { OPS_PUBLIC_URL: `http://${registry}`, OPS_BUILD_MEMORY_MB: "512", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "20" } });
  forward = createServer((c) => {
    const up = connect(t.port, "127.0.0.1");
    c.pipe(up).pipe(c);
    c.on("error", () => up.destroy());
    up.on("error", () => c.destroy());
  });
  await new Promise<void>((resolve) => forward.listen(port, engine.hostAddress, resolve));
  w = await buildWorld(t, { spec: { health_check_path: "/healthz" } });
  token = mintToken(t, w.ctx.owner.principal, { role: "developer", project: w.ctx.slug });
  await pushLayout(writeLayout(busyboxRoot(), BUSYBOX_CONFIG), registry, `${w.ctx.slug}/base-busybox`, "1", token);
}, 180_000);

afterAll(async () => {
  for (const id of containers) await engine?.nodes[0]!.engine.call("DELETE", `/containers/${id}?force=1`).catch(() => undefined);
  forward?.close();
  w?.local.remove();
  await t?.close();
  if (engine) expect(await engine.stop()).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
}, 120_000);

/** Pull `ref` onto the engine with the project's token, as the Docker and Swarm runtimes do. */
async function pull(ref: string): Promise<void> {
  // Padded base64url: the Engine reads an unpadded header as no credentials at all.
  const auth = Buffer.from(JSON.stringify({ username: "ci", password: token, serveraddress: registry })).toString("base64").replace(/\+/g, "-").replace(/\//g, "_");
  const res = await engine.nodes[0]!.engine.call("POST", `/images/create?fromImage=${encodeURIComponent(ref)}`, undefined, { "x-registry-auth": auth });
  const progress = await res.text();
  expect(progress).not.toContain('"error"');
}

/** Create a container of `ref` publishing `port`/tcp on the engine's address at `hostPort`; its id. */
async function create(ref: string, port: number, hostPort: number): Promise<string> {
  const node = engine.nodes[0]!;
  const { Id } = await node.engine.json<{ Id: string }>("POST", `/containers/create?name=base-${process.pid}-${containers.length}`, {
    Image: ref,
    ExposedPorts: { [`${port}/tcp`]: {} },
    HostConfig: { PortBindings: { [`${port}/tcp`]: [{ HostIp: node.address, HostPort: String(hostPort) }] } },
  });
  containers.push(Id);
  return Id;
}

describe("an image built on a base, on a bare engine", () => {
  test("a git push builds it; the engine pulls the digest from ops's registry and runs it as the image says", async () => {
    const toml = recipeBlock("A static Go app on a bare engine", "ops.toml").replace("[services.api]", "[services.web]").replace('base = "shop/', `base = "${w.ctx.slug}/`);
    await w.local.commit({ "ops.toml": toml, "go.mod": recipeBlock("Go", "go.mod"), "main.go": recipeBlock("Go", "main.go") }, "Go on busybox");
    await w.local.push("main");
    await drain(t);
    const [build] = (await (await w.ctx.req("GET", "/builds?environment=production&limit=1")).json()) as BuildResponse[];
    expect(build).toMatchObject({ status: "healthy", message: "Go on busybox" });
    const ref = `${registry}/${w.ctx.slug}/web@${build!.image_digest}`;
    await pull(ref);
    const hostPort = freePort();
    const id = await create(ref, 3000, hostPort);
    await engine.nodes[0]!.engine.call("POST", `/containers/${id}/start`);
    const info = await engine.nodes[0]!.engine.json<{ Config: { Entrypoint: string[]; Cmd: string[]; WorkingDir: string; Env: string[]; User: string } }>("GET", `/containers/${id}/json`);
    expect(info.Config).toMatchObject({ Entrypoint: ["/bin/sh", "-c"], Cmd: ["./server"], WorkingDir: "/app", User: "65534:65534" });
    expect(info.Config.Env).toEqual(expect.arrayContaining(["PATH=/bin:/usr/bin", "PORT=3000"]));
    const answer = await waitFor(
      "the app on the engine",
      async () => {
        const res = await fetch(`http://${engine.nodes[0]!.address}:${hostPort}/`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
        return res?.ok ? await res.text() : null;
      },
      30_000,
    );
    expect(answer).toBe("hello from go");
  }, 300_000);

  test("the same kind of app packed without a base cannot start there: the node has no /bin/sh", async () => {
    const digest = await pushApp(t, w.ctx.slug, "web", { version: "native" });
    const ref = `${registry}/${w.ctx.slug}/web@${digest}`;
    await pull(ref);
    const id = await create(ref, 8080, freePort());
    const started = await engine.nodes[0]!.engine.call("POST", `/containers/${id}/start`).then(
      () => "started",
      (e: Error) => e.message,
    );
    expect(started).toContain("/bin/sh");
  }, 120_000);
});
