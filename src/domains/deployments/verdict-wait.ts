/**
 * Waiting for a rollout's verdict (the MCP deploy and rollback tools answer with it, as `ops deploy`
 * follows it): resolves with the deployment once its rollout ends (healthy, rolled back, failed,
 * with `failure_output` when it kept some), or null after `ms`. Only a running scheduler moves a
 * rollout, so without one (a command, a test that drives the scheduler by hand) it does not wait.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { onRolloutFinished } from "./rollout";
import { toDeploymentResponse } from "./rows";
import { deployments, type DeploymentRow } from "./tables";
import type { DeploymentResponse } from "./model";

const WAITERS = "deployments.verdict-waiters";

function waitersOf(core: Core): Map<number, Array<(row: DeploymentRow) => void>> {
  let m = core.locals.get(WAITERS) as Map<number, Array<(row: DeploymentRow) => void>> | undefined;
  if (!m) {
    const waiters = new Map<number, Array<(row: DeploymentRow) => void>>();
    core.locals.set(WAITERS, (m = waiters));
    onRolloutFinished(core, (_c, row) => {
      for (const done of waiters.get(row.id) ?? []) done(row);
      waiters.delete(row.id);
    });
  }
  return m;
}

export async function rolloutVerdict(core: Core, deploymentId: number, projectSlug: string, ms: number): Promise<DeploymentResponse | null> {
  if (!core.scheduler.started) return null;
  const waiters = waitersOf(core);
  const ended = new Promise<DeploymentRow | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    const done = (row: DeploymentRow) => {
      clearTimeout(timer);
      resolve(row);
    };
    waiters.set(deploymentId, [...(waiters.get(deploymentId) ?? []), done]);
  });
  // It may have ended before the waiter was there.
  const now = core.db.select().from(deployments).where(eq(deployments.id, deploymentId)).get();
  if (now && now.inFlight === null) {
    const list = waiters.get(deploymentId) ?? [];
    for (const done of list) done(now);
    waiters.delete(deploymentId);
  }
  const row = await ended;
  if (!row) return null;
  // The listener's row is the one the rollout wrote last; read it again for what came after (the code host's report).
  const fresh = core.db.select().from(deployments).where(eq(deployments.id, deploymentId)).get() ?? row;
  return toDeploymentResponse(fresh, projectSlug);
}
