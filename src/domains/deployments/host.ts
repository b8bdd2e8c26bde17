/**
 * Rollouts reported to the code host (docs/decisions/0291): when a rollout starts, a deployment
 * of its commit to its environment is created on the service's repository with an `in_progress`
 * status; when it ends, a status says how (`success`, `failure` for a rollback or a failed
 * start, `error` for ops's own failure). The host's ids land on the deployment row
 * (`host_deployment_id`, `host_status_id`), which the build page shows too.
 *
 * Only a rollout of a known commit (`commit_sha`) of a service that builds from a connected
 * source is reported: a hand-deployed image without a commit names nothing on the host. Reports
 * are best effort like a build's (builds/host.ts): each call is bounded, a failure is logged and
 * never fails or stalls the rollout past the bound, and the reports of one rollout are sent in
 * order. A rollout started again after a restart reuses its host deployment.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { withDeadline } from "../../core/deadline";
import { specOf, type ServiceSpec } from "../resources/service";
import { findSourceOfRepo, hostOf, repoRefOf, type DeploymentStatusInput, type RepoRef } from "../sources/service";
import { deployments, type DeploymentRow } from "./tables";
import { deploymentById, isInFlight, shortDigest } from "./rows";
import { serviceRow, type ServiceAddress } from "./live";
import { serviceLink } from "./record";

const CHAINS = "deployments.host-chains";
/** Longest a rollout waits for one report. */
const REPORT_TIMEOUT_MS = 10_000;

const SHA = /^[0-9a-f]{40}$/;

function repoOf(core: Core, addr: ServiceAddress): RepoRef | null {
  const svc = serviceRow(core, addr);
  const repo = svc ? specOf<ServiceSpec>(svc).source?.repo : null;
  const source = repo ? findSourceOfRepo(core, addr.project.id, repo) : null;
  return source ? repoRefOf(source) : null;
}

/** The deployment status that says where the rollout is. */
export function hostState(row: Pick<DeploymentRow, "rollout" | "failureKind">): DeploymentStatusInput["state"] {
  if (isInFlight(row.rollout)) return "in_progress";
  if (row.rollout === "healthy") return "success";
  return row.failureKind === "internal" ? "error" : "failure";
}

function describe(row: DeploymentRow): string {
  const what = `${row.trigger === "rollback" ? "Rollback" : "Rollout"} of ${shortDigest(row.imageDigest)}`;
  const how = isInFlight(row.rollout) ? "started" : (row.rolloutNote ?? row.rollout);
  return `${what}: ${how}`.slice(0, 140);
}

async function send(core: Core, addr: ServiceAddress, id: number, sent: Map<number, string>): Promise<void> {
  const row = deploymentById(core.db, id);
  if (!row || !row.commitSha || !SHA.test(row.commitSha)) return;
  const host = hostOf(core);
  if (!host.configured()) return;
  const ref = repoOf(core, addr);
  if (!ref) return;
  const state = hostState(row);
  if (sent.get(id) === state) return;
  try {
    let hostId = row.hostDeploymentId;
    if (hostId === null) {
      hostId = await withDeadline(host.createDeployment(ref, { sha: row.commitSha, environment: row.environment, description: `${row.service}: ${shortDigest(row.imageDigest)}` }), REPORT_TIMEOUT_MS);
      core.db.update(deployments).set({ hostDeploymentId: hostId }).where(eq(deployments.id, id)).run();
    }
    const statusId = await withDeadline(host.createDeploymentStatus(ref, hostId, { state, description: describe(row), logUrl: `${core.config.publicUrl}${serviceLink(addr)}` }), REPORT_TIMEOUT_MS);
    core.db.update(deployments).set({ hostStatusId: statusId }).where(eq(deployments.id, id)).run();
    sent.set(id, state);
  } catch (e) {
    core.log.warn("rollout not reported to the code host", { deployment: id, rollout: row.rollout, err: (e as Error).message });
  }
}

/**
 * Report the rollout's current state to the code host. Resolves once this report (and those
 * before it for the rollout) is sent or given up; never throws.
 */
export function reportRollout(core: Core, addr: ServiceAddress, id: number): Promise<void> {
  let chains = core.locals.get(CHAINS) as { tails: Map<number, Promise<void>>; sent: Map<number, string> } | undefined;
  if (!chains) core.locals.set(CHAINS, (chains = { tails: new Map(), sent: new Map() }));
  const { tails, sent } = chains;
  const next = (tails.get(id) ?? Promise.resolve()).then(() => send(core, addr, id, sent)).catch((e) => core.log.warn("rollout host report failed", { deployment: id, err: (e as Error).message }));
  tails.set(id, next);
  void next.finally(() => {
    if (tails.get(id) !== next) return;
    tails.delete(id);
    if (!isInFlight(deploymentById(core.db, id)?.rollout ?? "healthy")) sent.delete(id);
  });
  return next;
}
