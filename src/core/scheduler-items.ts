/**
 * The scheduler's item rows (scheduler.ts): how an enqueue lands under its dedupe key, and how a
 * run ends.
 */
import { eq, and } from "drizzle-orm";
import type { Queryable } from "./db/client";
import { uuidv7 } from "./ids";
import { schedulerItems } from "./tables";

export interface EnqueueOptions {
  runAt?: number;
  /**
   * A second enqueue with the same key while the first is pending is a no-op. While the first is
   * running, it runs once more after it ends (with the newest payload): what it read may already
   * be stale, and the change that caused the second enqueue must not be lost.
   */
  dedupeKey?: string;
  maxAttempts?: number;
  /**
   * False when the caller starts the item itself once its transaction committed (`startNow`), so
   * no kick looks for it. Default true.
   */
  kick?: boolean;
}

/**
 * Write an item's row, or find the one its dedupe key already names (`fresh` false): a pending one
 * as it is; a running one marked to run once more when it ends, with this payload.
 */
export function insertItem(q: Queryable, now: number, kind: string, payload: unknown, opts: EnqueueOptions, defaultMaxAttempts = 5): { id: string; fresh: boolean } {
  if (opts.dedupeKey !== undefined) {
    const prior = q.select({ id: schedulerItems.id, state: schedulerItems.state }).from(schedulerItems).where(eq(schedulerItems.dedupeKey, opts.dedupeKey)).get();
    if (prior?.state === "pending") return { id: prior.id, fresh: false };
    if (prior?.state === "running") {
      q.update(schedulerItems).set({ rerun: 1, payload: JSON.stringify(payload ?? {}) }).where(eq(schedulerItems.id, prior.id)).run();
      return { id: prior.id, fresh: false };
    }
    if (prior) q.update(schedulerItems).set({ dedupeKey: null }).where(eq(schedulerItems.id, prior.id)).run();
  }
  const id = uuidv7(now);
  q.insert(schedulerItems)
    .values({
      id,
      kind,
      payload: JSON.stringify(payload ?? {}),
      runAt: opts.runAt ?? now,
      maxAttempts: opts.maxAttempts ?? defaultMaxAttempts,
      dedupeKey: opts.dedupeKey ?? null,
      createdAt: now,
    })
    .run();
  return { id, fresh: true };
}

/**
 * End a running item; false when it was not running (already ended). One enqueued again while it
 * ran (`rerun`) goes back to pending instead, due now, with fresh attempts.
 */
export function finishItemIn(q: Queryable, id: string, state: "done" | "failed", error: string | null, now: number): boolean {
  const again = q
    .update(schedulerItems)
    .set({ state: "pending", leasedUntil: null, lastError: error, runAt: now, attempts: 0, rerun: 0 })
    .where(and(eq(schedulerItems.id, id), eq(schedulerItems.state, "running"), eq(schedulerItems.rerun, 1)))
    .run() as unknown as { changes: number };
  if (again.changes > 0) return true;
  const res = q
    .update(schedulerItems)
    .set({ state, leasedUntil: null, lastError: error, finishedAt: now, dedupeKey: null })
    .where(and(eq(schedulerItems.id, id), eq(schedulerItems.state, "running")))
    .run() as unknown as { changes: number };
  return res.changes > 0;
}
