/**
 * The build queue: at most OPS_BUILD_CONCURRENCY builds work at once, and queued builds leave the
 * queue fairly across projects (a project with nothing working first, then the project served
 * least recently, then the oldest build within it; the last free slot only for a project with
 * nothing working). Builds are inserted as rows and moved by hand here: the queue is what is tested,
 * not the steps (which no scheduler runs in this file). Also the log retention task and the time
 * limit of the steps that run no process.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { eq, inArray } from "drizzle-orm";
import { createTestApp, type TestApp } from "./harness";
import { makeProject } from "./fixtures";
import { builds } from "../src/domains/builds/tables";
import { dispatchBuilds, pickNext } from "../src/domains/builds/dispatch";
import { schedulerItems } from "../src/core/tables";
import { buildLogLines } from "../src/domains/builds/tables";
import { pruneBuildLogs, withinStepLimit } from "../src/domains/builds/pipeline";
import { StepFailure } from "../src/domains/builds/plan";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { OPS_BUILD_CONCURRENCY: "1" } });
});
afterAll(() => t.close());

/** Insert a queued build of `slug` (its label is the commit message) into `app`'s database. */
function addQueued(app: TestApp, slug: string, label: string): number {
  const project = app.core.access.findProject(slug)!;
  return app.core.db
    .insert(builds)
    .values({ projectId: project.id, project: project.slug, environment: "production", service: "web", kind: "image", status: "queued", trigger: "push", requestedBy: "host", repo: `${project.slug}/app`, commitSha: label.padEnd(40, "0"), author: "a", message: label, commitTime: 0, queuedAt: app.clock.now() })
    .returning({ id: builds.id })
    .get().id;
}

const queue = (projectSlug: string, label: string): number => addQueued(t, projectSlug, label);

/** Let the queue start one build, then finish it; returns the label (commit message) of the one it started. */
function serveOne(): string {
  const [id] = dispatchBuilds(t.core);
  if (id === undefined) return "(none)";
  const row = t.core.db.select().from(builds).where(eq(builds.id, id)).get()!;
  expect(row.status).toBe("cloning");
  t.core.db.update(builds).set({ status: "healthy", finishedAt: t.clock.now() }).where(eq(builds.id, id)).run();
  return row.message;
}

