/**
 * The deployments domain module: deploy, rollback and the timeline; the rollout state machine and
 * the reconcile of services on the scheduler; the runtime's output and state sinks; the resource
 * hooks that carry service, domain and secret-group changes to what runs; and, under `ops serve`,
 * every service that was running started again.
 * Decisions: docs/decisions/0417-deployments.md and 0408-delivery-loop-shared-pieces.md.
 */
import type { DomainModule } from "../../core/core";
import { runtimeOf, takeOnEngineReplicas } from "../../adapters/runtime";
import { MASKED_OF_LOCAL, type MaskedOf } from "../../adapters/runtime/engines";
import { deploymentsRoutes } from "./routes";
import { ROLLOUT_ITEM } from "./record";
import { runRollout } from "./rollout";
import { RECONCILE_ITEM, runReconcile, type ServiceIds } from "./reconcile";
import { HEALTH_TASK, probeServices, recordProbe } from "./health";
import { installResourceHooks } from "./hooks";
import { recoverAfterRestart } from "./recover";
import { flushServiceLogs, keepLine, ringStopped } from "./logs";
import { scheduleStatusWrite } from "./status";
import { maskedOfReplica, rerouteIfMoved } from "./live";
import { startIngressMetrics } from "./ingress-metrics";
import { installBuildHandOff, settleBuildVerdicts } from "./builds";
import { installImagePlacement } from "../registries/service";
import { environmentsRunning } from "./service";

export const deploymentsModule: DomainModule = {
  name: "deployments",
  install(core) {
    core.scheduler.defineItem(ROLLOUT_ITEM, (payload) => runRollout(core, payload as { deployment: number; token: string }), { maxAttempts: 1 });
    core.scheduler.defineItem(RECONCILE_ITEM, (payload) => runReconcile(core, payload as ServiceIds), { maxAttempts: 3, backoffMs: (a) => 5000 * a });
    core.scheduler.defineTask(HEALTH_TASK, "* * * * *", () => probeServices(core));
    installResourceHooks(core);
    installBuildHandOff(core);
    installImagePlacement(core, environmentsRunning);
    const runtime = runtimeOf(core, {
      onLine(id, stream, line, meta) {
        // Lines the data plane kept while ops was away carry their replica's labels and time.
        keepLine(core, id, meta?.labels ?? runtime.status(id)?.labels, stream, line, meta?.at);
      },
      stored: () => flushServiceLogs(core),
      onState(status) {
        if (status.state === "stopped") ringStopped(core, status.id);
        const project = status.labels.project ? core.access.findProject(status.labels.project) : null;
        if (!project || !status.labels.environment || !status.labels.service) return;
        const addr = { project, environment: status.labels.environment, service: status.labels.service };
        scheduleStatusWrite(core, addr);
        // An engine that moved a replica or lost its node: route where its replicas run now.
        if (status.node !== undefined || status.state === "running") rerouteIfMoved(core, addr, status);
        // Back after a crash: probe now rather than at the next minute, so health and the status page follow.
        if (status.state === "running" && status.restarts > 0) void recordProbe(core, addr).catch((e) => core.log.warn("probe after a restart failed", { err: (e as Error).message }));
      },
    });
    // After the replicas stopped (their last lines), before the log store's writer closes.
    core.onClose.push(() => flushServiceLogs(core));
  },
  async onServe(core) {
    // A kept Swarm service's secret values, for masking its output: its service's as they are now.
    core.locals.set(MASKED_OF_LOCAL, ((labels) => maskedOfReplica(core, labels)) satisfies MaskedOf);
    await takeOnEngineReplicas(core);
    recoverAfterRestart(core);
    // Request metrics per service from the ingress (ingress-metrics.ts).
    startIngressMetrics(core);
    settleBuildVerdicts(core);
  },
  routes: deploymentsRoutes,
};
