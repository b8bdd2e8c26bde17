/**
 * Fair builds (issue 19 item 8): with the default OPS_BUILD_CONCURRENCY, one project's builds that
 * never end do not hold another project's build. Two projects on one server, real `git` pushes to
 * the built-in host, real sandboxed builds run by the scheduler's own items (`runDue` without
 * waiting, so the endless one keeps running): `alpha`'s build sleeps for an hour and a second one
 * queues behind it; `beta`'s push starts at once and ends healthy while alpha's first still runs
 * and its second still waits. Cancelling alpha's builds ends their processes.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { expectStatus, type TestApp } from "../harness";
import { buildsApp, buildWorld, getBuild, logText, opsToml, SAMPLE_APP, until, type BuildWorld } from "../builds-fixtures";
import type { BuildResponse } from "../../src/domains/builds/model";

let t: TestApp;
let alpha: BuildWorld;
let beta: BuildWorld;

beforeAll(async () => {
  // A step limit well past the test's length: alpha's build must still be running when beta's ends.
  t = await buildsApp({ OPS_BUILD_STEP_TIMEOUT_SECS: "900" });
  alpha = await buildWorld(t);
  beta = await buildWorld(t);
}, 120_000);

afterAll(async () => {
  alpha?.local.remove();
  beta?.local.remove();
  await t?.close();
});

/** Start whatever scheduler items are due, without waiting for them, until `check` holds. */
async function runUntil<T>(what: string, check: () => Promise<T | null | undefined>, ms = 90_000): Promise<T> {
  return until(
    what,
    async () => {
      await t.core.scheduler.runDue({ wait: false });
      return check();
    },
    ms,
  );
}

async function pushed(w: BuildWorld, files: Record<string, string>, message: string): Promise<BuildResponse> {
  const before = new Set((await expectStatus<BuildResponse[]>(await w.ctx.req("GET", "/builds"), 200)).map((b) => b.id));
  await w.local.commit(files, message);
  await w.local.push("main");
  const [b] = (await expectStatus<BuildResponse[]>(await w.ctx.req("GET", "/builds"), 200)).filter((x) => !before.has(x.id));
  return b!;
}

describe("one project's never-ending build", () => {
  test("does not hold another project's build (default OPS_BUILD_CONCURRENCY)", async () => {
    expect(t.core.config.buildConcurrency).toBe(2);
    const endless = { ...SAMPLE_APP, "ops.toml": opsToml({ build: ["sleep 3607"] }) };
    const first = await pushed(alpha, endless, "A build that never ends");
    await runUntil("alpha's endless command", async () => ((await logText(alpha, first.id)).includes("$ sleep 3607") ? true : null));
    // alpha pushes again: it already holds a slot, and the last one is kept for a project with nothing working.
    const second = await pushed(alpha, { "again.txt": "more\n" }, "Another endless build");
    expect(second.status).toBe("queued");

    const other = await pushed(beta, SAMPLE_APP, "Sample app");
    expect(other.status).toBe("cloning");
    const done = await runUntil("beta's build to end", async () => {
      const b = await getBuild(beta, other.id);
      return b.finished_at ? b : null;
    });
    expect(done.status).toBe("healthy");
    expect((await getBuild(alpha, first.id)).status).toBe("building");
    expect((await getBuild(alpha, second.id)).status).toBe("queued");

    for (const b of [second, first]) await expectStatus(await alpha.ctx.req("POST", `/builds/${b.id}/cancel`), b === second ? 200 : 202);
    const cancelled = await runUntil("alpha's build to stop", async () => {
      const b = await getBuild(alpha, first.id);
      return b.finished_at ? b : null;
    });
    expect(cancelled.status).toBe("cancelled");
  }, 180_000);
});
