/**
 * Step hand-offs under a started scheduler (as under `ops serve`): a build's next step starts as
 * soon as the step before it is recorded — with the scheduler's tick an hour away, a push still
 * builds to a signed image — and a step started that way is cancelled like any other: its
 * process tree is killed at once and the build ends `cancelled` at that step.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { eq } from "drizzle-orm";
import { expectStatus, type TestApp } from "./harness";
import { schedulerItems } from "../src/core/tables";
import { buildsApp, buildWorld, getBuild, logText, opsToml, SAMPLE_APP, until, type BuildWorld } from "./builds-fixtures";

let t: TestApp;
let w: BuildWorld;

beforeAll(async () => {
  t = await buildsApp({ OPS_SCHEDULER_TICK_MS: "3600000" });
  w = await buildWorld(t);
  t.core.scheduler.start();
}, 120_000);
afterAll(async () => {
  await t?.core.scheduler.stop(10_000);
  w?.local.remove();
  await t?.close();
});

/** The newest build of the project once it is newer than `after` and has ended. */
async function ended(after: number): Promise<Awaited<ReturnType<typeof getBuild>>> {
  return until("the pushed build to end", async () => {
    const [b] = await expectStatus<Array<{ id: number; status: string }>>(await w.ctx.req("GET", "/builds?limit=1"), 200);
    return b && b.id > after && ["healthy", "failed", "cancelled"].includes(b.status) ? getBuild(w, b.id) : null;
  });
}

/** Processes on the machine whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(needle)) found.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

describe("hand-offs between build steps", () => {
  test("a push builds to a signed image with no tick: each step starts when the one before it is recorded", async () => {
    await w.local.commit(SAMPLE_APP, "Sample app");
    await w.local.push("main");
    const b = await ended(0);
    expect(b.status).toBe("healthy");
    expect(b.step_timings.map((s) => s.step)).toEqual(["clone", "checks", "build", "scan", "push", "sign", "deploy"]);
    const steps = b.step_timings.slice(0, 7);
    for (let i = 1; i < steps.length; i++) {
      // The hand-over records one step's end and the next one's start in one transaction: no gap
      // (a few milliseconds at most between two reads of the clock), never the tick's hour.
      expect(Date.parse(steps[i].started_at) - Date.parse(steps[i - 1].finished_at!)).toBeLessThan(100);
    }
    // Every step's item ended with the step (its end was committed with the step's result).
    const items = t.core.db.select({ state: schedulerItems.state, payload: schedulerItems.payload }).from(schedulerItems).where(eq(schedulerItems.kind, "builds.step")).all();
    const ofBuild = items.filter((i) => (JSON.parse(i.payload) as { build: number }).build === b.id);
    expect(ofBuild.length).toBe(6);
    expect(ofBuild.map((i) => i.state)).toEqual(Array(6).fill("done"));
  }, 120_000);

  test("cancel reaches a step started by a hand-off: its processes are killed and the build ends cancelled", async () => {
    const before = (await expectStatus<Array<{ id: number }>>(await w.ctx.req("GET", "/builds?limit=1"), 200))[0]?.id ?? 0;
    await w.local.commit({ "ops.toml": opsToml({ build: ["sleep 353"], output: "." }) }, "A long build");
    await w.local.push("main");
    const b = await until("the build step to run its command", async () => {
      const [latest] = await expectStatus<Array<{ id: number; status: string }>>(await w.ctx.req("GET", "/builds?limit=1"), 200);
      return latest && latest.id > before && latest.status === "building" && (await logText(w, latest.id)).includes("$ sleep 353") ? latest : null;
    });
    await until("the sleep to be running", () => processesWith("sleep 353").length > 0);
    const res = await expectStatus<{ status: string }>(await w.ctx.req("POST", `/builds/${b.id}/cancel`), 202);
    expect(res.status).toBe("building");
    const done = await until("the build to end", async () => {
      const x = await getBuild(w, b.id);
      return x.status === "building" ? null : x;
    }, 20_000);
    expect(done.status).toBe("cancelled");
    expect(done.step_timings.at(-1)).toMatchObject({ step: "build", ok: false, note: "cancelled" });
    // The step's last lines are committed with its result: there as soon as the build reads cancelled.
    expect(await logText(w, b.id)).toContain("cancelled: the step's processes were stopped");
    await until("the sandboxed sleep to be gone", () => processesWith("sleep 353").length === 0, 10_000);
  }, 120_000);
});
