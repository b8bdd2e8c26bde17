/**
 * `ops serve` end to end: a child process started from another working directory on an empty data
 * dir becomes ready, serves OpenAPI, and exits 0 on SIGTERM with sound databases. Draining is
 * tested in-process with `startServer` and a test domain that has a slow route.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { rmSync, existsSync } from "node:fs";
import path from "node:path";
import { Elysia } from "elysia";
import { freePort, tempDir, waitFor, integrityOk } from "./harness";
import { startServer } from "../src/serve";
import { loadConfig } from "../src/core/config";
import { FixedClock } from "../src/core/clock";
import { authzPlugin } from "../src/core/authz/plugin";
import type { DomainModule } from "../src/core/core";

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("ops serve (child process)", () => {
  test("from another directory on an empty data dir: ready, OpenAPI, SIGTERM exits 0", async () => {
    const cwd = tempDir("ops-serve-cwd-");
    const dataDir = path.join(tempDir("ops-serve-data-"), "data");
    dirs.push(cwd, path.dirname(dataDir));
    const port = freePort();
    const child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], {
      cwd,
      env: { ...process.env, OPS_LOG_LEVEL: "info" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      const ready = await waitFor(`${base}/readyz`);
      expect(await ready.json()).toEqual({ ready: true, draining: false });
      const doc = (await (await fetch(`${base}/api/docs/json`)).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(doc.paths)).toContain("/health");
      expect((await fetch(`${base}/health`)).status).toBe(200);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    const stdout = await new Response(child.stdout).text();
    const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.some((l) => l.msg === "ops is serving")).toBe(true);
    expect(lines.some((l) => l.msg === "shutting down" && l.reason === "SIGTERM")).toBe(true);
    expect(lines.at(-1).msg).toBe("stopped");
    expect(existsSync(path.join(cwd, "ops-data"))).toBe(false);
    expect(integrityOk(path.join(dataDir, "ops.db"))).toBe(true);
    expect(integrityOk(path.join(dataDir, "telemetry.db"))).toBe(true);
  });
});

describe("ops serve on a port something else holds", () => {
  test("stops before it creates the estate owner, naming the address and the setting that moves it", async () => {
    const held = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("someone else") });
    const dataDir = path.join(tempDir("ops-serve-held-"), "data");
    dirs.push(path.dirname(dataDir));
    try {
      const child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${held.port}`], { env: { ...process.env, OPS_LOG_LEVEL: "warn" }, stdout: "pipe", stderr: "pipe" });
      expect(await child.exited).toBe(1);
      const stderr = await new Response(child.stderr).text();
      expect(stderr).toContain(`127.0.0.1:${held.port}`);
      expect(stderr).toContain("OPS_LISTEN");
      // A password printed by a start that then failed would be lost: the next start prints none.
      expect(stderr).not.toContain("created the estate owner");
      expect(existsSync(path.join(dataDir, "ops.db"))).toBe(false);
    } finally {
      held.stop(true);
    }
  });
});

describe("draining (in-process)", () => {
  function slowDomain() {
    const entered = Promise.withResolvers<void>();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const module: DomainModule = {
      name: "slow-test",
      routes: (core) =>
        new Elysia({ name: "slow-test-routes" }).use(authzPlugin(core)).get(
          "/t/slow",
          async () => {
            entered.resolve();
            await released;
            return { finished: true };
          },
          { public: true },
        ),
    };
    return { module, entered: entered.promise, release: () => release() };
  }

  async function start(module: DomainModule, env: Record<string, string> = {}) {
    const dataDir = tempDir("ops-drain-");
    dirs.push(dataDir);
    const port = freePort();
    const logs: string[] = [];
    const config = loadConfig({ OPS_DATA_DIR: dataDir, OPS_LISTEN: `127.0.0.1:${port}`, ...env }, {}, dataDir);
    const running = await startServer(config, { modules: [module], clock: new FixedClock(), logSink: (l) => logs.push(l) });
    return { running, logs, dataDir };
  }

  test("an in-flight request finishes with 200 while /readyz says 503", async () => {
    const slow = slowDomain();
    const { running, logs, dataDir } = await start(slow.module);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);

    const inFlight = fetch(`${running.url}/t/slow`);
    await slow.entered;
    const closed = running.shutdown("test");
    expect(running.core.state.draining).toBe(true);
    const readyz = await running.app.handle(new Request(`${running.url}/readyz`));
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toEqual({ ready: false, draining: true });
    // The listener takes no new connections while it drains.
    await expect(fetch(`${running.url}/health`)).rejects.toThrow();

    slow.release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ finished: true });
    await closed;
    expect(logs.map((l) => JSON.parse(l).msg)).toEqual(expect.arrayContaining(["shutting down", "stopped"]));
    expect(logs.some((l) => l.includes("did not finish in time"))).toBe(false);
    expect(integrityOk(path.join(dataDir, "ops.db"))).toBe(true);
    expect(await running.shutdown("again")).toBeUndefined();
  });

  test("a request still running after OPS_SHUTDOWN_GRACE_MS is cut off and shutdown completes", async () => {
    const slow = slowDomain();
    const { running, logs } = await start(slow.module, { OPS_SHUTDOWN_GRACE_MS: "200" });
    const inFlight = fetch(`${running.url}/t/slow`).then(
      (r) => r.status,
      () => "cut off",
    );
    await slow.entered;
    await running.shutdown("test");
    expect(logs.some((l) => l.includes("in-flight requests did not finish in time"))).toBe(true);
    expect(await inFlight).toBe("cut off");
    slow.release();
  });
});
