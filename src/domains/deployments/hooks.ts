/**
 * How resource changes reach running services:
 * - a service's `replicas` changes → reconcile (0 stops it); its `command`, `env_group`, `port` or
 *   `limits` change → a `restart` rollout of the current digest (after the one in flight, if any);
 * - a service is deleted → its replicas stop and its routes go;
 * - a domain is added, changed or removed → the ingress routes of the services it names;
 * - a secret group is rotated → a `restart` rollout of every running service that mounts it
 *   (`resources.service-restarter`, which fills `rolled`);
 * - observing a service reads its live status (`resources.service-observer`).
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { SYSTEM_ACTOR } from "../../core/audit";
import { extendKind, specOf, type ResourceRow, type ServiceSpec } from "../resources/service";
import { serviceRuns } from "./tables";
import { inFlightDeployment, serviceRun } from "./rows";
import { insertRollout } from "./record";
import { enqueueReconcile } from "./reconcile";
import { liveOf, refreshRoutes, type ServiceAddress } from "./live";
import { observeService, syncStatusComponent, writeServiceStatus } from "./status";

type RestartOutcome = { rolled: true } | { rolled: false; reason: string };

/** Spec fields a running replica was started with: changing one needs new replicas. */
const RESTART_FIELDS = ["command", "env_group", "port", "limits"] as const;

function addressOf(core: Core, row: ResourceRow): ServiceAddress | null {
  const project = core.access.findProjectById(row.projectId);
  if (!project || row.environment === null) return null;
  return { project, environment: row.environment, service: row.name };
}

/**
 * Restart the service on its current digest inside `t`: a `restart` rollout now, or after the
 * rollout in flight. Not rolled when it never ran.
 */
export function requestRestart(core: Core, t: Tx, addr: ServiceAddress, reason: string): RestartOutcome {
  const run = serviceRun(t, addr.project.id, addr.environment, addr.service);
  if (!run) return { rolled: false, reason: "not deployed yet: it mounts the new version when it is first deployed" };
  if (run.replicas === 0) return { rolled: false, reason: "scaled to zero (replicas: 0); it mounts the new version when it starts" };
  if (inFlightDeployment(t, addr.project.id, addr.environment, addr.service)) {
    t.update(serviceRuns).set({ restartPending: reason }).where(and(eq(serviceRuns.projectId, addr.project.id), eq(serviceRuns.environment, addr.environment), eq(serviceRuns.service, addr.service))).run();
    return { rolled: true };
  }
  insertRollout(core, t, { addr, digest: run.currentDigest, trigger: "restart", message: `Restart: ${reason}`, author: "system", actor: SYSTEM_ACTOR, createdBy: "system", note: reason });
  return { rolled: true };
}

/** After the write commits (the tx is synchronous, so a microtask runs after it). */
function afterCommit(core: Core, fn: () => void): void {
  queueMicrotask(() => {
    try {
      fn();
    } catch (e) {
      core.log.warn("could not apply a resource change to the running services", { err: (e as Error).message });
    }
  });
}

/** Re-read the ingress routes of the services a domain names (only services that run or ran). */
function refreshServices(core: Core, row: ResourceRow, names: Array<string | undefined>): void {
  const project = core.access.findProjectById(row.projectId);
  if (!project || row.environment === null) return;
  for (const service of new Set(names.filter((n): n is string => !!n))) {
    const addr = { project, environment: row.environment, service };
    if (liveOf(core, addr) || serviceRun(core.db, project.id, row.environment, service)) refreshRoutes(core, addr);
  }
}

export function installResourceHooks(core: Core): void {
  extendKind(core, "service", {
    afterWrite(c, t, row, ctx) {
      const addr = addressOf(c, row);
      if (!addr || !ctx.prev) return;
      const run = serviceRun(t, addr.project.id, addr.environment, addr.service);
      if (!run) return;
      const before = specOf<ServiceSpec>(ctx.prev);
      const after = ctx.spec as ServiceSpec;
      const changed = RESTART_FIELDS.filter((f) => JSON.stringify(before[f] ?? null) !== JSON.stringify(after[f] ?? null));
      if (changed.length > 0 && (after.replicas ?? 1) > 0 && run.replicas > 0) requestRestart(c, t, addr, `the service's ${changed.join(", ")} changed`);
      if ((after.replicas ?? 1) !== run.replicas) enqueueReconcile(c, t, { projectId: addr.project.id, environment: addr.environment, service: addr.service });
      afterCommit(c, () => {
        writeServiceStatus(c, addr);
        syncStatusComponent(c, addr);
      });
    },
    refuseDelete(_c, q, row) {
      const flight = row.environment === null ? null : inFlightDeployment(q, row.projectId, row.environment, row.name);
      return flight ? `Deployment ${flight.id} of "${row.name}" is ${flight.rollout}; wait for its verdict before deleting the service.` : null;
    },
    onDelete(c, t, row) {
      if (row.environment !== null) enqueueReconcile(c, t, { projectId: row.projectId, environment: row.environment, service: row.name });
    },
  });
  extendKind(core, "domain", {
    afterWrite(c, _t, row, ctx) {
      const before = ctx.prev ? specOf<{ service?: string }>(ctx.prev).service : undefined;
      afterCommit(c, () => refreshServices(c, row, [before, (ctx.spec as { service?: string }).service]));
    },
    onDelete(c, _t, row) {
      afterCommit(c, () => refreshServices(c, row, [specOf<{ service?: string }>(row).service]));
    },
  });
  core.locals.set("resources.service-restarter", (c: Core, t: Tx, service: ResourceRow, note: string): RestartOutcome => {
    const addr = addressOf(c, service);
    if (!addr) return { rolled: false, reason: "not a service of an environment" };
    return requestRestart(c, t, addr, note);
  });
  core.locals.set("resources.service-observer", async (c: Core, row: ResourceRow) => {
    const addr = addressOf(c, row);
    if (!addr) return { state: "pending" as const, summary: "not deployed", detail: {} };
    return observeService(c, addr.project, row);
  });
}
