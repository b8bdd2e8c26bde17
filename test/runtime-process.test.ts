/**
 * The process runtime with real processes: a test image built as ops's native builder writes it,
 * pushed with real skopeo into a test app's registry, pulled and unpacked; replicas started in
 * the bubblewrap sandbox with the image's config, extra variables and PORT; their output captured;
 * a crashing replica restarted with doubling delays; a replica over its memory limit killed and
 * reported; stop with SIGTERM, a grace period, then SIGKILL. The Docker adapter fails clearly
 * without its socket.
 */
import { describe, test as bunTest, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "./harness";
import { prepareTestImage, skopeoPush, until, writeTestImage, type PreparedImage } from "./runtime-fixtures";
import { registryCast } from "./support/registries";
import { createProcessRuntime } from "../src/adapters/runtime/process-runtime";
import { createDockerRuntime } from "../src/adapters/runtime/docker";
import { detectMemoryController } from "../src/adapters/sandbox/cgroups";
import { probeOnce, waitHealthy } from "../src/adapters/runtime/probe";
import type { OutputStream, ReplicaStatus, Runtime } from "../src/adapters/runtime/types";

/** Real processes on a shared 2-core machine: every test gets 90 s, whatever default the run has. */
const test = (name: string, fn: () => unknown) => bunTest(name, fn as () => Promise<void>, 90_000);

let t: TestApp;
let prepared: PreparedImage;
let runtime: Runtime;
const lines: Array<{ id: string; stream: OutputStream; line: string }> = [];
const states: ReplicaStatus[] = [];

beforeAll(async () => {
  t = await createTestApp();
  prepared = await prepareTestImage(t);
  runtime = createProcessRuntime({ onLine: (id, stream, line) => lines.push({ id, stream, line }), onState: (s) => states.push(s), graceMs: 2000 });
}, 120_000);
afterAll(async () => {
  await runtime?.stopAll(500);
  await t?.close();
}, 120_000);

const get = async (s: ReplicaStatus, p = "/") => {
  const res = await fetch(`http://${s.host}:${s.port}${p}`);
  return (await res.json()) as Record<string, any>;
};
const running = (id: string) => until(`${id} running`, () => runtime.status(id)?.state === "running" && runtime.status(id));
const linesOf = (id: string, stream?: OutputStream) => lines.filter((l) => l.id === id && (!stream || l.stream === stream)).map((l) => l.line);

describe("pull", () => {
  test("the image's config and layers come out of the registry; the root has the app", () => {
    const { pulled, image } = prepared;
    expect(pulled.repository).toBe(`${prepared.cast.project.slug}/web`);
    expect(pulled.config.entrypoint).toEqual(["/bin/sh", "-c"]);
    expect(pulled.config.cmd).toEqual(["exec node server.js"]);
    expect(pulled.config.workingDir).toBe("/app");
    expect(pulled.config.env).toContain("GREETING=from-image");
    expect(pulled.config.exposedPorts).toEqual(["8080/tcp"]);
    expect(pulled.config.labels["org.opencontainers.image.revision"]).toBe("rev-v1");
    expect(pulled.layers.length).toBe(1);
    expect(existsSync(path.join(image.root!, "app", "server.js"))).toBe(true);
  });

  test("by digest too; 404 for an unknown tag or repository", async () => {
    const { readImage } = await import("../src/domains/registries/oci/pull");
    const again = await readImage(t.core, prepared.pulled.repository, prepared.pulled.digest);
    expect(again.digest).toBe(prepared.pulled.digest);
    await expect(readImage(t.core, prepared.pulled.repository, "nope")).rejects.toMatchObject({ code: "not_found" });
    await expect(readImage(t.core, "nobody/nothing", "v1")).rejects.toMatchObject({ code: "not_found" });
  });
});

describe("replicas", () => {
  test("two replicas run sandboxed with the image's config, the caller's variables in order, and PORT", async () => {
    const env: Array<[string, string]> = [
      ["GREETING", "from-env-group"],
      ["SECRET", "group-value"],
      ["SECRET", "unit-secret"],
      ["CHECK_PATHS", `${t.dataDir}:/app/server.js:/etc/ssl/certs:/root`],
    ];
    const a = await runtime.start({ id: "web-a", image: prepared.image, env: [...env, ["REPLICA_NAME", "a"]], labels: { service: "web" } });
    const b = await runtime.start({ id: "web-b", image: prepared.image, env: [...env, ["REPLICA_NAME", "b"]], labels: { service: "web" } });
    expect(a.state).toBe("starting");
    expect(a.port).not.toBe(b.port);
    const ra = await running("web-a");
    const rb = await running("web-b");
    const ja = await get(ra);
    const jb = await get(rb);
    expect(ja.replica).toBe("a");
    expect(jb.replica).toBe("b");
    expect(ja.port).toBe(String(ra.port));
    expect(ja.greeting).toBe("from-env-group");
    expect(ja.secret).toBe("unit-secret");
    expect(ja.cwd).toBe("/app");
    // Nothing of ops's own environment: only the image's, the caller's, PATH, HOME and PORT (and the shell's PWD).
    expect(ja.env_keys).toEqual(["CHECK_PATHS", "GREETING", "HOME", "NODE_ENV", "PATH", "PORT", "PWD", "REPLICA_NAME", "SECRET"]);
    expect(ja.sees).toEqual({ [t.dataDir]: false, "/app/server.js": true, "/etc/ssl/certs": true, "/root": false });
    expect(ja.tmp_writable).toBe(true);
    expect(ja.app_writable).toBe(false);
    if (process.getuid?.() === 0) expect(ja.uid).toBe(65534);
    // New pid namespace: the app is a low pid inside it.
    expect(ja.pid).toBeLessThan(10);
    // Output is read apart from readiness (its pipe is polled): the line may come a moment later.
    await until("the app's first line", () => linesOf("web-a", "stdout").includes(`listening on ${ra.port}`), 5000);
    expect(linesOf("web-a", "stdout")).toContain(`listening on ${ra.port}`);
  });

  test("health probes: HTTP 2xx on a path, or a TCP connection", async () => {
    const s = runtime.status("web-a")!;
    expect((await probeOnce({ host: s.host, port: s.port, path: "/" }, 2000)).ok).toBe(true);
    expect((await probeOnce({ host: s.host, port: s.port }, 2000)).ok).toBe(true);
    const crashPathless = await probeOnce({ host: s.host, port: 1 }, 500);
    expect(crashPathless.ok).toBe(false);
    const bad = await waitHealthy({ host: "127.0.0.1", port: 1, path: "/" }, { deadlineMs: 300, intervalMs: 50 });
    expect(bad.ok).toBe(false);
    expect(bad.error).toBeTruthy();
  });

  test("a crashing replica restarts on the same port with doubling delays", async () => {
    const s = await runtime.start({ id: "crashy", image: prepared.image, env: [["REPLICA_NAME", "crashy"]], restart: { initialMs: 300, maxMs: 1200, resetAfterMs: 60_000 } });
    let cur = await running("crashy");
    for (const [i, delay] of [
      [1, 300],
      [2, 600],
      [3, 1200],
      [4, 1200],
    ] as const) {
      await fetch(`http://${cur.host}:${cur.port}/crash`).then((r) => r.text());
      const crashed = await until(`crash ${i}`, () => {
        const st = runtime.status("crashy")!;
        return st.state === "crashed" && st.restarts === i - 1 && st;
      });
      expect(crashed.lastExit).toMatchObject({ code: 3, oomKilled: false });
      expect(crashed.nextRestartAt! - crashed.lastExit!.at).toBe(delay);
      cur = await until(`restart ${i}`, () => {
        const st = runtime.status("crashy")!;
        return st.state === "running" && st.restarts === i && st;
      });
      expect(cur.port).toBe(s.port);
    }
    expect(linesOf("crashy", "ops").filter((l) => l.startsWith("exited with code 3; restarting in"))).toEqual([
      "exited with code 3; restarting in 300 ms",
      "exited with code 3; restarting in 600 ms",
      "exited with code 3; restarting in 1200 ms",
      "exited with code 3; restarting in 1200 ms",
    ]);
    expect(states.filter((x) => x.id === "crashy").map((x) => x.state)).toContain("crashed");
    await runtime.stop("crashy", 500);
  });

  test("a replica over its memory limit is killed and reported as such", async () => {
    const detected = detectMemoryController();
    if (!detected.ok) throw new Error(`this machine should have a writable memory cgroup: ${detected.reason}`);
    const s = await runtime.start({ id: "hog", image: prepared.image, memoryMb: 96, restart: { initialMs: 60_000 } });
    expect(s.memory).toEqual({ limitMb: 96, enforced: true, how: detected.controller.how, reason: null });
    const r = await running("hog");
    await fetch(`http://${r.host}:${r.port}/hog`).then((x) => x.text());
    const killed = await until("the OOM kill", () => runtime.status("hog")?.state === "crashed" && runtime.status("hog"), 30_000);
    expect(killed.lastExit?.oomKilled).toBe(true);
    expect(linesOf("hog", "ops").some((l) => l.startsWith("was killed: over its memory limit of 96 MiB"))).toBe(true);
    await runtime.stop("hog");
  });

  test("a limit nothing can enforce is reported, never silent", async () => {
    const rt = createProcessRuntime({ memory: { ok: false, reason: "no cgroup here (test)" }, onLine: (id, stream, line) => lines.push({ id, stream, line }) });
    const s = await rt.start({ id: "unlimited", image: prepared.image, memoryMb: 64 });
    expect(s.memory).toEqual({ limitMb: 64, enforced: false, how: null, reason: "no cgroup here (test)" });
    expect(linesOf("unlimited", "ops")).toContain("memory limit of 64 MiB is not enforced: no cgroup here (test)");
    await rt.stop("unlimited", 500);
  });

  test("stop: SIGTERM and the app's own shutdown within the grace period", async () => {
    const before = runtime.status("web-b")!;
    const stopped = await runtime.stop("web-b", 5000);
    expect(stopped?.state).toBe("stopped");
    expect(stopped?.lastExit).toMatchObject({ code: 0, signal: null });
    expect(linesOf("web-b", "stdout")).toContain("got SIGTERM");
    expect(existsSync(`/proc/${before.pid}`)).toBe(false);
    expect(runtime.status("web-b")).toBeNull();
    await expect(fetch(`http://${before.host}:${before.port}/`)).rejects.toThrow();
  });

  test("stop: a replica that ignores SIGTERM is killed with everything it started after the grace period", async () => {
    const cmd = `node -e "process.on('SIGTERM',()=>console.log('ignoring'));require('child_process').spawn('sleep',['300'],{stdio:'ignore'});require('http').createServer((q,s)=>s.end('ok')).listen(process.env.PORT)"`;
    const s = await runtime.start({ id: "stubborn", image: prepared.image, command: cmd });
    await running("stubborn");
    const { descendants } = await import("../src/adapters/runtime/process");
    const tree = await until("the child sleep", () => {
      const d = descendants(s.pid!);
      return d.some((p) => p.comm === "sleep") && d;
    });
    const t0 = Date.now();
    const stopped = await runtime.stop("stubborn", 700);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(650);
    expect(stopped?.lastExit?.signal).toBe("SIGKILL");
    expect(linesOf("stubborn", "stdout")).toContain("ignoring");
    // The kernel tears the pid namespace down with its init (zombies linger a moment for their reaper).
    const alive = (pid: number) => {
      try {
        return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
      } catch {
        return false;
      }
    };
    await until("the whole tree gone", () => tree.every((p) => !alive(p.pid)), 3000);
  });

  test("an image without a command, a live id, or a missing root are refused", async () => {
    await expect(runtime.start({ id: "web-a", image: prepared.image })).rejects.toThrow(/already live/);
    await expect(runtime.start({ id: "x", image: { ...prepared.image, root: undefined } })).rejects.toThrow(/unpack it first/);
    await expect(runtime.start({ id: "y", image: { ...prepared.image, config: { ...prepared.image.config, entrypoint: [], cmd: [] } } })).rejects.toThrow(/no Entrypoint or Cmd/);
  });
});

describe("the Core's runtime", () => {
  test("runtimeOf + prepareImage run a replica; closing the Core stops it", async () => {
    const { runtimeOf, prepareImage } = await import("../src/adapters/runtime");
    const t2 = await createTestApp();
    try {
      const cast = await registryCast(t2);
      await skopeoPush(t2, cast, await writeTestImage("v7"), "api", "v7");
      const { image, refused } = await prepareImage(t2.core, `${cast.project.slug}/api`, "v7");
      expect(refused).toEqual([]);
      expect(image.root).toStartWith(path.join(t2.dataDir, "run", "images", "sha256-"));
      const rt = runtimeOf(t2.core);
      expect(runtimeOf(t2.core)).toBe(rt);
      expect(rt.kind).toBe("process");
      const s = await rt.start({ id: "closing", image });
      await until("running", () => rt.status("closing")?.state === "running");
      await t2.close();
      expect(existsSync(`/proc/${s.pid}`)).toBe(false);
      expect(rt.list()).toEqual([]);
    } finally {
      await t2.close();
    }
  });
});

describe("docker runtime", () => {
  test("without its socket every call fails with a clear message", async () => {
    const socket = path.join(tempDir("ops-docker-"), "docker.sock");
    const docker = createDockerRuntime({ socket });
    await expect(docker.start({ id: "d", image: { ...prepared.image, reference: "127.0.0.1:1/x/y@sha256:" + "0".repeat(64) } })).rejects.toThrow(
      `the Docker Engine socket ${socket} does not exist: is Docker installed and running? (OPS_DOCKER_SOCKET)`,
    );
    expect(docker.status("d")).toBeNull();
  });
});
