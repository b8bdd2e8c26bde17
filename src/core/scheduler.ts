/**
 * The in-process scheduler. Two kinds of work, both persisted in ops.db:
 *
 * - **Items** (`enqueue`): one-off work with a payload, e.g. "deliver this email", "run job X".
 *   A worker leases an item before running it and renews the lease while it runs; an item still
 *   `running` with an expired lease belonged to a process that died and is run again (handlers
 *   are written to be safe to resume). Failures retry with backoff up to `maxAttempts`.
 * - **Tasks** (`defineTask`): recurring work by cron expression (UTC), with a stable id
 *   `domain.task-name`. A task missed while ops was down runs once, then follows its cron.
 *
 * Only `ops serve` calls `start()`. Tests never sleep: they move the fixed clock and call
 * `runDue()` or `runNow(id)`.
 */
import { Cron } from "croner";
import { and, eq, lte, lt, or, isNull, asc } from "drizzle-orm";
import type { Db, Queryable } from "./db/client";
import type { Clock } from "./clock";
import type { Logger } from "./log";
import { uuidv7 } from "./ids";
import { schedulerItems, schedulerTasks } from "./tables";
import { OpsError } from "./errors";
import { finishItemIn, insertItem, type EnqueueOptions } from "./scheduler-items";

export type { EnqueueOptions } from "./scheduler-items";

export interface ItemContext {
  id: string;
  /** 1 on the first run. */
  attempt: number;
  /** True when this run resumes an item whose previous worker died. */
  resumed: boolean;
  /**
   * Mark the item done inside the caller's transaction `q`, with the work it finished (a handler
   * whose last write records its outcome saves a commit). When the handler returns, the scheduler
   * ends the item only if it is still running (the transaction rolled back); an error the handler
   * throws after its end is logged, and the item stays done.
   */
  finishIn(q: Queryable): void;
}

export type ItemHandler = (payload: unknown, item: ItemContext) => Promise<void> | void;
export type TaskHandler = () => Promise<void> | void;

interface ItemDef {
  handler: ItemHandler;
  maxAttempts: number;
  backoffMs: (attempt: number) => number;
}

export interface SchedulerOptions {
  tickMs: number;
  /** How long a lease lasts before another worker may take the work over. */
  leaseMs?: number;
  /** Most items running at once. */
  concurrency?: number;
}

/** Parse a cron expression (5 fields, UTC). Throws `validation_failed` when it is not one. */
export function parseCron(expr: string): Cron {
  try {
    return new Cron(expr, { timezone: "Etc/UTC", paused: true });
  } catch (e) {
    throw new OpsError("validation_failed", `Not a cron expression: ${(e as Error).message}`, { fields: [{ path: "schedule", message: "not a cron expression" }] });
  }
}

/** The next time `expr` fires strictly after `afterMs`. */
export function nextCronRun(expr: string | Cron, afterMs: number): number {
  const c = typeof expr === "string" ? parseCron(expr) : expr;
  const next = c.nextRun(new Date(afterMs));
  if (!next) throw new OpsError("validation_failed", "The cron expression never fires.");
  return next.getTime();
}

