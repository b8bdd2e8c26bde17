/**
 * Making the runtime match what a service should run, outside rollouts: after `ops serve`
 * starts (every service that was running runs again with the same digest), when `replicas`
 * changes (0 stops the service), and when a service is deleted. The scheduler item
 * `deployments.reconcile` does it for one service under the service's lock.
 *
 * A service brought back after a restart is routed even when its probe fails within the
 * deadline: nothing better exists to serve, and its status and health say what is wrong.
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { specOf, type ServiceSpec } from "../resources/service";
import { ingressOf } from "../../adapters/ingress";
import { runtimeOf } from "../../adapters/runtime";
import { serviceRuns } from "./tables";
import { serviceKeyOf, serviceRun, shortDigest } from "./rows";
import { imageFor, liveOf, routeTo, serviceEnv, serviceRow, setLive, startReplicas, stopReplicas, unroute, upstreamsOf, withServiceLock, type ServiceAddress } from "./live";
import { probeReplicas } from "./probe";
import { setHealth, syncStatusComponent, writeServiceStatus } from "./status";

export const RECONCILE_ITEM = "deployments.reconcile";
const DRAIN_MS = 30_000;

export interface ServiceIds {
  projectId: string;
  environment: string;
  service: string;
}

/** Queue a reconcile of one service (one pending per service). */
export function enqueueReconcile(core: Core, q: Queryable, s: ServiceIds): void {
  core.scheduler.enqueue(q, RECONCILE_ITEM, s, { dedupeKey: `${RECONCILE_ITEM}:${s.projectId}/${s.environment}/${s.service}`, maxAttempts: 3 });
}

/** Stop replicas after taking them out of the ingress and letting their requests finish. */
async function retire(core: Core, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await ingressOf(core).drained(upstreamsOf(core, ids), DRAIN_MS);
  await stopReplicas(core, ids);
}

/** Start `count` replicas of the current digest; probe them; returns their ids (started even when unhealthy). */
async function startCurrent(core: Core, addr: ServiceAddress, count: number): Promise<string[]> {
  const run = serviceRun(core.db, addr.project.id, addr.environment, addr.service)!;
  const svc = serviceRow(core, addr)!;
  const image = await imageFor(core, addr, run.currentDigest);
  const env = serviceEnv(core, addr, svc);
  const ids = (await startReplicas(core, addr, svc, run.currentDeploymentId, image, env, count)).map((s) => s.id);
  const path = specOf<ServiceSpec>(svc).health_check_path ?? null;
  const verdict = await probeReplicas(core, ids, path, core.config.deployHealthTimeoutSecs * 1000);
  if (verdict.ok) setHealth(core, addr, "up", `${shortDigest(run.currentDigest)} started again and healthy`);
  else setHealth(core, addr, "down", `${verdict.replica}: ${verdict.reason}`);
  return ids;
}

/** Bring the current digest back when nothing of the service runs (inside the service's lock). */
export async function restoreService(core: Core, addr: ServiceAddress): Promise<void> {
  const run = serviceRun(core.db, addr.project.id, addr.environment, addr.service);
  const svc = serviceRow(core, addr);
  if (!run || !svc || run.replicas === 0) return;
  const ids = await startCurrent(core, addr, run.replicas);
  routeTo(core, addr, ids);
  setLive(core, addr, run.currentDeploymentId, run.currentDigest, ids);
}

/** Make the runtime match the service's record and spec (inside the service's lock). */
export async function reconcile(core: Core, addr: ServiceAddress): Promise<void> {
  const svc = serviceRow(core, addr);
  const run = serviceRun(core.db, addr.project.id, addr.environment, addr.service);
  const live = liveOf(core, addr);
  const runtime = runtimeOf(core);
  const liveIds = (live?.replicaIds ?? []).filter((id) => runtime.status(id) !== null);
  const where = and(eq(serviceRuns.projectId, addr.project.id), eq(serviceRuns.environment, addr.environment), eq(serviceRuns.service, addr.service));
  if (!svc) {
    // Deleted: nothing of it runs or answers any more; its history stays in the timeline.
    unroute(core, addr);
    setLive(core, addr, 0, "", []);
    await retire(core, liveIds);
    if (run) core.db.delete(serviceRuns).where(where).run();
    syncStatusComponent(core, addr);
    return;
  }
  if (!run) return;
  const wanted = specOf<ServiceSpec>(svc).replicas ?? 1;
  if (run.replicas !== wanted) core.db.update(serviceRuns).set({ replicas: wanted, updatedAt: core.clock.now() }).where(where).run();
  if (wanted === 0) {
    routeTo(core, addr, []);
    setLive(core, addr, run.currentDeploymentId, run.currentDigest, []);
    await retire(core, liveIds);
  } else if (liveIds.length === 0) {
    await restoreService(core, addr);
  } else if (liveIds.length < wanted) {
    const more = await startCurrent(core, addr, wanted - liveIds.length);
    const all = [...liveIds, ...more];
    routeTo(core, addr, all);
    setLive(core, addr, run.currentDeploymentId, run.currentDigest, all);
  } else if (liveIds.length > wanted) {
    const keep = liveIds.slice(0, wanted);
    routeTo(core, addr, keep);
    setLive(core, addr, run.currentDeploymentId, run.currentDigest, keep);
    await retire(core, liveIds.slice(wanted));
  } else {
    routeTo(core, addr, liveIds);
  }
  writeServiceStatus(core, addr);
  syncStatusComponent(core, addr);
}

/** The scheduler item's handler. */
export async function runReconcile(core: Core, payload: ServiceIds): Promise<void> {
  const project = core.access.findProjectById(payload.projectId);
  if (!project) return;
  const addr: ServiceAddress = { project, environment: payload.environment, service: payload.service };
  await withServiceLock(core, serviceKeyOf(addr), async () => {
    try {
      await reconcile(core, addr);
    } catch (e) {
      // Said in the service's status; the scheduler tries again with backoff.
      setHealth(core, addr, "down", `could not start: ${(e as Error).message}`);
      writeServiceStatus(core, addr);
      throw e;
    }
  });
}
