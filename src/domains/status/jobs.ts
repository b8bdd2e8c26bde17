/**
 * `status.probe` (every minute): the platform's components, checked from inside the server.
 *
 * - api: operational whenever the probe runs (it runs in the serving process); `ops serve` also
 *   records `down` when it stops and `operational` when it starts again, so downtime shows.
 * - database: a read on ops.db; degraded when it takes longer than a second, down when it fails.
 * - ingest: a read on telemetry.db (where ingested telemetry lands), same rule.
 * - scheduler: degraded when recurring tasks are more than 5 minutes late or due work items have
 *   waited 15 minutes; the heartbeat (this probe's own last run) is checked when the public status
 *   is read: no probe for 3 minutes while the scheduler should be running means it is down.
 * - registry, builds: operational until their domains report through `setComponentState`.
 */
import { and, eq, lt, ne } from "drizzle-orm";
import type { Core } from "../../core/core";
import { schedulerItems, schedulerTasks } from "../../core/tables";
import { setComponentState } from "./components";
import type { ComponentState } from "./model";

export const PROBE_TASK = "status.probe";
const SLOW_MS = 1000;
const TASK_LATE_MS = 5 * 60_000;
const ITEM_WAIT_MS = 15 * 60_000;
const HEARTBEAT_MS = 3 * 60_000;

function timedRead(read: () => unknown): { state: ComponentState; reason: string } {
  const t0 = performance.now();
  try {
    read();
  } catch (e) {
    return { state: "down", reason: `read failed: ${(e as Error).message}`.slice(0, 200) };
  }
  const ms = performance.now() - t0;
  return ms > SLOW_MS ? { state: "degraded", reason: `a trivial read took ${Math.round(ms)} ms` } : { state: "operational", reason: "probe ok" };
}

/** Run the platform probes once and record any state change. */
export function probePlatform(core: Core): void {
  const now = core.clock.now();
  if (core.state.ready && !core.state.draining) setComponentState(core, "api", "operational", "serving requests");

  const db = timedRead(() => core.sqlite.query("SELECT 1").get());
  setComponentState(core, "database", db.state, db.reason);
  const telemetry = timedRead(() => core.telemetrySqlite.query("SELECT 1").get());
  setComponentState(core, "ingest", telemetry.state, telemetry.reason);

  const lateTask = core.db
    .select({ id: schedulerTasks.id })
    .from(schedulerTasks)
    .where(and(lt(schedulerTasks.nextRunAt, now - TASK_LATE_MS), ne(schedulerTasks.id, PROBE_TASK)))
    .get();
  const waiting = core.db
    .select({ id: schedulerItems.id })
    .from(schedulerItems)
    .where(and(eq(schedulerItems.state, "pending"), lt(schedulerItems.runAt, now - ITEM_WAIT_MS)))
    .get();
  if (lateTask) setComponentState(core, "scheduler", "degraded", `task ${lateTask.id} is more than 5 minutes late`);
  else if (waiting) setComponentState(core, "scheduler", "degraded", "work items have waited more than 15 minutes");
  else setComponentState(core, "scheduler", "operational", "tasks on time");
}

/**
 * The scheduler's heartbeat, checked on read: when the scheduler should be running but the probe
 * has not run for 3 minutes, nothing else would notice, so the reader records it as down.
 */
export function checkSchedulerHeartbeat(core: Core, running = core.scheduler.started): void {
  if (!running) return;
  const row = core.db.select({ lastRunAt: schedulerTasks.lastRunAt }).from(schedulerTasks).where(eq(schedulerTasks.id, PROBE_TASK)).get();
  const last = row?.lastRunAt ?? core.state.startedAt;
  const now = core.clock.now();
  if (now - last > HEARTBEAT_MS) setComponentState(core, "scheduler", "down", `no scheduler heartbeat for ${Math.round((now - last) / 60_000)} minutes`);
}