export class Scheduler {
  private readonly items = new Map<string, ItemDef>();
  private readonly tasks = new Map<string, { cron: Cron; expr: string; handler: TaskHandler }>();
  private readonly running = new Set<Promise<void>>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private ticking = false;
  private stopping = false;
  readonly leaseMs: number;
  private readonly concurrency: number;
  /** Most items running at once in this process. */
  get capacity(): number {
    return this.concurrency;
  }
  private readonly workerId = uuidv7();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: SchedulerOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.concurrency = opts.concurrency ?? 4;
  }

  get started(): boolean {
    return this.timer !== null;
  }

  private kickPending = false;

  /**
   * Under `ops serve`, run due work now rather than at the next tick. Called by `enqueue` for work
   * due at once: the timer fires after the enqueueing transaction (synchronous) has committed, so
   * the item is there to claim (or gone with a rollback). Kicks in one turn of the loop coalesce.
   * Tasks are not looked at: they fall due by the clock, which the tick follows.
   */
  private kick(): void {
    if (!this.started || this.stopping || this.kickPending) return;
    this.kickPending = true;
    setTimeout(() => {
      this.kickPending = false;
      if (this.stopping) return;
      this.runDue({ wait: false, tasks: false }).catch((e) => this.log.warn("scheduler kick failed", { err: (e as Error).message }));
    }, 0);
  }

  /**
   * Under `ops serve`, claim item `id` and start it now, in this turn, when a slot is free; else
   * a kick runs it as soon as one is. For a caller that enqueued the item (with `kick: false`) in
   * a transaction that has committed and has nothing left to do before the item runs, e.g. a build
   * step handing over to the next: no timer, no search for due work. An item that is not pending
   * and due (taken by another worker, gone) is left alone. Outside `ops serve` it does nothing:
   * tests run items with `runDue`.
   */
  startNow(id: string): void {
    if (!this.started || this.stopping) return;
    if (this.running.size >= this.concurrency) {
      this.kick();
      return;
    }
    this.track(this.runItem(id));
  }

  /** Register the handler for items of `kind` (stable id `domain.item-name`). */
  defineItem(kind: string, handler: ItemHandler, opts: { maxAttempts?: number; backoffMs?: (attempt: number) => number } = {}): void {
    if (this.items.has(kind)) throw new Error(`scheduler item kind ${kind} defined twice`);
    this.items.set(kind, {
      handler,
      maxAttempts: opts.maxAttempts ?? 5,
      backoffMs: opts.backoffMs ?? ((a) => Math.min(60_000 * 2 ** (a - 1), 3_600_000)),
    });
  }

  /** Register a recurring task by cron expression; keeps its schedule across restarts. */
  defineTask(id: string, cron: string, handler: TaskHandler): void {
    if (this.tasks.has(id)) throw new Error(`scheduler task ${id} defined twice`);
    const c = parseCron(cron);
    this.tasks.set(id, { cron: c, expr: cron, handler });
    const now = this.clock.now();
    const row = this.db.select().from(schedulerTasks).where(eq(schedulerTasks.id, id)).get();
    if (!row) {
      this.db.insert(schedulerTasks).values({ id, cron, nextRunAt: nextCronRun(c, now) }).run();
    } else if (row.cron !== cron) {
      this.db.update(schedulerTasks).set({ cron, nextRunAt: nextCronRun(c, now) }).where(eq(schedulerTasks.id, id)).run();
    }
  }

  /** Persist a work item (inside the caller's transaction when `q` is a tx). Returns its id. */
  enqueue(q: Queryable, kind: string, payload: unknown = {}, opts: EnqueueOptions = {}): string {
    const now = this.clock.now();
    const { id, fresh } = insertItem(q, now, kind, payload, opts, this.items.get(kind)?.maxAttempts);
    if (fresh && (opts.runAt ?? now) <= now && opts.kick !== false) this.kick();
    return id;
  }

  /** Start polling for due work every `tickMs`. Only `ops serve` calls this. */
  start(): void {
    if (this.timer) return;
    this.stopping = false;
    this.timer = setInterval(() => void this.tick(), this.opts.tickMs);
    void this.tick();
  }

  /** Stop taking new work and wait (up to `graceMs`) for running work to finish. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.running.size === 0) return;
    await Promise.race([Promise.allSettled([...this.running]), Bun.sleep(graceMs)]);
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopping) return;
    this.ticking = true;
    try {
      await this.runDue({ wait: false });
    } catch (e) {
      this.log.error("scheduler tick failed", { err: e });
    } finally {
      this.ticking = false;
    }
  }

  /**
   * Run every task and item due at the clock's now (items only with `tasks: false`). With `wait`
   * (the default, for tests) it resolves when they finished, including items they enqueued that
   * are due too.
   * Returns how many ran.
   */
  async runDue(opts: { wait?: boolean; tasks?: boolean } = {}): Promise<number> {
    const wait = opts.wait ?? true;
    let ran = 0;
    for (let round = 0; round < 20; round++) {
      const started: Promise<void>[] = [];
      const now = this.clock.now();
      if (opts.tasks !== false && this.tasks.size > 0) {
        // One query for every due task (not one per defined task): the tick runs every second.
        const due = this.db
          .select({ id: schedulerTasks.id })
          .from(schedulerTasks)
          .where(and(lte(schedulerTasks.nextRunAt, now), or(isNull(schedulerTasks.leasedUntil), lt(schedulerTasks.leasedUntil, now))))
          .orderBy(asc(schedulerTasks.id))
          .all();
        for (const { id } of due) if (this.tasks.has(id)) started.push(this.track(this.runTask(id)));
      }
      const free = wait ? 1000 : Math.max(0, this.concurrency - this.running.size);
      if (free > 0) {
        const dueItems = this.db
          .select({ id: schedulerItems.id })
          .from(schedulerItems)
          .where(
            or(
              and(eq(schedulerItems.state, "pending"), lte(schedulerItems.runAt, now)),
              and(eq(schedulerItems.state, "running"), lt(schedulerItems.leasedUntil, now)),
            ),
          )
          .orderBy(asc(schedulerItems.runAt))
          .limit(free)
          .all();
        for (const it of dueItems) started.push(this.track(this.runItem(it.id)));
      }
      ran += started.length;
      if (!wait || started.length === 0) break;
      await Promise.allSettled(started);
    }
    return ran;
  }

  /**
   * Keep `p` among the running work until it settles. A run's own failures are recorded by
   * runItem/runTask; what can still escape is recording its end after the database closed (a
   * handler that outlived the shutdown grace): logged here, never an unhandled rejection.
   */
  private track(p: Promise<void>): Promise<void> {
    const tracked = p.catch((e) => {
      if (this.stopping) this.log.warn("scheduled work ended after shutdown; its end is not recorded", { err: (e as Error)?.message ?? String(e) });
      else this.log.error("scheduled work could not record its end", { err: e });
    });
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
    return tracked;
  }

  /** Run task or item `id` now, whatever its schedule, and wait for it. */
  async runNow(id: string): Promise<void> {
    if (this.tasks.has(id)) {
      await this.runTask(id, true);
      return;
    }
    const item = this.db.select({ id: schedulerItems.id }).from(schedulerItems).where(eq(schedulerItems.id, id)).get();
    if (!item) throw new Error(`no scheduler task or item ${id}`);
    await this.runItem(id, true);
  }

  private async runTask(id: string, force = false): Promise<void> {
    const def = this.tasks.get(id);
    if (!def) return;
    const now = this.clock.now();
    const claim = this.db
      .update(schedulerTasks)
      .set({ leasedUntil: now + this.leaseMs })
      .where(
        force
          ? eq(schedulerTasks.id, id)
          : and(eq(schedulerTasks.id, id), lte(schedulerTasks.nextRunAt, now), or(isNull(schedulerTasks.leasedUntil), lt(schedulerTasks.leasedUntil, now))),
      )
      .returning({ id: schedulerTasks.id })
      .all();
    if (claim.length === 0) return;
    let status = "ok";
    let error: string | null = null;
    try {
      await def.handler();
    } catch (e) {
      status = "failed";
      error = (e as Error)?.message ?? String(e);
      this.log.error("scheduled task failed", { task: id, err: e });
    }
    const after = this.clock.now();
    this.db
      .update(schedulerTasks)
      .set({ leasedUntil: null, lastRunAt: after, lastStatus: status, lastError: error, nextRunAt: nextCronRun(def.cron, after) })
      .where(eq(schedulerTasks.id, id))
      .run();
  }

  private async runItem(id: string, force = false): Promise<void> {
    const now = this.clock.now();
    const row = this.db.select().from(schedulerItems).where(eq(schedulerItems.id, id)).get();
    if (!row) return;
    const resumed = row.state === "running";
    const claim = this.db
      .update(schedulerItems)
      .set({ state: "running", leasedUntil: now + this.leaseMs, attempts: row.attempts + 1 })
      .where(
        force
          ? and(eq(schedulerItems.id, id), or(eq(schedulerItems.state, "pending"), eq(schedulerItems.state, "running"), eq(schedulerItems.state, "failed")))
          : and(
              eq(schedulerItems.id, id),
              eq(schedulerItems.attempts, row.attempts),
              or(
                and(eq(schedulerItems.state, "pending"), lte(schedulerItems.runAt, now)),
                and(eq(schedulerItems.state, "running"), lt(schedulerItems.leasedUntil, now)),
              ),
            ),
      )
      .returning({ id: schedulerItems.id })
      .all();
    if (claim.length === 0) return;
    const def = this.items.get(row.kind);
    const attempt = row.attempts + 1;
    if (!def) {
      this.finishItem(id, "failed", `no handler for ${row.kind}`);
      return;
    }
    // Renew the lease while the handler runs, so a long run is not taken over by another worker.
    const renew = setInterval(() => {
      this.db
        .update(schedulerItems)
        .set({ leasedUntil: this.clock.now() + this.leaseMs })
        .where(and(eq(schedulerItems.id, id), eq(schedulerItems.state, "running")))
        .run();
    }, Math.max(1000, Math.floor(this.leaseMs / 3)));
    const finishIn = (q: Queryable) => void finishItemIn(q, id, "done", null, this.clock.now());
    try {
      await def.handler(JSON.parse(row.payload), { id, attempt, resumed, finishIn });
      // A no-op (no write, no fsync) when the handler ended the item in its own transaction.
      this.finishItem(id, "done", null);
    } catch (e) {
      const message = (e as Error)?.message ?? String(e);
      let moved: boolean;
      if (attempt >= row.maxAttempts) {
        moved = this.finishItem(id, "failed", message);
        if (moved) this.log.error("work item failed for good", { item: id, kind: row.kind, attempt, err: e });
      } else {
        const retry = this.db
          .update(schedulerItems)
          .set({ state: "pending", leasedUntil: null, lastError: message, runAt: this.clock.now() + def.backoffMs(attempt), rerun: 0 })
          .where(and(eq(schedulerItems.id, id), eq(schedulerItems.state, "running")))
          .run() as unknown as { changes: number };
        moved = retry.changes > 0;
        if (moved) this.log.warn("work item failed; will retry", { item: id, kind: row.kind, attempt, err: message });
      }
      if (!moved) this.log.error("work item failed after it recorded its end", { item: id, kind: row.kind, attempt, err: e });
    } finally {
      clearInterval(renew);
    }
  }

  private finishItem(id: string, state: "done" | "failed", error: string | null): boolean {
    return finishItemIn(this.db, id, state, error, this.clock.now());
  }
}
