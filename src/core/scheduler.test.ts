/**
 * The scheduler, driven by a fixed clock: tests move the clock and call runDue()/runNow(); nothing
 * here sleeps to wait for a job.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase, type OpenedDb } from "./db/client";
import { runMigrations } from "./db/migrate";
import { FixedClock } from "./clock";
import { createLogger } from "./log";
import { Scheduler, parseCron, nextCronRun, type ItemContext } from "./scheduler";
import { schedulerItems, schedulerTasks } from "./tables";
import { OpsError } from "./errors";
import { tempDir } from "../../test/harness";

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function setup() {
  const dir = tempDir("ops-scheduler-");
  dirs.push(dir);
  const opened: OpenedDb = openDatabase(path.join(dir, "ops.db"), "state");
  runMigrations(opened.sqlite, "ops", T0);
  const clock = new FixedClock(T0);
  const logs: string[] = [];
  const make = () => new Scheduler(opened.db, clock, createLogger("debug", (l) => logs.push(l)), { tickMs: 1000, leaseMs: MIN });
  return { db: opened.db, sqlite: opened.sqlite, clock, logs, scheduler: make(), restart: make };
}

function item(db: OpenedDb["db"], id: string) {
  return db.select().from(schedulerItems).where(eq(schedulerItems.id, id)).get()!;
}
function task(db: OpenedDb["db"], id: string) {
  return db.select().from(schedulerTasks).where(eq(schedulerTasks.id, id)).get()!;
}

describe("items", () => {
  test("a started scheduler runs work due at once right after it is enqueued, not at the next tick", async () => {
    const { db, scheduler, clock } = setup();
    const ran = Promise.withResolvers<number>();
    scheduler.defineItem("test.now", () => ran.resolve(Date.now()));
    scheduler.defineItem("test.later", () => {
      throw new Error("not due yet");
    });
    scheduler.start();
    try {
      await Bun.sleep(20); // the first tick, with nothing due
      const enqueued = Date.now();
      scheduler.enqueue(db, "test.later", {}, { runAt: clock.now() + MIN });
      const id = scheduler.enqueue(db, "test.now", {});
      const at = await Promise.race([ran.promise, Bun.sleep(500).then(() => -1)]);
      expect(at).toBeGreaterThanOrEqual(enqueued);
      expect(at - enqueued).toBeLessThan(500); // the tick is 1 s away
      await Bun.sleep(20);
      expect(item(db, id).state).toBe("done");
    } finally {
      await scheduler.stop(1000);
    }
  });

  test("startNow runs an item enqueued without a kick in the same turn under start(); before start() it waits for runDue", async () => {
    const { db, scheduler } = setup();
    const seen: string[] = [];
    scheduler.defineItem("test.handoff", (_p, ctx) => {
      seen.push(ctx.id);
    });
    const early = scheduler.enqueue(db, "test.handoff", {}, { kick: false });
    scheduler.startNow(early);
    expect(seen).toEqual([]);
    expect(item(db, early).state).toBe("pending");
    scheduler.start();
    try {
      await Bun.sleep(20); // the first tick ran the early item
      expect(seen).toEqual([early]);
      const id = scheduler.enqueue(db, "test.handoff", {}, { kick: false });
      scheduler.startNow(id);
      // Claimed and its handler called before anything awaited: no timer, no tick.
      expect(seen).toEqual([early, id]);
      expect(item(db, id).attempts).toBe(1);
      scheduler.startNow(id); // taken already: left alone
      await Bun.sleep(20);
      expect(seen).toEqual([early, id]);
      expect(item(db, id).state).toBe("done");
    } finally {
      await scheduler.stop(1000);
    }
  });

  test("run when due by the clock, with their payload", async () => {
    const { db, clock, scheduler } = setup();
    const seen: Array<{ payload: unknown; ctx: ItemContext }> = [];
    scheduler.defineItem("test.deliver", (payload, ctx) => {
      seen.push({ payload, ctx });
    });
    const id = scheduler.enqueue(db, "test.deliver", { to: "a@b.c" }, { runAt: T0 + 5 * MIN });
    expect(item(db, id)).toMatchObject({ state: "pending", attempts: 0, runAt: T0 + 5 * MIN });

    expect(await scheduler.runDue()).toBe(0);
    clock.advance(5 * MIN);
    expect(await scheduler.runDue()).toBe(1);
    expect(seen).toEqual([{ payload: { to: "a@b.c" }, ctx: { id, attempt: 1, resumed: false, finishIn: expect.any(Function) } }]);
    expect(item(db, id)).toMatchObject({ state: "done", attempts: 1, leasedUntil: null, lastError: null, finishedAt: T0 + 5 * MIN });
    expect(await scheduler.runDue()).toBe(0);
  });

  test("a failure retries with backoff, then fails for good", async () => {
    const { db, clock, scheduler, logs } = setup();
    let calls = 0;
    scheduler.defineItem(
      "test.flaky",
      () => {
        calls++;
        throw new Error(`boom ${calls}`);
      },
      { maxAttempts: 3, backoffMs: (a) => a * MIN },
    );
    const id = scheduler.enqueue(db, "test.flaky");
    expect(await scheduler.runDue()).toBe(1);
    expect(item(db, id)).toMatchObject({ state: "pending", attempts: 1, lastError: "boom 1", runAt: T0 + MIN, leasedUntil: null });

    clock.advance(MIN - 1);
    expect(await scheduler.runDue()).toBe(0);
    clock.advance(1);
    expect(await scheduler.runDue()).toBe(1);
    expect(item(db, id)).toMatchObject({ state: "pending", attempts: 2, lastError: "boom 2", runAt: clock.now() + 2 * MIN });

    clock.advance(2 * MIN);
    expect(await scheduler.runDue()).toBe(1);
    expect(item(db, id)).toMatchObject({ state: "failed", attempts: 3, lastError: "boom 3", finishedAt: clock.now() });
    clock.advance(60 * MIN);
    expect(await scheduler.runDue()).toBe(0);
    expect(calls).toBe(3);
    expect(logs.some((l) => l.includes("work item failed for good"))).toBe(true);
  });

  test("finishIn ends the item in the handler's own transaction: a rollback keeps it running, and nothing throws it back to pending afterwards", async () => {
    const { db, clock, scheduler, logs } = setup();
    const { tx } = await import("./db/client");
    let during: string | undefined;
    scheduler.defineItem("test.records", (_p, ctx) => {
      expect(() =>
        tx(db, (t) => {
          ctx.finishIn(t);
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      during = item(db, ctx.id).state;
      tx(db, (t) => ctx.finishIn(t));
      clock.advance(1000);
      throw new Error("after the end");
    });
    const id = scheduler.enqueue(db, "test.records", {}, { maxAttempts: 3 });
    expect(await scheduler.runDue()).toBe(1);
    expect(during).toBe("running");
    // Done at the commit's time, not the handler's return; the later throw retries nothing.
    expect(item(db, id)).toMatchObject({ state: "done", attempts: 1, finishedAt: T0, leasedUntil: null, lastError: null });
    expect(logs.some((l) => l.includes("work item failed after it recorded its end"))).toBe(true);
    expect(await scheduler.runDue()).toBe(0);
  });

  test("the default backoff doubles from one minute", async () => {
    const { db, clock, scheduler } = setup();
    scheduler.defineItem("test.fails", () => {
      throw new Error("no");
    });
    const id = scheduler.enqueue(db, "test.fails");
    expect(item(db, id).maxAttempts).toBe(5);
    await scheduler.runDue();
    expect(item(db, id).runAt).toBe(T0 + MIN);
    clock.advance(MIN);
    await scheduler.runDue();
    expect(item(db, id).runAt).toBe(T0 + MIN + 2 * MIN);
    clock.advance(2 * MIN);
    await scheduler.runDue();
    expect(item(db, id).runAt).toBe(T0 + 3 * MIN + 4 * MIN);
  });

  test("dedupeKey: a second enqueue while pending is a no-op; after it finished, a new item", async () => {
    const { db, scheduler } = setup();
    let runs = 0;
    scheduler.defineItem("test.once", () => {
      runs++;
    });
    const a = scheduler.enqueue(db, "test.once", { n: 1 }, { dedupeKey: "k1" });
    const b = scheduler.enqueue(db, "test.once", { n: 2 }, { dedupeKey: "k1" });
    expect(b).toBe(a);
    const other = scheduler.enqueue(db, "test.once", {}, { dedupeKey: "k2" });
    expect(other).not.toBe(a);
    expect(await scheduler.runDue()).toBe(2);
    expect(runs).toBe(2);
    const c = scheduler.enqueue(db, "test.once", { n: 3 }, { dedupeKey: "k1" });
    expect(c).not.toBe(a);
    expect(item(db, c).state).toBe("pending");
  });

  test("dedupeKey: enqueued again while it runs, it runs once more after, with the newest payload (a change is never lost)", async () => {
    const { db, scheduler } = setup();
    const seen: unknown[] = [];
    let again: (() => void) | null = null;
    scheduler.defineItem("test.reconcile", async (payload) => {
      seen.push(payload);
      // Changes arrive while the first run is under way: both ask for another pass.
      again?.();
      again = null;
    });
    const a = scheduler.enqueue(db, "test.reconcile", { n: 1 }, { dedupeKey: "svc" });
    again = () => {
      expect(scheduler.enqueue(db, "test.reconcile", { n: 2 }, { dedupeKey: "svc" })).toBe(a);
      expect(scheduler.enqueue(db, "test.reconcile", { n: 3 }, { dedupeKey: "svc" })).toBe(a);
      expect(item(db, a).state).toBe("running");
    };
    await scheduler.runDue();
    expect(seen).toEqual([{ n: 1 }, { n: 3 }]);
    expect(item(db, a)).toMatchObject({ state: "done", rerun: 0, dedupeKey: null });
    // Pending (not yet running): still a no-op.
    const b = scheduler.enqueue(db, "test.reconcile", { n: 4 }, { dedupeKey: "svc" });
    expect(scheduler.enqueue(db, "test.reconcile", { n: 5 }, { dedupeKey: "svc" })).toBe(b);
    await scheduler.runDue();
    expect(seen).toEqual([{ n: 1 }, { n: 3 }, { n: 4 }]);
  });

  test("a handler that outlives the shutdown grace and ends after the database closed is logged, not an unhandled rejection", async () => {
    const { db, sqlite, logs, scheduler } = setup();
    const release = Promise.withResolvers<void>();
    const started = Promise.withResolvers<void>();
    scheduler.defineItem("test.slow", async () => {
      started.resolve();
      await release.promise;
    });
    scheduler.enqueue(db, "test.slow", {});
    scheduler.start();
    await started.promise;
    await scheduler.stop(10);
    sqlite.close();
    release.resolve();
    await Bun.sleep(50);
    expect(logs.join("\n")).toContain("scheduled work ended after shutdown; its end is not recorded");
  });

  test("a running item whose lease expired (its worker died) is resumed", async () => {
    const { db, clock, scheduler, restart } = setup();
    const id = scheduler.enqueue(db, "test.resumable", { step: 2 });
    // The previous process leased it and died: state running, lease in the past.
    db.update(schedulerItems).set({ state: "running", attempts: 1, leasedUntil: T0 + 30_000 }).where(eq(schedulerItems.id, id)).run();

    const after = restart();
    const seen: ItemContext[] = [];
    after.defineItem("test.resumable", (_p, ctx) => {
      seen.push(ctx);
    });
    // Lease still live: another worker owns it.
    expect(await after.runDue()).toBe(0);
    clock.advance(30_001);
    expect(await after.runDue()).toBe(1);
    expect(seen).toEqual([{ id, attempt: 2, resumed: true, finishIn: expect.any(Function) }]);
    expect(item(db, id)).toMatchObject({ state: "done", attempts: 2 });
  });

  test("an item with no handler fails with a reason", async () => {
    const { db, scheduler } = setup();
    const id = scheduler.enqueue(db, "test.unknown-kind");
    await scheduler.runDue();
    expect(item(db, id)).toMatchObject({ state: "failed", lastError: "no handler for test.unknown-kind" });
  });

  test("items enqueued by a running item run in the same runDue when due", async () => {
    const { db, scheduler } = setup();
    const order: string[] = [];
    scheduler.defineItem("test.first", () => {
      order.push("first");
      scheduler.enqueue(db, "test.second");
    });
    scheduler.defineItem("test.second", () => {
      order.push("second");
    });
    scheduler.enqueue(db, "test.first");
    expect(await scheduler.runDue()).toBe(2);
    expect(order).toEqual(["first", "second"]);
  });

  test("runNow runs an item before its time; an unknown id throws", async () => {
    const { db, scheduler } = setup();
    let ran = 0;
    scheduler.defineItem("test.later", () => {
      ran++;
    });
    const id = scheduler.enqueue(db, "test.later", {}, { runAt: T0 + 24 * 60 * MIN });
    await scheduler.runNow(id);
    expect(ran).toBe(1);
    expect(item(db, id).state).toBe("done");
    await expect(scheduler.runNow("no-such-id")).rejects.toThrow("no scheduler task or item");
  });

  test("start() picks work up on its own; stop() waits for running work", async () => {
    const { db, scheduler } = setup();
    let release!: () => void;
    const started = Promise.withResolvers<void>();
    scheduler.defineItem("test.slow", async () => {
      started.resolve();
      await new Promise<void>((r) => (release = r));
    });
    const id = scheduler.enqueue(db, "test.slow");
    scheduler.start();
    expect(scheduler.started).toBe(true);
    await started.promise;
    const stopping = scheduler.stop(30_000);
    expect(scheduler.started).toBe(false);
    release();
    await stopping;
    expect(item(db, id).state).toBe("done");
  });
});

describe("tasks", () => {
  test("the next run is computed from the clock; runDue runs only due tasks", async () => {
    const { db, clock, scheduler } = setup();
    const runs: string[] = [];
    scheduler.defineTask("test.every-five", "*/5 * * * *", () => {
      runs.push("five");
    });
    scheduler.defineTask("test.hourly", "0 * * * *", () => {
      runs.push("hourly");
    });
    expect(task(db, "test.every-five")).toMatchObject({ cron: "*/5 * * * *", nextRunAt: T0 + 5 * MIN, lastRunAt: null });
    expect(task(db, "test.hourly").nextRunAt).toBe(T0 + 60 * MIN);

    expect(await scheduler.runDue()).toBe(0);
    clock.advance(5 * MIN);
    expect(await scheduler.runDue()).toBe(1);
    expect(runs).toEqual(["five"]);
    expect(task(db, "test.every-five")).toMatchObject({ lastRunAt: T0 + 5 * MIN, lastStatus: "ok", nextRunAt: T0 + 10 * MIN, leasedUntil: null });
    expect(await scheduler.runDue()).toBe(0);

    clock.set(T0 + 60 * MIN);
    expect(await scheduler.runDue()).toBe(2);
    expect(runs).toEqual(["five", "five", "hourly"]);
  });

  test("runNow runs a task regardless of its schedule", async () => {
    const { db, scheduler } = setup();
    let runs = 0;
    scheduler.defineTask("test.nightly", "0 3 * * *", () => {
      runs++;
    });
    await scheduler.runNow("test.nightly");
    expect(runs).toBe(1);
    expect(task(db, "test.nightly")).toMatchObject({ lastRunAt: T0, lastStatus: "ok", nextRunAt: Date.UTC(2026, 10, 22, 3, 0, 0) });
  });

  test("a task missed while ops was down runs once, then follows its cron", async () => {
    const { db, clock, scheduler, restart } = setup();
    scheduler.defineTask("test.minutely", "* * * * *", () => {});
    // Down for three hours: 180 slots missed.
    clock.advance(180 * MIN + 30_000);
    const after = restart();
    let runs = 0;
    after.defineTask("test.minutely", "* * * * *", () => {
      runs++;
    });
    expect(await after.runDue()).toBe(1);
    expect(runs).toBe(1);
    expect(task(db, "test.minutely").nextRunAt).toBe(T0 + 181 * MIN);
    expect(await after.runDue()).toBe(0);
  });

  test("a failing task records the failure and keeps its schedule", async () => {
    const { db, clock, scheduler } = setup();
    scheduler.defineTask("test.broken", "*/10 * * * *", () => {
      throw new Error("disk full");
    });
    clock.advance(10 * MIN);
    await scheduler.runDue();
    expect(task(db, "test.broken")).toMatchObject({ lastStatus: "failed", lastError: "disk full", nextRunAt: T0 + 20 * MIN, leasedUntil: null });
  });

  test("a changed cron expression reschedules from now; the same one keeps its row", () => {
    const { db, clock, scheduler, restart } = setup();
    scheduler.defineTask("test.t", "0 * * * *", () => {});
    clock.advance(7 * MIN);
    const same = restart();
    same.defineTask("test.t", "0 * * * *", () => {});
    expect(task(db, "test.t").nextRunAt).toBe(T0 + 60 * MIN);
    const changed = restart();
    changed.defineTask("test.t", "*/15 * * * *", () => {});
    expect(task(db, "test.t")).toMatchObject({ cron: "*/15 * * * *", nextRunAt: T0 + 15 * MIN });
  });

  test("defining a task or item kind twice is a programming error", () => {
    const { scheduler } = setup();
    scheduler.defineTask("test.dup", "* * * * *", () => {});
    expect(() => scheduler.defineTask("test.dup", "* * * * *", () => {})).toThrow("defined twice");
    scheduler.defineItem("test.dup", () => {});
    expect(() => scheduler.defineItem("test.dup", () => {})).toThrow("defined twice");
  });
});

describe("cron parsing", () => {
  test("UTC, strictly after the given time", () => {
    expect(nextCronRun("30 2 * * *", T0)).toBe(Date.UTC(2026, 10, 22, 2, 30, 0));
    expect(nextCronRun("0 12 * * *", T0)).toBe(Date.UTC(2026, 10, 22, 12, 0, 0));
  });

  test("a bad expression is a 422 validation error", () => {
    for (const bad of ["every tuesday", "61 * * * *", "* * * *"]) {
      let err: unknown = null;
      try {
        parseCron(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OpsError);
      expect((err as OpsError).status).toBe(422);
    }
  });
});
