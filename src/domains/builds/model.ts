/**
 * Request and response schemas of the Builds section of the spec, under the spec's names.
 * Schemas are the types.
 */
import { t } from "elysia";
import { ErrorBody, IntParam } from "../../core/http-schemas";

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T, description?: string) => t.Optional(t.Union([s, t.Null()], description ? { description } : {}));

/** Every build state (spec "Build status"). */
export const BUILD_STATES = ["queued", "cloning", "checks", "building", "scanning", "pushing", "signing", "deploying", "publishing", "healthy", "published", "failed", "rolled_back", "cancelled"] as const;
export type BuildState = (typeof BUILD_STATES)[number];

/** States in which a builder works on the build (they count against OPS_BUILD_CONCURRENCY). */
export const WORKING_STATES = ["cloning", "checks", "building", "scanning", "pushing", "signing", "publishing"] as const;
export type WorkingState = (typeof WORKING_STATES)[number];

/** States a build never leaves. */
export const FINAL_STATES = ["healthy", "published", "failed", "rolled_back", "cancelled"] as const;

export const FAILURE_KINDS = ["checks", "build", "memory", "scan", "push", "sign", "deploy", "health", "publish", "internal"] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export const StepTiming = t.Object({
  step: t.String({ description: "`clone`, `checks`, `build`, `scan`, `push`, `sign`, `deploy`; a publish build's `clone`, `plan`, `crates`, `layers`, `locales`" }),
  started_at: t.String(),
  finished_at: Nullable(t.String()),
  ok: Nullable(t.Boolean(), "Absent for a step that did not run (the note says why)"),
  note: Nullable(t.String()),
});
export type StepTiming = typeof StepTiming.static;

export const BuildResponse = t.Object({
  author: t.String({ description: "Commit author's login on the code host" }),
  branch: Nullable(t.String(), "The branch built; a publish build's tag (`v1.2.0`)"),
  cache_hit: Nullable(t.Number({ minimum: 0, maximum: 1 }), "0 to 1: share of the dependency cache reused; null when no cache was used"),
  commit_sha: t.String(),
  environment: t.String({ description: "Empty for a publish build (it belongs to no environment)" }),
  error: Nullable(t.String()),
  failure_kind: Nullable(t.String(), FAILURE_KINDS.join(", ")),
  finished_at: Nullable(t.String()),
  host_check_run_id: Nullable(t.Integer()),
  id: t.Integer(),
  image_digest: Nullable(t.String()),
  image_ref: Nullable(t.String()),
  image_size_bytes: Nullable(t.Integer()),
  kind: t.String({ description: "`image` (a service image build) or `publish` (a tag's packages published; steps `clone`, `plan`, `crates`, `layers`, `locales`)" }),
  message: t.String({ description: "First line of the commit message" }),
  project: t.String(),
  queued_at: t.String(),
  repo: t.String(),
  requested_by: t.String({ description: "`host` for a push, otherwise the operator email" }),
  service: t.String({ description: "Empty for a publish build (it belongs to no service)" }),
  source_id: Nullable(t.String({ format: "uuid" })),
  started_at: Nullable(t.String()),
  status: t.String({ description: BUILD_STATES.join(", ") }),
  step_timings: t.Array(StepTiming, { description: "In run order" }),
  trigger: t.String({ description: "`push`, `manual` or `retry`" }),
});
export type BuildResponse = typeof BuildResponse.static;

export const HostIds = t.Object({
  check_run_id: Nullable(t.Integer()),
  deployment_id: Nullable(t.Integer()),
  status_id: Nullable(t.Integer()),
});

/** The spec's DeploymentResponse, as the deployments domain fills it (inline here: builds does not import deployments). */
const DeploymentOfBuild = t.Object({
  author: t.String(),
  build_id: Nullable(t.Integer()),
  commit_sha: Nullable(t.String()),
  created_at: t.String(),
  created_by: t.String(),
  environment: t.String(),
  finished_at: Nullable(t.String()),
  host_deployment_id: Nullable(t.Integer()),
  host_status_id: Nullable(t.Integer()),
  id: t.Integer(),
  image_digest: t.String(),
  message: t.String(),
  previous_digest: Nullable(t.String()),
  project: t.String(),
  rollout: t.String(),
  rollout_note: Nullable(t.String()),
  failure_output: t.Optional(
    t.Array(t.Object({ process: t.String(), lines: t.Array(t.String()) }), { description: "What the failed rollout's new replicas and release steps printed last (at most 50 lines each, secrets masked)" }),
  ),
  service: t.String(),
  trigger: t.String(),
});
export type DeploymentOfBuild = typeof DeploymentOfBuild.static;

export const BuildDetailResponse = t.Object({
  build: t.Ref("BuildResponse"),
  deployment: t.Optional(t.Union([t.Null(), DeploymentOfBuild], { description: "The rollout of this build, once deployments recorded one" })),
  host: HostIds,
  timings: t.Array(StepTiming, { description: "Copy of build.step_timings" }),
});
export type BuildDetailResponse = { build: BuildResponse; deployment?: DeploymentOfBuild | null; host: typeof HostIds.static; timings: StepTiming[] };

export const LogLineResponse = t.Object({
  at: t.String(),
  level: t.String({ description: "`info`, `warn` or `error`" }),
  line: t.String(),
  seq: t.Integer(),
  step: t.String(),
});

export const LogResponse = t.Object({
  lines: t.Array(LogLineResponse),
  live: t.Boolean({ description: "Build still running: poll again" }),
  next: t.Integer({ description: "Pass as `after`: the last sequence returned, or the given `after` when nothing new" }),
});
export type LogResponse = typeof LogResponse.static;

export const CreateBuildRequest = t.Object({
  service: t.String({ minLength: 1, maxLength: 63 }),
  ref: Nullable(t.String({ minLength: 1, maxLength: 255 }), "Branch whose head is built; default the service's source branch, else the source's default branch"),
});
export type CreateBuildRequest = typeof CreateBuildRequest.static;

export const BuildListQuery = t.Object({
  environment: t.Optional(t.String({ description: "Default production" })),
  service: t.Optional(t.String({ description: "Only this service's builds" })),
  limit: t.Optional(IntParam({ minimum: 1, maximum: 500, description: "1 to 500, default 50" })),
});

export const LogQuery = t.Object({
  after: t.Optional(IntParam({ minimum: 0, description: "Sequence to read after (default: from the start)" })),
  limit: t.Optional(IntParam({ minimum: 1, maximum: 5000, description: "1 to 5000, default 500" })),
});

export const buildsModels = { BuildResponse, BuildDetailResponse, LogResponse, CreateBuildRequest, ErrorBody };
