/**
 * Resources: one row per typed resource (service, database, bucket, job, domain, secret-group)
 * with its JSON spec, a version that bumps on every write, and the stored status. Beside it the
 * per-type state that is not part of the spec: job schedules and runs (with their output lines),
 * the database plane's names and sealed password, and the host names domains claim.
 * Timestamps are integer epoch ms.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";

export const resources = sqliteTable(
  "resources",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** null for project-level types (bucket). */
    environment: text("environment"),
    /** `environment`, or "" for a project-level type: one unique index covers both. */
    scope: text("scope").notNull(),
    type: text("type").notNull(),
    name: text("name").notNull(),
    /** JSON: the spec as written (checked against the type's schema). */
    spec: text("spec").notNull(),
    version: integer("version").notNull(),
    statusState: text("status_state", { enum: ["ready", "pending", "error"] }).notNull(),
    statusSummary: text("status_summary").notNull(),
    /** JSON: type-specific figures; `{}` when none. */
    statusDetail: text("status_detail").notNull().default("{}"),
    /** When the stored status was recorded (creation time until first observed). */
    statusAt: integer("status_at").notNull(),
    /** First observation time; null until observed. */
    observedAt: integer("observed_at"),
    /** Set when a service must restart to pick up a new secret-group render (no runtime yet). */
    restartNote: text("restart_note"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    updatedBy: text("updated_by").notNull(),
  },
  (t) => [uniqueIndex("resources_unique_name").on(t.projectId, t.scope, t.type, t.name), index("resources_project_type").on(t.projectId, t.type)],
);

/** A job's cron schedule and when it fires next (kept in step with the job's spec). */
export const jobSchedules = sqliteTable("job_schedules", {
  resourceId: text("resource_id")
    .primaryKey()
    .references(() => resources.id, { onDelete: "cascade" }),
  cron: text("cron").notNull(),
  nextRunAt: integer("next_run_at").notNull(),
});

export const jobRuns = sqliteTable(
  "job_runs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    resourceId: text("resource_id")
      .notNull()
      .references(() => resources.id, { onDelete: "cascade" }),
    environment: text("environment").notNull(),
    job: text("job").notNull(),
    status: text("status", { enum: ["queued", "running", "succeeded", "failed"] }).notNull(),
    trigger: text("trigger", { enum: ["schedule", "manual"] }).notNull(),
    requestedBy: text("requested_by").notNull(),
    queuedAt: integer("queued_at").notNull(),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
    exitCode: integer("exit_code"),
    error: text("error"),
    lines: integer("lines").notNull().default(0),
  },
  (t) => [index("job_runs_resource").on(t.resourceId, t.id), index("job_runs_status").on(t.status)],
);

/** A run's output, one row per line; `seq` counts from 1 per run. */
export const jobRunLines = sqliteTable(
  "job_run_lines",
  {
    runId: integer("run_id")
      .notNull()
      .references(() => jobRuns.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    at: integer("at").notNull(),
    level: text("level", { enum: ["info", "warn", "error"] }).notNull(),
    line: text("line").notNull(),
  },
  (t) => [uniqueIndex("job_run_lines_run_seq").on(t.runId, t.seq)],
);

/** What ops provisioned on the database plane for a database resource. */
export const resourceDatabases = sqliteTable("resource_databases", {
  resourceId: text("resource_id")
    .primaryKey()
    .references(() => resources.id, { onDelete: "cascade" }),
  planeDatabase: text("plane_database").notNull(),
  planeRole: text("plane_role").notNull(),
  /** Sealed value id of the role's password; null for an adopted database. */
  passwordId: text("password_id"),
  adopted: integer("adopted", { mode: "boolean" }).notNull(),
  createdAt: integer("created_at").notNull(),
  passwordRotatedAt: integer("password_rotated_at"),
});

/** Host names claimed by domain resources: one owner per host name across the estate. */
export const domainHosts = sqliteTable(
  "domain_hosts",
  {
    host: text("host").primaryKey(),
    resourceId: text("resource_id")
      .notNull()
      .references(() => resources.id, { onDelete: "cascade" }),
  },
  (t) => [index("domain_hosts_resource").on(t.resourceId)],
);
