/**
 * Recording rollouts: a deployment row in `queued` with its scheduler item, committed with its
 * audit row, or a `refused` row (with a `deployment.refused` notice) when ops will not run the
 * digest. At most one rollout per service is in flight: the check and the insert share one
 * transaction, and a partial unique index backs it.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx, type Tx } from "../../core/db/client";
import { auditAllowed, writeAudit, type AuditActor } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { notify } from "../notifications/service";
import { deployments, type DeploymentRow } from "./tables";
import { inFlightDeployment, repositoryOf, serviceRun, shortDigest } from "./rows";
import type { ServiceAddress } from "./live";

export const ROLLOUT_ITEM = "deployments.rollout";

export type Trigger = "manual" | "build" | "rollback" | "restart";

export interface RolloutRequest {
  addr: ServiceAddress;
  digest: string;
  trigger: Trigger;
  buildId?: number | null;
  commitSha?: string | null;
  message: string;
  author: string;
  /** Who asked (audit) and how the deployment names them (`created_by`). */
  actor: AuditActor;
  createdBy: string;
  note?: string;
}

export function auditTargetOf(addr: { service: string }): string {
  return `service:${addr.service}`;
}

/** Hand the rollout to the scheduler (a new token makes any older item for it a no-op). */
export function enqueueRollout(core: Core, t: Tx, deploymentId: number): void {
  const token = uuidv7(core.clock.now());
  t.update(deployments).set({ runToken: token }).where(eq(deployments.id, deploymentId)).run();
  core.scheduler.enqueue(t, ROLLOUT_ITEM, { deployment: deploymentId, token }, { maxAttempts: 1 });
}

/** 409 naming the rollout in flight for the service, if one is. */
export function assertNoRolloutInFlight(t: Tx | Core["db"], addr: ServiceAddress): void {
  const live = inFlightDeployment(t, addr.project.id, addr.environment, addr.service);
  if (live) throw new OpsError("conflict", `Deployment ${live.id} of ${addr.service} is ${live.rollout}; wait for its verdict before another rollout.`, { deployment: live.id, rollout: live.rollout });
}

/** The columns every deployment row of `req` has. */
function rowValues(core: Core, t: Tx, req: RolloutRequest) {
  const { addr } = req;
  const run = serviceRun(t, addr.project.id, addr.environment, addr.service);
  return {
    projectId: addr.project.id,
    environment: addr.environment,
    service: addr.service,
    repository: repositoryOf(addr),
    imageDigest: req.digest,
    previousDigest: run?.currentDigest ?? null,
    buildId: req.buildId ?? null,
    commitSha: req.commitSha ?? null,
    message: req.message,
    author: req.author,
    trigger: req.trigger,
    createdAt: core.clock.now(),
    createdBy: req.createdBy,
  };
}

/** Insert the deployment (`queued`) and its item inside `t`; 409 when a rollout is in flight. */
export function insertRollout(core: Core, t: Tx, req: RolloutRequest): DeploymentRow {
  const { addr } = req;
  assertNoRolloutInFlight(t, addr);
  const row = t
    .insert(deployments)
    .values({ ...rowValues(core, t, req), rollout: "queued", rolloutNote: req.note ?? "waiting for the scheduler", inFlight: 1 })
    .returning()
    .get();
  enqueueRollout(core, t, row.id);
  auditAllowed(core, t, req.actor, "deployments.deploy", auditTargetOf(addr), { project: addr.project.slug, environment: addr.environment }, { deployment: row.id, digest: req.digest, trigger: req.trigger, build: req.buildId ?? null });
  return row;
}

/** Record a rollout in its own transaction. */
export function recordRollout(core: Core, req: RolloutRequest): DeploymentRow {
  return tx(core.db, (t) => insertRollout(core, t, req));
}

/**
 * Record that ops refused to run `digest` (not signed by the estate key, a build whose rollout
 * could not start): a finished `refused` row, a `deployment.refused` notice, an audit row.
 */
export function recordRefusal(core: Core, req: RolloutRequest, reason: string): DeploymentRow {
  const { addr } = req;
  return tx(core.db, (t) => {
    const now = core.clock.now();
    const row = t
      .insert(deployments)
      .values({ ...rowValues(core, t, req), rollout: "refused", rolloutNote: reason, failureKind: "deploy", inFlight: null, finishedAt: now })
      .returning()
      .get();
    notify(core, t, {
      kind: "deployment.refused",
      projectId: addr.project.id,
      params: { project: addr.project.slug, environment: addr.environment, service: addr.service, digest: shortDigest(req.digest), deployment: row.id },
      link: serviceLink(addr),
    });
    writeAudit(core, t, {
      actor: req.actor.actor,
      operatorId: req.actor.operatorId,
      via: req.actor.via,
      ip: req.actor.ip,
      action: "deployments.deploy",
      target: auditTargetOf(addr),
      outcome: "denied",
      reason: reason.slice(0, 300),
      project: addr.project.slug,
      environment: addr.environment,
      context: { ...req.actor.context, deployment: row.id, digest: req.digest },
    });
    return row;
  });
}

/** The console page of a service. */
export function serviceLink(addr: { project: { slug: string }; environment: string; service: string }): string {
  return `/projects/${addr.project.slug}/deployments/${addr.service}?environment=${encodeURIComponent(addr.environment)}`;
}
