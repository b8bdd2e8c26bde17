/**
 * `ops serve` start-up: replicas are children of ops and died with the previous process, so
 * every service that was running is started again with its current digest (a reconcile each),
 * and every rollout that was in flight starts again from `queued` under a new token (the old
 * process's scheduler item, still leased, then does nothing when its lease runs out).
 */
import { eq, isNotNull, gt } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { deployments, serviceRuns } from "./tables";
import { enqueueRollout } from "./record";
import { enqueueReconcile } from "./reconcile";

export function recoverAfterRestart(core: Core): { services: number; rollouts: number } {
  const runs = core.db.select().from(serviceRuns).where(gt(serviceRuns.replicas, 0)).all();
  const flying = core.db.select().from(deployments).where(isNotNull(deployments.inFlight)).all();
  tx(core.db, (t) => {
    for (const r of runs) enqueueReconcile(core, t, { projectId: r.projectId, environment: r.environment, service: r.service });
    for (const d of flying) {
      t.update(deployments).set({ rollout: "queued", rolloutNote: `ops restarted during the rollout (it was ${d.rollout}); starting it again` }).where(eq(deployments.id, d.id)).run();
      enqueueRollout(core, t, d.id);
    }
  });
  if (runs.length + flying.length > 0) core.log.info("starting services again after a restart", { services: runs.length, rollouts: flying.map((d) => d.id) });
  return { services: runs.length, rollouts: flying.length };
}
