/**
 * Request and response schemas of the resources domain, under the spec's names. Schemas are the
 * types (`type X = typeof X.static`). The per-type spec schemas are in specs.ts (the catalog).
 */
import { t } from "elysia";
import { BodyInt, ErrorBody } from "../../core/http-schemas";

export const NAME_PATTERN = "^[a-z0-9][a-z0-9-]{0,62}$";
export const NAME_RE = new RegExp(NAME_PATTERN);

export const ResourceStatus = t.Object({
  detail: t.Optional(t.Any({ description: "Type-specific figures; `{}` when none" })),
  observed_at: t.String({ description: "When this status was recorded (the creation time until first observed)" }),
  state: t.String({ description: "`ready`, `pending` or `error`" }),
  summary: t.String({ description: "One line for a human; the text `null` until first observed" }),
});
export type ResourceStatus = typeof ResourceStatus.static;

export const ResourceResponse = t.Object({
  created_at: t.String(),
  environment: t.Optional(t.Union([t.String(), t.Null()], { description: "null for project-level types" })),
  id: t.String({ format: "uuid" }),
  name: t.String(),
  project: t.String(),
  spec: t.Any(),
  status: t.Ref("ResourceStatus"),
  type: t.String(),
  updated_at: t.String(),
  updated_by: t.String(),
  version: t.Integer({ description: "Bumps on every put, an unchanged spec included" }),
});
export type ResourceResponse = Omit<typeof ResourceResponse.static, "status"> & { status: ResourceStatus };

export const CreateResourceRequest = t.Object({
  name: t.String({ pattern: NAME_PATTERN }),
  spec: t.Any({ description: "Checked against the type's schema (GET /api/v1/catalog)" }),
});

export const SetResourceRequest = t.Object({
  spec: t.Any(),
  version: t.Optional(
    BodyInt({
      minimum: 0,
      nullable: true,
      description: "Optimistic concurrency: the version the client last read (409 when it is not the current one); 0 = only if it does not exist yet",
    }),
  ),
});

export const RestoreRunbookResponse = t.Object({
  backup: t.String({ description: "`PITR via the plane stanza` or the text `null` (OPS_DB_PLANE_PITR)" }),
  database: t.String(),
  stanza: t.String(),
  steps: t.Array(t.String(), { description: "One shell line per step" }),
  text: t.String({ description: "The same lines as one block" }),
});
export type RestoreRunbookResponse = typeof RestoreRunbookResponse.static;

export const JobRunResponse = t.Object({
  duration_secs: t.Optional(t.Union([t.Integer(), t.Null()])),
  environment: t.String(),
  error: t.Optional(t.Union([t.String(), t.Null()])),
  exit_code: t.Optional(t.Union([t.Integer(), t.Null()])),
  finished_at: t.Optional(t.Union([t.String(), t.Null()])),
  id: t.Integer(),
  job: t.String(),
  lines: t.Integer(),
  queued_at: t.String(),
  requested_by: t.String({ description: "`scheduler` or the operator email" }),
  started_at: t.Optional(t.Union([t.String(), t.Null()])),
  status: t.String({ description: "`queued`, `running`, `succeeded` or `failed`" }),
  trigger: t.String({ description: "`schedule` or `manual`" }),
});
export type JobRunResponse = typeof JobRunResponse.static;

export const JobLogLine = t.Object({
  at: t.String(),
  level: t.String({ description: "`info`, `warn` or `error`; a run's stderr arrives as `warn`" }),
  line: t.String(),
  seq: t.Integer(),
});
export type JobLogLine = typeof JobLogLine.static;

export const JobLogResponse = t.Object({
  lines: t.Array(t.Ref("JobLogLine")),
  live: t.Boolean({ description: "Run is queued or in flight: poll again" }),
  next: t.Integer({ description: "Pass as `after` for the next page" }),
});
export type JobLogResponse = { lines: JobLogLine[]; live: boolean; next: number };

export const CatalogEntry = t.Object({
  type: t.String(),
  scope: t.String({ description: "`environment` (one per environment) or `project` (project-level, environment null)" }),
  description: t.String(),
  delete_confirm: t.Boolean({ description: "Deleting asks for `confirm` = the resource's name (always for databases; for a local bucket that holds objects)" }),
  schema: t.Any({ description: "JSON Schema of the type's spec" }),
});
export type CatalogEntry = typeof CatalogEntry.static;

export const resourcesModels = {
  ResourceStatus,
  ResourceResponse,
  CreateResourceRequest,
  SetResourceRequest,
  RestoreRunbookResponse,
  JobRunResponse,
  JobLogLine,
  JobLogResponse,
  CatalogEntry,
  ErrorBody,
};
