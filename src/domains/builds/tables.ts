/**
 * Builds: one row per build (a state machine driven by scheduler items, see pipeline.ts) and its
 * log lines. A build names its project, environment, service and repository by value: it keeps
 * its history when the service or the source goes away. A `publish` build belongs to no service
 * and no environment (both empty strings) and keeps its tag in `branch`. Timestamps are integer
 * epoch ms.
 */
import { sqliteTable, text, integer, real, index, primaryKey } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";

export const builds = sqliteTable(
  "builds",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** The project's slug when the build was queued (BuildResponse.project). */
    project: text("project").notNull(),
    environment: text("environment").notNull(),
    service: text("service").notNull(),
    kind: text("kind", { enum: ["image", "publish"] }).notNull(),
    status: text("status").notNull(),
    trigger: text("trigger", { enum: ["push", "manual", "retry"] }).notNull(),
    /** `host` for a push, otherwise the operator's email (or a machine's handle). */
    requestedBy: text("requested_by").notNull(),
    /** Who pushed the commit or tag (push builds, and their retries); a publish build's publisher. */
    pushedBy: text("pushed_by"),
    sourceId: text("source_id"),
    repo: text("repo").notNull(),
    branch: text("branch"),
    commitSha: text("commit_sha").notNull(),
    author: text("author").notNull(),
    message: text("message").notNull(),
    /** Commit time (image mtimes are clamped to it). */
    commitTime: integer("commit_time").notNull(),
    queuedAt: integer("queued_at").notNull(),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
    error: text("error"),
    failureKind: text("failure_kind"),
    cacheHit: real("cache_hit"),
    imageRef: text("image_ref"),
    imageDigest: text("image_digest"),
    imageSizeBytes: integer("image_size_bytes"),
    hostCheckRunId: integer("host_check_run_id"),
    hostStatusId: integer("host_status_id"),
    /** JSON array of `{step, started_at, finished_at?, ok?, note?}` in run order. */
    stepTimings: text("step_timings").notNull().default("[]"),
    /** JSON: an image build's keys resolved at clone time (builder, commands, start, port, context …); a publish build's module plan. */
    plan: text("plan"),
    /** Cancel asked while running: honoured at the next step boundary (the processes are killed at once). */
    cancelRequested: integer("cancel_requested", { mode: "boolean" }).notNull().default(false),
    /** The scheduler item that owns the current step; any other item for this build is stale. */
    stepItem: text("step_item"),
    /** Order in which builds left the queue (the fair queue's memory of whom it served last). */
    dispatchSeq: integer("dispatch_seq"),
    /** The build this one retries. */
    retryOf: integer("retry_of"),
    /**
     * What goes into the image, as one digest (decision 0435): commit, service, the build spec as
     * resolved for the environment, the build variables' values (keyed digest), builder. Set at clone.
     */
    inputKey: text("input_key"),
    /** JSON: a digest per part of `input_key` (`spec`, `variables`, `builder`), to say which part differs. */
    inputParts: text("input_parts"),
    /** The build whose image this one reuses (or waits for): its steps did not run here. */
    reuseOf: integer("reuse_of"),
    /** Set once the deployer recorded the rollout of this build (`deploying` then waits for the verdict). */
    deployHandedAt: integer("deploy_handed_at"),
    /** Lines stored in build_log_lines. */
    logLines: integer("log_lines").notNull().default(0),
  },
  (t) => [
    index("builds_project_env").on(t.projectId, t.environment, t.service, t.id),
    index("builds_status").on(t.status),
    // A commit has a handful of builds: reuse.ts finds same-input builds through it.
    index("builds_project_commit").on(t.projectId, t.commitSha),
  ],
);

/** A build's log, one row per line; `seq` counts from 1 per build. */
export const buildLogLines = sqliteTable(
  "build_log_lines",
  {
    buildId: integer("build_id")
      .notNull()
      .references(() => builds.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    at: integer("at").notNull(),
    level: text("level", { enum: ["info", "warn", "error"] }).notNull(),
    step: text("step").notNull(),
    line: text("line").notNull(),
  },
  (t) => [primaryKey({ columns: [t.buildId, t.seq] })],
);
