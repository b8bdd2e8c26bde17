/**
 * The build queue. At most `OPS_BUILD_CONCURRENCY` builds (default 2) are in a working state
 * (cloning … signing; a build waiting for its rollout's verdict holds no builder); the rest wait
 * `queued`. When a slot frees, the queue is fair across projects (DESIGN §6, issue 19 item 8):
 *
 * - a project with no build working goes before a project that has one (fewest working first);
 * - then the project served least recently (round-robin, remembered through `dispatch_seq`, the
 *   order in which builds left the queue), and within a project the oldest build first;
 * - the last free slot goes only to a project with nothing working. Builds do not stop for each
 *   other, so a project that already holds slots could otherwise fill the last one with a build
 *   that never ends (or runs to the step limit), and every other project would wait behind it.
 *   One project alone therefore builds one at a time at the default; docs/decisions/0222 says why.
 *
 * Each step of a build is a scheduler item (`builds.step`, leased and renewed while it runs);
 * the build row names the item that owns its current step (`step_item`), so an item a dead
 * worker left behind finds itself stale and does nothing.
 */
import { and, asc, eq, inArray, isNotNull, sql } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx, type Queryable, type Tx } from "../../core/db/client";
import { builds } from "./tables";
import { timingsOf } from "./rows";
import { WORKING_STATES, type BuildState } from "./model";

export const STEP_ITEM = "builds.step";

/**
 * Builds that hold a builder: a working state, except a build parked in `building` while another
 * build with the same inputs makes its image (reuse.ts): it runs nothing, and counting it could
 * leave its leader queued behind it.
 */
const holdsBuilder = and(inArray(builds.status, [...WORKING_STATES]), sql`not (${builds.status} = 'building' and ${builds.reuseOf} is not null)`);

export interface StepPayload {
  build: number;
  state: BuildState;
  /** The enqueuing transaction opened the state's step timing (`enqueueStep`'s `opened`). */
  opened?: boolean;
}

/**
 * Enqueue the item that runs `state` of a build and make it the build's owner (inside `t`), with
 * the row's other fields in `set` written by the same update. With `startNow`, the caller starts
 * the item itself once `t` committed (`core.scheduler.startNow`); otherwise the scheduler's kick
 * finds it. With `opened`, `set` holds the step timings with the state's step already open (a
 * hand-over records one step's end and the next one's start together), and the item's first run
 * takes that timing as its own.
 */
export function enqueueStep(core: Core, t: Tx, buildId: number, state: BuildState, opts: { startNow?: boolean; opened?: boolean; set?: Partial<typeof builds.$inferInsert> } = {}): string {
  const payload: StepPayload = opts.opened ? { build: buildId, state, opened: true } : { build: buildId, state };
  const item = core.scheduler.enqueue(t, STEP_ITEM, payload, { maxAttempts: 1, kick: !opts.startNow });
  t.update(builds)
    .set({ ...opts.set, stepItem: item })
    .where(eq(builds.id, buildId))
    .run();
  return item;
}

/**
 * The queued build to start next (see the file comment), or null. With `free` slots left, the
 * last one goes only to a project with no build working.
 */
export function pickNext(q: Queryable, free = Number.POSITIVE_INFINITY): { id: number; projectId: string } | null {
  const queued = q.select({ id: builds.id, projectId: builds.projectId }).from(builds).where(eq(builds.status, "queued")).orderBy(asc(builds.id)).all();
  if (queued.length === 0) return null;
  const oldest = new Map<string, number>();
  for (const b of queued) if (!oldest.has(b.projectId)) oldest.set(b.projectId, b.id);
  const projects = [...oldest.keys()];
  const served = new Map(
    q
      .select({ projectId: builds.projectId, last: sql<number>`max(${builds.dispatchSeq})` })
      .from(builds)
      .where(and(inArray(builds.projectId, projects), isNotNull(builds.dispatchSeq)))
      .groupBy(builds.projectId)
      .all()
      .map((r) => [r.projectId, r.last]),
  );
  const working = new Map(
    q
      .select({ projectId: builds.projectId, n: sql<number>`count(*)` })
      .from(builds)
      .where(and(inArray(builds.projectId, projects), holdsBuilder))
      .groupBy(builds.projectId)
      .all()
      .map((r) => [r.projectId, r.n]),
  );
  const key = (p: string) => [working.get(p) ?? 0, served.get(p) ?? -1, oldest.get(p)!];
  const best = projects.reduce((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return kb[i]! < ka[i]! ? b : a;
    return a;
  });
  if (free <= 1 && (working.get(best) ?? 0) > 0) return null;
  return { id: oldest.get(best)!, projectId: best };
}

/** Builds that hold a builder now (see `holdsBuilder`). */
export function workingCount(q: Queryable): number {
  return q.select({ n: sql<number>`count(*)` }).from(builds).where(holdsBuilder).get()?.n ?? 0;
}

/**
 * Start queued builds while slots are free: each moves to `cloning` with its first step item,
 * which starts at once under `ops serve`. Returns the ids started. Safe to call any time (after a
 * queue, a finish, a start-up), outside a transaction.
 */
export function dispatchBuilds(core: Core): number[] {
  const started = tx(core.db, (t) => {
    const started: Array<{ id: number; item: string }> = [];
    let free = core.config.buildConcurrency - workingCount(t);
    while (free > 0) {
      const next = pickNext(t, free);
      if (!next) break;
      const seq = (t.select({ n: sql<number>`coalesce(max(${builds.dispatchSeq}), 0)` }).from(builds).get()?.n ?? 0) + 1;
      // Both kinds of build start with `clone`: its timing opens with the state.
      const now = core.clock.now();
      const was = t.select({ stepTimings: builds.stepTimings, startedAt: builds.startedAt }).from(builds).where(eq(builds.id, next.id)).get();
      const timings = timingsOf(was ?? { stepTimings: "[]" });
      // A build queued again (its image's other build did not make one: reuse.ts) keeps its start.
      const set = { status: "cloning" as const, startedAt: was?.startedAt ?? now, dispatchSeq: seq, stepTimings: JSON.stringify([...timings, { step: "clone", startedAt: now }]) };
      started.push({ id: next.id, item: enqueueStep(core, t, next.id, "cloning", { startNow: true, opened: true, set }) });
      free--;
    }
    return started;
  });
  for (const s of started) core.scheduler.startNow(s.item);
  return started.map((s) => s.id);
}
