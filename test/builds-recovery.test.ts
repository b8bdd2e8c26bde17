/**
 * No build left running, in process: three builds are stepped one scheduler item at a time (as a
 * server would) and the server stops between steps — a worker holding one's push, another's
 * build, and the third's scan not yet taken. A second server on the same data dir settles them at
 * start-up: the push step runs again from the work dir (the build ends healthy), the build step,
 * whose processes died with the server, fails `internal` saying so, the untaken scan simply runs;
 * the item the first server left behind is stale and does nothing.
 * Also: a server that starts draining stops a running build command and records the build as failed;
 * a build parked on another's image (decision 0435) is not settled as a stale step at start-up.
 * (test/builds-restart.test.ts does the same with SIGKILL on a real `ops serve`.)
 */
import { describe, test, expect, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import { eq } from "drizzle-orm";
import type { TestApp } from "./harness";
import { cloneUrl, git } from "./sources-git-helpers";
import { buildsApp, buildsDataDir, buildWorld, drain, logText, manualBuild, opsToml, SAMPLE_APP, until, type BuildWorld } from "./builds-fixtures";
import { buildsModule } from "../src/domains/builds";
import { getBuildRow } from "../src/domains/builds/service";
import { builds } from "../src/domains/builds/tables";
import { schedulerItems } from "../src/core/tables";

const dataDir = buildsDataDir();
const apps: TestApp[] = [];
let w: BuildWorld;
afterAll(async () => {
  w?.local.remove();
  for (const a of apps) await a.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Run the build's current step item only; returns the state it moved to. */
async function step(t: TestApp, id: number): Promise<string> {
  const row = t.core.db.select().from(builds).where(eq(builds.id, id)).get()!;
  await t.core.scheduler.runNow(row.stepItem!);
  return t.core.db.select().from(builds).where(eq(builds.id, id)).get()!.status;
}

describe("builds across a stop", () => {
  test("start-up resumes a step that runs no process, fails one whose processes died, leaves an untaken item to run", async () => {
    // Three builds of one project at work at once: the queue keeps a fourth slot for other projects.
    const env = { OPS_BUILD_CONCURRENCY: "4" };
    const first = await buildsApp(env, { dataDir });
    apps.push(first);
    w = await buildWorld(first);
    await w.local.commit(SAMPLE_APP, "Sample app");
    // Three commits: builds of one commit's same inputs would share one image (decision 0435).
    await w.local.commit({ "b.txt": "b\n" }, "Branch b", "b");
    await w.local.commit({ "c.txt": "c\n" }, "Branch c", "c");
    await w.local.push("main", "b", "c");
    const [pushed] = (await (await w.ctx.req("GET", "/builds")).json()) as Array<{ id: number }>;
    const manual = await manualBuild(w, "b");
    const third = await manualBuild(w, "c");
    for (const want of ["checks", "building", "scanning", "pushing"]) expect(await step(first, pushed.id)).toBe(want);
    for (const want of ["checks", "building"]) expect(await step(first, manual.id)).toBe(want);
    for (const want of ["checks", "building", "scanning"]) expect(await step(first, third.id)).toBe(want);
    const itemOf = (id: number) => getBuildRow(first.core, w.ctx.slug, id)!.stepItem!;
    const staleItem = itemOf(pushed.id);
    const untaken = itemOf(third.id);
    // The server stops while a worker holds the push and the build steps (their items running),
    // and before any worker took the third build's scan (its item still pending).
    for (const item of [staleItem, itemOf(manual.id)]) first.core.db.update(schedulerItems).set({ state: "running", leasedUntil: first.clock.now() + 60_000 }).where(eq(schedulerItems.id, item)).run();
    await first.close();

    const second = await buildsApp(env, { dataDir });
    apps.push(second);
    await buildsModule.onServe!(second.core);
    const failed = getBuildRow(second.core, w.ctx.slug, manual.id)!;
    expect(failed).toMatchObject({ status: "failed", failureKind: "internal" });
    expect(failed.error).toContain("ops stopped while the build was in building");
    expect(failed.finishedAt).not.toBeNull();
    const resumed = getBuildRow(second.core, w.ctx.slug, pushed.id)!;
    expect(resumed.status).toBe("pushing");
    expect(resumed.stepItem).not.toBe(staleItem);
    expect(getBuildRow(second.core, w.ctx.slug, third.id)!.stepItem).toBe(untaken);
    // The lease the first server left expires: its item runs again and finds itself stale.
    second.clock.advance(120_000);
    await drain(second);
    for (const id of [pushed.id, third.id]) {
      const done = getBuildRow(second.core, w.ctx.slug, id)!;
      expect(done.status).toBe("healthy");
      expect(done.imageDigest).toMatch(/^sha256:/);
      expect((JSON.parse(done.stepTimings) as Array<{ step: string }>).map((s) => s.step)).toEqual(["clone", "checks", "build", "scan", "push", "sign", "deploy"]);
    }
    expect(second.core.db.select().from(schedulerItems).where(eq(schedulerItems.id, staleItem)).get()!.state).toBe("done");
  }, 120_000);

  test("a draining server kills a running build command; the build is recorded failed (internal), never left running", async () => {
    const t = apps[1];
    await w.local.commit({ ...SAMPLE_APP, "ops.toml": opsToml({ build: ["sleep 351"] }) }, "Slow", "slow");
    await git(w.local.dir, "remote", "set-url", "origin", cloneUrl(t.url, w.repo, w.token));
    await w.local.push("slow");
    const w2: BuildWorld = { ...w, t, ctx: { ...w.ctx, req: (m, p, b, tok) => t.request(m, `${w.ctx.base}${p}`, { token: tok ?? w.ctx.owner.session, body: b }) } };
    const b = await manualBuild(w2, "slow");
    const running = drain(t);
    await until("the slow command", async () => (await logText(w2, b.id)).includes("$ sleep 351"));
    t.core.state.draining = true;
    await running;
    t.core.state.draining = false;
    const row = getBuildRow(t.core, w.ctx.slug, b.id)!;
    expect(row).toMatchObject({ status: "failed", failureKind: "internal" });
    expect(row.error).toContain("ops shut down during the build step");
  }, 60_000);

  test("a build parked on another's image is no stale step: after a restart it moves on with its leader (decision 0435)", async () => {
    const env = { OPS_BUILD_CONCURRENCY: "3" };
    const dir = buildsDataDir();
    const before = await buildsApp(env, { dataDir: dir });
    const v = await buildWorld(before, { environments: ["production", "staging"] });
    try {
      await v.local.commit(SAMPLE_APP, "Shared");
      await v.local.push("main");
      const ids = before.core.db.select({ id: builds.id }).from(builds).all().map((r) => r.id);
      expect(ids).toHaveLength(2);
      expect(await step(before, ids[0]!)).toBe("checks");
      expect(await step(before, ids[1]!)).toBe("building");
      expect(getBuildRow(before.core, v.ctx.slug, ids[1]!)).toMatchObject({ reuseOf: ids[0], stepItem: null });
      await before.close();

      const after = await buildsApp(env, { dataDir: dir });
      try {
        await buildsModule.onServe!(after.core);
        expect(getBuildRow(after.core, v.ctx.slug, ids[1]!)).toMatchObject({ status: "building", reuseOf: ids[0] });
        await drain(after);
        const [leader, follower] = ids.map((id) => getBuildRow(after.core, v.ctx.slug, id)!);
        expect([leader!.status, follower!.status]).toEqual(["healthy", "healthy"]);
        expect(follower!.imageDigest).toBe(leader!.imageDigest);
        const notes = (JSON.parse(follower!.stepTimings) as Array<{ step: string; note?: string }>).map((s) => `${s.step}: ${s.note ?? ""}`);
        expect(notes).toContain(`build: reused image ${leader!.imageDigest} of build #${leader!.id}`);
      } finally {
        await after.close();
      }
    } finally {
      v.local.remove();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
