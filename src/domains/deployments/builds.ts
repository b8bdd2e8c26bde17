/**
 * The deployments side of the hand-off with the builds domain (builds/deployer.ts): the
 * deployer builds hand a signed image to when a build reaches `deploying` (auto-deploy on push,
 * and every manual build), the verdict given back once per build it was handed, the image of a
 * build named by a deploy's `build_id`, the rule that no rollout starts while a build of the
 * service is between `deploying` and its verdict, and the builds of the timeline.
 */
import { and, desc, eq, isNotNull } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { SYSTEM_ACTOR } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { buildBetweenDeployingAndVerdict, getBuildRow, installBuildDeployer, listBuildsForTimeline, recordBuildVerdict, toBuildResponse, verifyImageSignature, type BuildResponse, type DeployableBuild } from "../builds/service";
import { getResourceRow, placeFor } from "../resources/service";
import { deployments, type DeploymentRow } from "./tables";
import { assertNoRolloutInFlight, recordRefusal, recordRollout, type RolloutRequest } from "./record";
import { onRolloutFinished, type Verdict } from "./rollout";
import { assertRunnableHere } from "./runnable";
import { repositoryOf, shortDigest, toDeploymentResponse } from "./rows";
import type { ServiceAddress } from "./live";
import type { BuildSummary, TimelineRow, TimelineState } from "./model";

export interface DeployableImage {
  id: number;
  digest: string;
  commitSha: string;
  message: string;
  author: string;
}

/** The build `id` of the project, with its image; 404 no such build, 422 another service's or one without an image. */
export function buildForDeploy(core: Core, addr: ServiceAddress, id: number): DeployableImage {
  const row = getBuildRow(core, addr.project.slug, id);
  if (!row) throw new OpsError("not_found", `No build ${id} in project ${addr.project.slug}.`);
  const b = toBuildResponse(row);
  if (b.service !== addr.service) throw new OpsError("validation_failed", `Build ${id} built service ${b.service}, not ${addr.service}.`, { fields: [{ path: "build_id", message: "a build of another service" }] });
  if (!b.image_digest) throw new OpsError("validation_failed", `Build ${id} has no image (it is ${b.status}${b.failure_kind ? `, ${b.failure_kind}` : ""}).`, { fields: [{ path: "build_id", message: "a build without an image" }] });
  return { id: b.id, digest: b.image_digest, commitSha: b.commit_sha, message: b.message, author: b.author };
}

/** 409 while a build of the service (other than `except`) is between `deploying` and its verdict. */
export function assertNoBuildAwaitingVerdict(core: Core, addr: ServiceAddress, except: number | null): void {
  const row = buildBetweenDeployingAndVerdict(core, addr.project.slug, addr.environment, addr.service);
  if (row && row.id !== except) throw new OpsError("conflict", `Build ${row.id} of ${addr.service} is deploying; wait for its verdict before another rollout.`, { build: row.id });
}

function buildDeployment(core: Core, buildId: number): DeploymentRow | null {
  return core.db.select().from(deployments).where(and(eq(deployments.buildId, buildId), eq(deployments.trigger, "build"))).orderBy(desc(deployments.id)).get() ?? null;
}

/** A build reached `deploying`: record its rollout (or refuse it, which fails the build). */
async function deployBuild(core: Core, b: DeployableBuild): Promise<void> {
  if (buildDeployment(core, b.id)) return; // Handed again after a restart: the rollout is recorded.
  const project = core.access.findProject(b.project);
  if (!project) throw new OpsError("not_found", `No project ${b.project}.`);
  const place = placeFor(project, "service", b.environment);
  getResourceRow(core.db, place, "service", b.service);
  const addr: ServiceAddress = { project, environment: b.environment, service: b.service };
  const who = b.requestedBy === "host" ? "system" : b.requestedBy;
  const req: RolloutRequest = { addr, digest: b.imageDigest, trigger: "build", buildId: b.id, commitSha: b.commitSha, message: b.message, author: b.author, actor: { ...SYSTEM_ACTOR, context: { build: b.id } }, createdBy: who };
  try {
    if (core.config.registry !== null) throw new OpsError("conflict", `The registry is not configured for deploys: OPS_REGISTRY names ${core.config.registry}.`);
    assertNoRolloutInFlight(core.db, addr);
    assertNoBuildAwaitingVerdict(core, addr, b.id);
  } catch (e) {
    if (e instanceof OpsError) recordRefusal(core, req, e.message);
    throw e;
  }
  const check = await verifyImageSignature(core, repositoryOf(addr), b.imageDigest);
  if (!check.ok) {
    recordRefusal(core, req, `not signed by the ops key: ${check.reason}`);
    throw new OpsError("refused", `Refused to deploy ${shortDigest(b.imageDigest)}: ${check.reason}.`);
  }
  await assertRunnableHere(core, req);
  recordRollout(core, req);
}

/** Give a build its verdict when the rollout it started ends (once: a finished build takes none). */
function giveVerdict(core: Core, row: DeploymentRow, verdict: Verdict): void {
  if (row.trigger !== "build" || row.buildId === null) return;
  recordBuildVerdict(core, row.buildId, verdict);
}

/**
 * At start-up: a build still `deploying` whose rollout already ended (ops stopped between the two)
 * gets its verdict now; rollouts still in flight give theirs when they end.
 */
