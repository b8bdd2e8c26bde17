/**
 * The deployments domain's public surface: other domains import only this file.
 */
import { and, eq, gt } from "drizzle-orm";
import type { Core } from "../../core/core";
import { serviceRuns } from "./tables";

export { deployService, rollbackService } from "./deploy";
export { listTimeline } from "./timeline";
export { serviceLogLines, type ServiceLogLine } from "./logs";
export { isErrorHead } from "./log-records";
export { observeService } from "./status";
export { nodesReport } from "./nodes-report";
export { onRolloutFinished, type Verdict } from "./rollout";
export { rolloutVerdict } from "./verdict-wait";

/**
 * The environments of a project where `service` runs `digest` now (replicas above zero), in the
 * project's environment order: what `ImageRepoSummary.environments` says.
 */
export function environmentsRunning(core: Core, projectId: string, service: string, digest: string): string[] {
  const rows = core.db
    .select({ environment: serviceRuns.environment })
    .from(serviceRuns)
    .where(and(eq(serviceRuns.projectId, projectId), eq(serviceRuns.service, service), eq(serviceRuns.currentDigest, digest), gt(serviceRuns.replicas, 0)))
    .all();
  const found = new Set(rows.map((r) => r.environment));
  const order = core.access.findProjectById(projectId)?.environments ?? [];
  return [...order.filter((e) => found.has(e)), ...[...found].filter((e) => !order.includes(e)).sort()];
}
