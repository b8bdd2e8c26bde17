/**
 * The timeline (`GET /deployments`): what happened to a project's services in one environment,
 * newest first — builds on their way to an image and the rollouts of digests — one row each, a
 * build and the rollout it started folded into one row. `state` is the spec's vocabulary;
 * `state_text` says it in a sentence (see docs/decisions/0417-deployments.md).
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { iso } from "../../core/clock";
import { deployments, type DeploymentRow } from "./tables";
import { assertEnvironment, shortDigest, timelineState, toDeploymentSummary } from "./rows";
import { timelineBuilds, timelineFailureKind, type TimelineBuild } from "./builds";
import type { TimelineRow } from "./model";

const ROLLOUT_TEXT: Record<string, string> = {
  queued: "Queued",
  starting: "Deploying",
  releasing: "Deploying",
  probing: "Deploying",
  switching: "Deploying",
  draining: "Deploying",
  healthy: "Healthy",
  unhealthy: "Unhealthy",
  rolling_back: "Rolling back",
  rolled_back: "Rolled back",
  failed: "Failed",
  refused: "Refused",
};

const TRIGGER_TEXT: Record<string, string> = { manual: "deployed by hand", build: "deployed by its build", rollback: "rollback", restart: "restart" };

/** The sentence of a rollout: its phase, what it is doing or how it ended. */
export function rolloutText(r: DeploymentRow): string {
  const label = ROLLOUT_TEXT[r.rollout] ?? r.rollout;
  const what = `${shortDigest(r.imageDigest)} (${TRIGGER_TEXT[r.trigger] ?? r.trigger})`;
  return r.rolloutNote ? `${label}: ${r.rolloutNote}` : `${label}: ${what}`;
}

function deploymentRow(r: DeploymentRow, build: TimelineBuild | null): TimelineRow {
  return {
    at: iso(r.createdAt),
    author: r.author,
    build: build?.summary ?? null,
    commit: r.commitSha ?? r.imageDigest,
    deployment: toDeploymentSummary(r),
    failure_kind: timelineFailureKind(r.failureKind),
    message: r.message,
    service: r.service,
    state: timelineState(r.rollout),
    state_text: rolloutText(r),
  };
}

/** GET /projects/{slug}/deployments: newest first, at most `limit` rows. */
export function listTimeline(core: Core, project: ProjectRef, environment: string, service: string | null, limit: number): TimelineRow[] {
  assertEnvironment(project, environment);
  const where = [eq(deployments.projectId, project.id), eq(deployments.environment, environment)];
  if (service) where.push(eq(deployments.service, service));
  const rows = core.db.select().from(deployments).where(and(...where)).orderBy(desc(deployments.createdAt), desc(deployments.id)).limit(limit).all();
  const builds = timelineBuilds(core, project, environment, service, limit);
  const byBuild = new Map(builds.map((b) => [b.summary.id, b]));
  const folded = new Set<number>();
  const out: Array<{ at: number; id: number; row: TimelineRow }> = [];
  for (const r of rows) {
    // A build's own rollout is folded into its row; a later deploy of the same build by hand is a
    // row of its own that names the build. Either way the row stands where its `at` (the
    // rollout's time) puts it, so the timeline reads newest first by `at`.
    const build = r.buildId !== null ? (byBuild.get(r.buildId) ?? null) : null;
    if (build !== null && r.trigger === "build") folded.add(build.summary.id);
    out.push({ at: r.createdAt, id: r.id, row: deploymentRow(r, build) });
  }
  for (const b of builds) if (!folded.has(b.summary.id)) out.push({ at: b.queuedAt, id: 0, row: b.row });
  out.sort((a, b) => b.at - a.at || b.id - a.id);
  return out.slice(0, limit).map((o) => o.row);
}