export function settleBuildVerdicts(core: Core): void {
  const rows = core.db.select().from(deployments).where(and(eq(deployments.trigger, "build"), isNotNull(deployments.finishedAt))).orderBy(desc(deployments.id)).limit(500).all();
  const seen = new Set<string>();
  for (const r of rows) {
    const key = `${r.projectId}/${r.environment}/${r.service}`;
    if (seen.has(key) || r.buildId === null) continue;
    seen.add(key);
    const project = core.access.findProjectById(r.projectId);
    const waiting = project ? buildBetweenDeployingAndVerdict(core, project.slug, r.environment, r.service) : null;
    if (waiting?.id !== r.buildId) continue;
    const verdict: Verdict =
      r.rollout === "healthy" ? { status: "healthy" } : r.rollout === "rolled_back" ? { status: "rolled_back", failureKind: "health", error: r.rolloutNote ?? "rolled back" } : { status: "failed", failureKind: "deploy", error: r.rolloutNote ?? r.rollout };
    recordBuildVerdict(core, r.buildId, verdict);
  }
}

/** Install the deployer and the verdicts (the deployments module's install). */
export function installBuildHandOff(core: Core): void {
  installBuildDeployer(core, {
    deployBuild,
    deploymentOf(c, buildId) {
      const row = buildDeployment(c, buildId);
      const project = row ? c.access.findProjectById(row.projectId) : null;
      return row && project ? toDeploymentResponse(row, project.slug) : null;
    },
  });
  onRolloutFinished(core, giveVerdict);
}

/** A build as the timeline shows it: its summary, and its own row while it has no rollout. */
export interface TimelineBuild {
  summary: BuildSummary;
  queuedAt: number;
  row: TimelineRow;
}

/** A build's status as a timeline state (the timeline has no `cloning`, `publishing` or `published`). */
const BUILD_STATE: Record<string, TimelineState> = {
  queued: "queued",
  cloning: "building",
  checks: "checks",
  building: "building",
  scanning: "scanning",
  pushing: "pushing",
  signing: "signing",
  deploying: "deploying",
  publishing: "building",
  healthy: "healthy",
  published: "healthy",
  failed: "failed",
  rolled_back: "rolled_back",
  cancelled: "cancelled",
};
const BUILD_TEXT: Record<string, string> = {
  queued: "Queued: waiting for a builder",
  cloning: "Building: fetching the commit",
  checks: "Checks: running the check commands",
  building: "Building: running the build commands",
  scanning: "Scanning the image's files for secrets",
  pushing: "Pushing the image to the registry",
  signing: "Signing the image with the ops key",
  deploying: "Deploying: the rollout is being recorded",
  publishing: "Publishing the packages",
  published: "Published",
  cancelled: "Cancelled",
};

function buildText(b: BuildResponse): string {
  if (b.status === "failed" || b.status === "rolled_back") return `${b.status === "failed" ? "Failed" : "Rolled back"}${b.failure_kind ? ` (${b.failure_kind})` : ""}${b.error ? `: ${b.error}` : ""}`;
  if (b.status === "healthy") {
    const note = b.step_timings.map((s) => s.note).filter(Boolean).at(-1);
    return `Built and signed ${shortDigest(b.image_digest ?? "")}${note ? `; ${note}` : ""}`;
  }
  // A build that waits for another's image with the same inputs says so (builds decision 0435).
  const waiting = b.status === "building" ? b.step_timings.findLast((s) => s.step === "build" && !s.finished_at)?.note : null;
  if (waiting?.startsWith("waiting for the image of build #")) return `Building: ${waiting}`;
  return BUILD_TEXT[b.status] ?? b.status;
}

/** The failure kinds a timeline row may show (spec TimelineRow), a subset of a build's. */
const TIMELINE_FAILURE_KINDS = new Set(["checks", "build", "scan", "push", "sign", "deploy", "health", "internal"]);

/**
 * A build's failure kind as a timeline row shows it: `memory` (the build ran out of memory) and
 * `publish` (a package did not publish) are failures of the build step, so they read `build`;
 * the row's `state_text` keeps the build's own kind and error.
 */
export function timelineFailureKind(kind: string | null | undefined): string | null {
  if (!kind) return null;
  return TIMELINE_FAILURE_KINDS.has(kind) ? kind : kind === "memory" || kind === "publish" ? "build" : "internal";
}

function summaryOf(b: BuildResponse): BuildSummary {
  return { branch: b.branch ?? null, cache_hit: b.cache_hit ?? null, error: b.error ?? null, finished_at: b.finished_at ?? null, id: b.id, image_digest: b.image_digest ?? null, kind: b.kind, queued_at: b.queued_at, requested_by: b.requested_by, status: b.status, trigger: b.trigger };
}

/** The builds of the environment (one service or all), newest first. */
export function timelineBuilds(core: Core, project: ProjectRef, environment: string, service: string | null, limit: number): TimelineBuild[] {
  return listBuildsForTimeline(core, project.slug, environment, service, limit).map((b) => {
    const state = BUILD_STATE[b.status] ?? "failed";
    return {
      summary: summaryOf(b),
      queuedAt: Date.parse(b.queued_at),
      row: { at: b.queued_at, author: b.author, build: summaryOf(b), commit: b.commit_sha, deployment: null, failure_kind: timelineFailureKind(b.failure_kind), message: b.message, service: b.service, state, state_text: buildText(b) },
    };
  });
}

