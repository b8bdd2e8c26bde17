/**
 * `ops serve` start-up. After `ops restart` the runtime has taken on the replicas the previous
 * image handed over (docs/decisions/0390): those of each service's current deployment serve it
 * again at once (the live map and the ingress's table are rebuilt from them), and any other is
 * stopped. Every service that was running then gets a reconcile, which starts what is missing
 * (all of it after a cold start: replicas are children of ops and died with the previous
 * process), and every rollout that was in flight starts again from `queued` under a new token (the
 * old process's scheduler item, still leased, then does nothing when its lease runs out).
 */
import { eq, isNotNull, gt } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { adoptHandedOver, runtimeOf } from "../../adapters/runtime";
import { deployments, serviceRuns } from "./tables";
import { enqueueRollout } from "./record";
import { enqueueReconcile } from "./reconcile";
import { noteReplicaSeq, routeTo, setLive } from "./live";

type RunRow = typeof serviceRuns.$inferSelect;

/** Serve each service with its kept replicas of the current deployment; stop the other kept ones. Returns how many were kept. */
function keepAdopted(core: Core, runs: RunRow[]): number {
  adoptHandedOver(core);
  const runtime = runtimeOf(core);
  const adopted = runtime.list();
  if (adopted.length === 0) return 0;
  const used = new Set<string>();
  for (const run of runs) {
    const project = core.access.findProjectById(run.projectId);
    if (!project) continue;
    const ids = adopted
      .filter((r) => r.labels.project_id === run.projectId && r.labels.environment === run.environment && r.labels.service === run.service && r.labels.deployment === String(run.currentDeploymentId))
      .slice(0, run.replicas)
      .map((r) => r.id);
    if (ids.length === 0) continue;
    for (const id of ids) used.add(id);
    const addr = { project, environment: run.environment, service: run.service };
    setLive(core, addr, run.currentDeploymentId, run.currentDigest, ids);
    routeTo(core, addr, ids);
  }
  for (const r of adopted) {
    noteReplicaSeq(core, r.id);
    if (used.has(r.id)) continue;
    core.log.info("stopping a kept replica that is not of its service's current deployment", { replica: r.id });
    void runtime.stop(r.id).catch((e) => core.log.warn("could not stop a kept replica", { replica: r.id, err: (e as Error).message }));
  }
  return used.size;
}

export function recoverAfterRestart(core: Core): { services: number; rollouts: number; kept: number } {
  const runs = core.db.select().from(serviceRuns).where(gt(serviceRuns.replicas, 0)).all();
  const flying = core.db.select().from(deployments).where(isNotNull(deployments.inFlight)).all();
  const kept = keepAdopted(core, runs);
  tx(core.db, (t) => {
    for (const r of runs) enqueueReconcile(core, t, { projectId: r.projectId, environment: r.environment, service: r.service });
    for (const d of flying) {
      t.update(deployments).set({ rollout: "queued", rolloutNote: `ops restarted during the rollout (it was ${d.rollout}); starting it again` }).where(eq(deployments.id, d.id)).run();
      enqueueRollout(core, t, d.id);
    }
  });
  if (runs.length + flying.length > 0) core.log.info("starting services again after a restart", { services: runs.length, replicas_kept: kept, rollouts: flying.map((d) => d.id) });
  return { services: runs.length, rollouts: flying.length, kept };
}
