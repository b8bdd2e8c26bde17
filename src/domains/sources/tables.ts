/**
 * Sources: repositories connected to a project, the studio's saves (an edit → a branch and a pull
 * request on the code host), scans (what a repository deploys, and the reconcile of its
 * `ops.toml`), and the release steps a repository declares. Timestamps are integer epoch ms.
 */
import { sqliteTable, text, integer, blob, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";

export const sources = sqliteTable(
  "sources",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** `owner/repo` on the code host. */
    repo: text("repo").notNull(),
    installationId: integer("installation_id").notNull(),
    defaultBranch: text("default_branch").notNull(),
    connectedAt: integer("connected_at").notNull(),
    connectedBy: text("connected_by").notNull(),
    /** The last push the host reported; null = never. */
    lastEventAt: integer("last_event_at"),
    /** JSON DeclaredNames from the last scan of the default branch; null = nothing declared. */
    declared: text("declared"),
  },
  (t) => [uniqueIndex("sources_project_repo").on(t.projectId, t.repo), index("sources_repo").on(t.repo)],
);

export const sourceSaves = sqliteTable(
  "source_saves",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** null once the source is disconnected (the save keeps its history). */
    sourceId: text("source_id").references(() => sources.id, { onDelete: "set null" }),
    repo: text("repo").notNull(),
    /** Branch the edit was made on; null = the default branch. */
    ref: text("ref"),
    /** The branch the save's commit is on (`ops/save-<id>`), set when it runs. */
    branch: text("branch"),
    message: text("message").notNull(),
    /** JSON SaveFileResponse[]. */
    files: text("files").notNull(),
    /** The request's changes (JSON, base64 for bytes) until the save has run; then null. */
    payload: blob("payload", { mode: "buffer" }),
    status: text("status", { enum: ["queued", "running", "open", "merged", "closed", "failed"] }).notNull(),
    error: text("error"),
    log: text("log").notNull().default(""),
    commitSha: text("commit_sha"),
    pullNumber: integer("pull_number"),
    pullUrl: text("pull_url"),
    mergeSha: text("merge_sha"),
    mergedAt: integer("merged_at"),
    mergedBy: text("merged_by"),
    scanId: integer("scan_id"),
    requestedBy: text("requested_by").notNull(),
    /** JSON AuditActor of the requester (the save's commit author and audit actor). */
    actor: text("actor").notNull(),
    createdAt: integer("created_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (t) => [index("source_saves_source").on(t.sourceId, t.id), index("source_saves_project").on(t.projectId, t.id)],
);

export const sourceScans = sqliteTable(
  "source_scans",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    sourceId: text("source_id").references(() => sources.id, { onDelete: "set null" }),
    repo: text("repo").notNull(),
    installationId: integer("installation_id").notNull(),
    /** The ref as asked for (a branch, tag or sha). */
    gitRef: text("git_ref").notNull(),
    /** True when the ref is the repository's default branch (then the source's `declared` follows). */
    defaultBranch: integer("default_branch", { mode: "boolean" }).notNull(),
    commitSha: text("commit_sha"),
    status: text("status", { enum: ["queued", "running", "succeeded", "failed"] }).notNull(),
    error: text("error"),
    log: text("log").notNull().default(""),
    /** JSON DetectedService[]. */
    services: text("services").notNull().default("[]"),
    /** JSON DeclaredStepResponse[]. */
    steps: text("steps").notNull().default("[]"),
    /** JSON event → steps. */
    hooks: text("hooks").notNull().default("{}"),
    /** JSON Reconciled; null until reconciled. */
    reconciled: text("reconciled"),
    requestedBy: text("requested_by").notNull(),
    /** JSON AuditActor of the caller: the reconcile is audited as them. */
    actor: text("actor").notNull(),
    /** JSON: the environments where the caller held resources.write when asking. */
    writableEnvironments: text("writable_environments").notNull().default("[]"),
    createdAt: integer("created_at").notNull(),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
  },
  (t) => [index("source_scans_project").on(t.projectId, t.id)],
);

/** Release steps a repository declares (`[steps.<name>]`); a step is not a resource type. */
export const sourceSteps = sqliteTable(
  "source_steps",
  {
    sourceId: text("source_id")
      .notNull()
      .references(() => sources.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** JSON: the step's keys as the file has them. */
    spec: text("spec").notNull(),
    /** False once the file stopped declaring it (kept, never destroyed). */
    declared: integer("declared", { mode: "boolean" }).notNull(),
    /** The commit the declaration was read from. */
    commitSha: text("commit_sha").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("source_steps_name").on(t.sourceId, t.name)],
);
