/**
 * The kill-and-restart story on a real `ops serve` child process: a push starts a build whose
 * command runs for minutes; a second push queues another behind it (OPS_BUILD_CONCURRENCY=1).
 * The server is SIGKILLed mid-build — the sandboxed command dies with it — and a new server on the
 * same data dir settles the interrupted build as failed (`internal`, saying why) and builds the
 * queued one to a signed image. No build is left in a running state.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { chmodSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir, waitFor, integrityOk } from "./harness";
import { LocalRepo, opsToml, SAMPLE_APP, until } from "./builds-fixtures";
import { cloneUrl } from "./sources-git-helpers";

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const EMAIL = "owner@ops.test";
const PASSWORD = "restart-owner-password";
const root = tempDir("ops-builds-restart-");
chmodSync(root, 0o755);
const dataDir = path.join(root, "data");
const children: Array<ReturnType<typeof Bun.spawn>> = [];
let local: LocalRepo | null = null;

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  local?.remove();
  rmSync(root, { recursive: true, force: true });
});

async function serve(): Promise<{ base: string; child: ReturnType<typeof Bun.spawn> }> {
  const port = freePort();
  const child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], {
    cwd: root,
    env: { ...process.env, OPS_BOOTSTRAP_EMAIL: EMAIL, OPS_BOOTSTRAP_PASSWORD: PASSWORD, OPS_INGRESS_LISTEN: "off", OPS_SCHEDULER_TICK_MS: "100", OPS_LOG_LEVEL: "warn", OPS_BUILD_MEMORY_MB: "192" },
    stdout: "ignore",
    stderr: "pipe",
  });
  children.push(child);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/readyz`, 200, 30_000);
  return { base, child };
}

async function call<T = any>(base: string, token: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

/** Processes on the machine whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(needle)) out.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

describe("ops serve killed mid-build", () => {
  test("SIGKILL during building, restart: the interrupted build fails internal, the queued one builds", async () => {
    const first = await serve();
    const login = await fetch(`${first.base}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: EMAIL, password: PASSWORD }) });
    const { token } = (await login.json()) as { token: string };
    expect((await call(first.base, token, "POST", "/api/v1/projects", { slug: "restart", name: "Restart" })).status).toBe(201);
    expect((await call(first.base, token, "POST", "/api/v1/projects/restart/sources", { repo: "restart/app" })).status).toBe(201);
    expect((await call(first.base, token, "PUT", "/api/v1/projects/restart/resources/service/web", { spec: { source: { repo: "restart/app" }, port: 3000 } })).status).toBe(201);

    local = await LocalRepo.create(cloneUrl(first.base, "restart/app", token));
    await local.commit({ ...SAMPLE_APP, "ops.toml": opsToml({ build: ["sleep 353"] }) }, "A build that takes minutes");
    await local.push("main");
    const slow = await until("the first build", async () => (await call<any[]>(first.base, token, "GET", "/api/v1/projects/restart/builds")).body[0]);
    await until("its command to run", async () => {
      const log = await call<{ lines: Array<{ line: string }> }>(first.base, token, "GET", `/api/v1/projects/restart/builds/${slow.id}/log?limit=5000`);
      return log.body.lines.some((l) => l.line === "$ sleep 353");
    });
    await until("the sandboxed command", () => processesWith("sleep 353").length > 0);
    await local.commit(SAMPLE_APP, "A quick build");
    await local.push("main");
    const builds = (await call<any[]>(first.base, token, "GET", "/api/v1/projects/restart/builds")).body;
    expect(builds.map((b) => [b.id, b.status])).toEqual([
      [slow.id + 1, "queued"],
      [slow.id, "building"],
    ]);

    first.child.kill("SIGKILL");
    await first.child.exited;
    expect(first.child.signalCode).toBe("SIGKILL");
    // --die-with-parent: the build's process tree went with the server.
    await until("the build command to die with the server", () => processesWith("sleep 353").length === 0, 10_000);
    expect(integrityOk(path.join(dataDir, "ops.db"))).toBe(true);

    const second = await serve();
    const interrupted = (await call<any>(second.base, token, "GET", `/api/v1/projects/restart/builds/${slow.id}`)).body.build;
    expect(interrupted).toMatchObject({ status: "failed", failure_kind: "internal" });
    expect(interrupted.error).toContain("ops stopped while the build was in building");
    expect(interrupted.finished_at).toBeTruthy();
    const quick = await until(
      "the queued build to finish",
      async () => {
        const b = (await call<any>(second.base, token, "GET", `/api/v1/projects/restart/builds/${slow.id + 1}`)).body.build;
        return ["healthy", "failed", "cancelled"].includes(b.status) ? b : null;
      },
      90_000,
    );
    expect(quick).toMatchObject({ status: "healthy", failure_kind: null });
    expect(quick.image_digest).toMatch(/^sha256:/);
    const all = (await call<any[]>(second.base, token, "GET", "/api/v1/projects/restart/builds")).body;
    expect(all.every((b) => ["healthy", "failed"].includes(b.status))).toBe(true);

    second.child.kill("SIGTERM");
    expect(await second.child.exited).toBe(0);
  }, 180_000);
});