describe("the build queue", () => {
  test("round-robin by project: a project with many queued builds does not starve the others", () => {
    const a = makeProject(t, "queue-a").slug;
    const b = makeProject(t, "queue-b").slug;
    const c = makeProject(t, "queue-c").slug;
    for (const n of [1, 2, 3, 4]) queue(a, `a${n}`);
    queue(b, "b1");
    queue(b, "b2");
    const order = [serveOne(), serveOne()];
    // A project that queues later, never served yet, goes before those already served.
    queue(c, "c1");
    for (let i = 0; i < 6; i++) order.push(serveOne());
    expect(order).toEqual(["a1", "b1", "c1", "a2", "b2", "a3", "a4", "(none)"]);
  });

  test("at most OPS_BUILD_CONCURRENCY builds work at once; each started build gets its first step item", () => {
    const d = makeProject(t, "queue-d").slug;
    const ids = [queue(d, "d1"), queue(d, "d2")];
    const started = dispatchBuilds(t.core);
    expect(started).toEqual([ids[0]]);
    expect(dispatchBuilds(t.core)).toEqual([]);
    const row = t.core.db.select().from(builds).where(eq(builds.id, ids[0])).get()!;
    const item = t.core.db.select().from(schedulerItems).where(eq(schedulerItems.id, row.stepItem!)).get()!;
    expect(item.kind).toBe("builds.step");
    // The clone step's timing opens with the state, in the same write.
    expect(JSON.parse(item.payload)).toEqual({ build: ids[0], state: "cloning", opened: true });
    expect(JSON.parse(row.stepTimings)).toEqual([{ step: "clone", startedAt: row.startedAt }]);
    // A build waiting for its rollout's verdict holds no builder slot.
    t.core.db.update(builds).set({ status: "deploying" }).where(eq(builds.id, ids[0])).run();
    expect(dispatchBuilds(t.core)).toEqual([ids[1]]);
    t.core.db.update(builds).set({ status: "healthy" }).where(inArray(builds.id, ids)).run();
    expect(pickNext(t.core.db)).toBeNull();
  });

  test("with OPS_BUILD_CONCURRENCY=3, one from each project first; the last free slot only for a project with nothing working", async () => {
    const three = await createTestApp({ env: { OPS_BUILD_CONCURRENCY: "3" } });
    try {
      const add = (slug: string, label: string) => addQueued(three, slug, label);
      makeProject(three, "p1");
      makeProject(three, "p2");
      makeProject(three, "p3");
      const ids = [add("p1", "x1"), add("p1", "x2"), add("p1", "x3"), add("p2", "y1")];
      expect(dispatchBuilds(three.core).sort()).toEqual([ids[0], ids[3]].sort());
      // p1 holds a slot already: the last one waits for a project with nothing working.
      expect(dispatchBuilds(three.core)).toEqual([]);
      const z1 = add("p3", "z1");
      expect(dispatchBuilds(three.core)).toEqual([z1]);
      // y1 ends: p2 has nothing left, p1 takes a slot while one stays free, not the last.
      three.core.db.update(builds).set({ status: "healthy" }).where(eq(builds.id, ids[3])).run();
      expect(dispatchBuilds(three.core)).toEqual([]);
      three.core.db.update(builds).set({ status: "healthy" }).where(eq(builds.id, z1)).run();
      expect(dispatchBuilds(three.core)).toEqual([ids[1]]);
      // The steps of three builds and the 4 slots other work shares fit in the scheduler at once.
      expect(three.core.scheduler.capacity).toBe(7);
    } finally {
      await three.close();
    }
  });

  test("a project with no build working goes before one that has a build working, even if it was served since", async () => {
    const two = await createTestApp({ env: { OPS_BUILD_CONCURRENCY: "4" } });
    try {
      const add = (slug: string, label: string) => addQueued(two, slug, label);
      makeProject(two, "long");
      makeProject(two, "short");
      const endless = add("long", "l1");
      expect(dispatchBuilds(two.core)).toEqual([endless]);
      // "short" is served after "long" and its build ends; "long"'s first build is still working.
      const s1 = add("short", "s1");
      expect(dispatchBuilds(two.core)).toEqual([s1]);
      two.core.db.update(builds).set({ status: "healthy" }).where(eq(builds.id, s1)).run();
      // Both queue again: "long" was served least recently, but "short" has nothing working.
      const l2 = add("long", "l2");
      const s2 = add("short", "s2");
      expect(pickNext(two.core.db)).toEqual({ id: s2, projectId: two.core.access.findProject("short")!.id });
      expect(dispatchBuilds(two.core)).toEqual([s2, l2]);
    } finally {
      await two.close();
    }
  });

  test("OPS_BUILD_CONCURRENCY defaults to 2", async () => {
    const dflt = await createTestApp();
    try {
      expect(dflt.core.config.buildConcurrency).toBe(2);
    } finally {
      await dflt.close();
    }
  });

  test("log retention: lines of builds ended before OPS_LOG_RETENTION_DAYS go, except each service's 5 newest builds", () => {
    const e = makeProject(t, "queue-e").slug;
    const ids = Array.from({ length: 7 }, (_, i) => queue(e, `e${i}`));
    const day = 86_400_000;
    for (const id of ids) {
      t.core.db.update(builds).set({ status: "healthy", finishedAt: t.clock.now(), logLines: 2 }).where(eq(builds.id, id)).run();
      for (const seq of [1, 2]) t.core.db.insert(buildLogLines).values({ buildId: id, seq, at: t.clock.now(), level: "info", step: "build", line: `line ${seq}` }).run();
    }
    expect(pruneBuildLogs(t.core)).toBe(0);
    t.clock.advance(15 * day);
    expect(pruneBuildLogs(t.core)).toBe(2);
    const left = (id: number) => t.core.db.select().from(buildLogLines).where(eq(buildLogLines.buildId, id)).all().length;
    expect(ids.map(left)).toEqual([0, 0, 2, 2, 2, 2, 2]);
    expect(t.core.db.select().from(builds).where(eq(builds.id, ids[0])).get()!.logLines).toBe(0);
    expect(pruneBuildLogs(t.core)).toBe(0);
  });

  test("a step that runs no process is bounded by the step time limit too", async () => {
    const hung = new Promise<string>(() => {});
    const err = await withinStepLimit(hung, 0.05, "clone").catch((e) => e);
    expect(err).toBeInstanceOf(StepFailure);
    expect(err).toMatchObject({ kind: "internal", message: "the clone step did not finish within 0.05s (OPS_BUILD_STEP_TIMEOUT_SECS)" });
    expect(await withinStepLimit(Promise.resolve("done"), 5, "push")).toBe("done");
  });
});
