/**
 * The builds domain's surface: the reads behind the routes, and what other domains use —
 * deployments through the hand-off of deployer.ts (`installBuildDeployer`, `recordBuildVerdict`,
 * `getBuildRow`, `buildBetweenDeployingAndVerdict`, `listBuildsForTimeline`, `toBuildResponse`) and
 * the check of an image's signature before it is deployed (`verifyImageSignature`).
 * Other domains import only this file.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { builds } from "./tables";
import { listBuildRows, requireBuild, toBuildResponse, type BuildRow } from "./rows";
import { readLog } from "./log";
import { buildDeployer } from "./deployer";
import type { BuildDetailResponse, BuildResponse, LogResponse } from "./model";

export { toBuildResponse, getBuildRow, type BuildRow } from "./rows";
export { installBuildDeployer, type BuildDeployer, type DeployableBuild } from "./deployer";
export { recordBuildVerdict, type BuildVerdict } from "./pipeline";
export { createBuild, retryBuild, cancelBuild, onPush } from "./queue";
export { dispatchBuilds } from "./dispatch";
export { verifyImageSignature, type SignatureCheck } from "./signing";
export type { BuildResponse, BuildDetailResponse, LogResponse, DeploymentOfBuild } from "./model";

/** GET …/builds: one environment's builds (optionally one service's), newest first; without a service, the project's publish builds too. */
export function listBuilds(core: Core, project: ProjectRef, environment: string, service: string | null, limit: number): BuildResponse[] {
  return listBuildRows(core.db, project.id, environment, service, limit).map(toBuildResponse);
}

/** GET …/builds/{id}: the build, its host ids, timings and its rollout (when deployments recorded one). */
export function buildDetail(core: Core, project: ProjectRef, id: number): BuildDetailResponse {
  const row = requireBuild(core, project.id, id);
  const build = toBuildResponse(row);
  const deployment = buildDeployer(core)?.deploymentOf?.(core, row.id) ?? null;
  return {
    build,
    deployment,
    host: { check_run_id: row.hostCheckRunId, deployment_id: deployment?.host_deployment_id ?? null, status_id: row.hostStatusId },
    timings: build.step_timings,
  };
}

/** GET …/builds/{id}/log: one page after `after`. */
export function buildLog(core: Core, project: ProjectRef, id: number, after: number, limit: number): LogResponse {
  return readLog(core, requireBuild(core, project.id, id), after, limit);
}

/**
 * The environment a build of the project runs in (for the routes' permission scope), or null: no
 * such build, or a publish build, which lives in no environment (evaluated without environment
 * policies, as project-level routes are).
 */
export function environmentOfBuild(core: Core, projectId: string, id: number): string | null {
  if (!Number.isSafeInteger(id)) return null;
  const row = core.db.select({ environment: builds.environment, kind: builds.kind }).from(builds).where(and(eq(builds.id, id), eq(builds.projectId, projectId))).get();
  return row && row.kind === "image" ? row.environment : null;
}

/**
 * The build of a service between `deploying` and its verdict, or null: while there is one, a
 * deploy or rollback by hand is refused (409). `project` is the slug.
 */
export function buildBetweenDeployingAndVerdict(core: Core, project: string, environment: string, service: string): BuildRow | null {
  const ref = core.access.findProject(project);
  if (!ref) return null;
  return (
    core.db
      .select()
      .from(builds)
      .where(and(eq(builds.projectId, ref.id), eq(builds.environment, environment), eq(builds.service, service), eq(builds.status, "deploying")))
      .orderBy(desc(builds.id))
      .get() ?? null
  );
}

/** Image builds for the deployment timeline, newest first, with every BuildResponse field. `project` is the slug. */
export function listBuildsForTimeline(core: Core, project: string, environment: string, service: string | null, limit: number): BuildResponse[] {
  const ref = core.access.findProject(project);
  if (!ref) return [];
  return listBuildRows(core.db, ref.id, environment, service, limit, true).map(toBuildResponse);
}
