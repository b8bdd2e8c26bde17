/**
 * Deployments: one row per rollout of a digest to a service (deploy, rollback, a build's
 * auto-deploy, a restart for a new secret-group render), with the rollout's phase (`rollout`) as
 * the persistent state of its state machine; and one row per service that has ever run, naming
 * the digest it runs now and how many replicas it should have, which is what `ops serve` starts
 * again after a restart. Timestamps are integer epoch ms.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";

export const deployments = sqliteTable(
  "deployments",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    environment: text("environment").notNull(),
    service: text("service").notNull(),
    /** `<project>/<service>` in the embedded registry. */
    repository: text("repository").notNull(),
    imageDigest: text("image_digest").notNull(),
    /** The digest the service ran when this rollout was recorded (null for a first deploy). */
    previousDigest: text("previous_digest"),
    buildId: integer("build_id"),
    commitSha: text("commit_sha"),
    message: text("message").notNull(),
    author: text("author").notNull(),
    /** `manual`, `build`, `rollback` or `restart`. */
    trigger: text("trigger").notNull(),
    /** See rollout.ts: queued … healthy, unhealthy, rolling_back, rolled_back, failed, refused. */
    rollout: text("rollout").notNull(),
    /** One line for a human about the rollout's phase or outcome. */
    rolloutNote: text("rollout_note"),
    /** `health`, `deploy` or `internal` once the rollout failed. */
    failureKind: text("failure_kind"),
    /**
     * A failed rollout's evidence: JSON `[{ replica, exit, lines }]`, the last 50 lines each failed
     * replica (or release step) printed, secrets masked as in its output (failure-output.ts).
     */
    failureOutput: text("failure_output"),
    /** 1 while the rollout is in flight, else null: at most one in flight per service. */
    inFlight: integer("in_flight"),
    /** The scheduler item that runs the rollout now; a stale item (another token) does nothing. */
    runToken: text("run_token"),
    createdAt: integer("created_at").notNull(),
    createdBy: text("created_by").notNull(),
    finishedAt: integer("finished_at"),
    /** The code host's deployment record of this rollout (host.ts); null until reported or when not reported. */
    hostDeploymentId: integer("host_deployment_id"),
    /** The code host's newest status on that record. */
    hostStatusId: integer("host_status_id"),
  },
  (t) => [
    index("deployments_service").on(t.projectId, t.environment, t.service, t.id),
    uniqueIndex("deployments_one_in_flight").on(t.projectId, t.environment, t.service, t.inFlight),
    index("deployments_build").on(t.buildId),
  ],
);

/** What runs (or should run) per service: the current digest and the replicas asked for. */
export const serviceRuns = sqliteTable(
  "service_runs",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    environment: text("environment").notNull(),
    service: text("service").notNull(),
    repository: text("repository").notNull(),
    /** The digest the service runs now (its last healthy rollout). */
    currentDigest: text("current_digest").notNull(),
    currentDeploymentId: integer("current_deployment_id").notNull(),
    /** Replicas wanted; 0 = stopped. */
    replicas: integer("replicas").notNull(),
    /** A restart asked for while a rollout was in flight (a new secret-group render): its reason. */
    restartPending: text("restart_pending"),
    /** The health probe's last verdict: `up`, `degraded` or `down`; null until probed. */
    health: text("health"),
    healthNote: text("health_note"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("service_runs_service").on(t.projectId, t.environment, t.service), index("service_runs_digest").on(t.currentDigest)],
);

export type DeploymentRow = typeof deployments.$inferSelect;
export type ServiceRunRow = typeof serviceRuns.$inferSelect;
