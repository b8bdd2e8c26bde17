/**
 * Row helpers of the deployments domain: the rollout vocabulary, lookups, and the JSON views.
 */
import { and, desc, eq, inArray, isNotNull } from "drizzle-orm";
import { parseFailureOutput, type FailedProcess } from "./failure-output";
import type { Core, ProjectRef } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { iso, isoOrNull } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { deployments, serviceRuns, type DeploymentRow, type ServiceRunRow } from "./tables";
import type { DeploymentResponse, DeploymentSummary, TimelineState } from "./model";

/** Phases of a rollout that is still in flight, in the order they come. */
export const IN_FLIGHT = ["queued", "starting", "releasing", "probing", "switching", "draining", "unhealthy", "rolling_back"] as const;
/** How a rollout ended. */
export const FINISHED = ["healthy", "rolled_back", "failed", "refused"] as const;
export type Rollout = (typeof IN_FLIGHT)[number] | (typeof FINISHED)[number];

export function isInFlight(rollout: string): boolean {
  return (IN_FLIGHT as readonly string[]).includes(rollout);
}

/** The timeline state of a deployment's rollout. */
export function timelineState(rollout: string): TimelineState {
  if (rollout === "healthy" || rollout === "unhealthy" || rollout === "rolling_back" || rollout === "rolled_back" || rollout === "failed" || rollout === "refused") return rollout;
  return "deploying";
}

/** A service as the deployments domain addresses it. */
export interface ServiceRef {
  project: ProjectRef;
  environment: string;
  service: string;
}

export function serviceKeyOf(ref: { project: { slug: string }; environment: string; service: string }): string {
  return `${ref.project.slug}/${ref.environment}/${ref.service}`;
}

export function repositoryOf(ref: { project: { slug: string }; service: string }): string {
  return `${ref.project.slug}/${ref.service}`;
}

/** The deployment in flight for a service, or null. */
export function inFlightDeployment(q: Queryable, projectId: string, environment: string, service: string): DeploymentRow | null {
  return (
    q
      .select()
      .from(deployments)
      .where(and(eq(deployments.projectId, projectId), eq(deployments.environment, environment), eq(deployments.service, service), isNotNull(deployments.inFlight)))
      .get() ?? null
  );
}

export function deploymentById(q: Queryable, id: number): DeploymentRow | null {
  return q.select().from(deployments).where(eq(deployments.id, id)).get() ?? null;
}

export function serviceRun(q: Queryable, projectId: string, environment: string, service: string): ServiceRunRow | null {
  return q.select().from(serviceRuns).where(and(eq(serviceRuns.projectId, projectId), eq(serviceRuns.environment, environment), eq(serviceRuns.service, service))).get() ?? null;
}

/** Digests that became healthy for a service, newest first (one entry per digest). */
export function healthyDigests(q: Queryable, projectId: string, environment: string, service: string): string[] {
  const rows = q
    .select({ digest: deployments.imageDigest })
    .from(deployments)
    .where(and(eq(deployments.projectId, projectId), eq(deployments.environment, environment), eq(deployments.service, service), eq(deployments.rollout, "healthy")))
    .orderBy(desc(deployments.id))
    .all();
  return [...new Set(rows.map((r) => r.digest))];
}

/** The newest deployment of `digest` to the service that carries a commit (for a rollback's message). */
export function newestOfDigest(q: Queryable, projectId: string, environment: string, service: string, digest: string): DeploymentRow | null {
  return (
    q
      .select()
      .from(deployments)
      .where(and(eq(deployments.projectId, projectId), eq(deployments.environment, environment), eq(deployments.service, service), eq(deployments.imageDigest, digest), inArray(deployments.rollout, ["healthy", "rolled_back"])))
      .orderBy(desc(deployments.id))
      .get() ?? null
  );
}

export function toDeploymentResponse(r: DeploymentRow, projectSlug: string): DeploymentResponse {
  return {
    author: r.author,
    build_id: r.buildId,
    commit_sha: r.commitSha,
    created_at: iso(r.createdAt),
    created_by: r.createdBy,
    environment: r.environment,
    finished_at: isoOrNull(r.finishedAt),
    host_deployment_id: r.hostDeploymentId,
    host_status_id: r.hostStatusId,
    id: r.id,
    image_digest: r.imageDigest,
    message: r.message,
    previous_digest: r.previousDigest,
    project: projectSlug,
    rollout: r.rollout,
    rollout_note: r.rolloutNote,
    ...failureOutputOf(r),
    service: r.service,
    trigger: r.trigger,
  };
}

export function toDeploymentSummary(r: DeploymentRow): DeploymentSummary {
  return {
    created_at: iso(r.createdAt),
    created_by: r.createdBy,
    finished_at: isoOrNull(r.finishedAt),
    id: r.id,
    image_digest: r.imageDigest,
    previous_digest: r.previousDigest,
    rollout: r.rollout,
    rollout_note: r.rolloutNote,
    ...failureOutputOf(r),
    trigger: r.trigger,
  };
}

/** `failure_output` when the rollout kept some (absent otherwise). */
function failureOutputOf(r: DeploymentRow): { failure_output?: FailedProcess[] } {
  const out = parseFailureOutput(r.failureOutput);
  return out ? { failure_output: out } : {};
}

/** A digest shortened for sentences: `sha256:0123456789ab`. */
export function shortDigest(digest: string): string {
  return digest.startsWith("sha256:") ? digest.slice(0, 19) : digest.slice(0, 12);
}

/** 404 unless the project has `environment`. */
export function assertEnvironment(project: ProjectRef, environment: string): void {
  if (!project.environments.includes(environment)) throw new OpsError("not_found", `No such environment "${environment}" in this project.`);
}
