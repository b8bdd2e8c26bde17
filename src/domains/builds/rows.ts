/**
 * Build rows: the JSON views (BuildResponse), lookups, and the step timings kept on the row.
 * Nothing here runs a build; pipeline.ts does.
 */
import { and, desc, eq, inArray, or } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { iso, isoOrNull } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { builds } from "./tables";
import { FINAL_STATES, WORKING_STATES, type BuildResponse, type StepTiming } from "./model";

export type BuildRow = typeof builds.$inferSelect;

/**
 * Step names (`step_timings[].step`, log lines' `step`), in run order: an image build's, then a
 * publish build's after its `clone`.
 */
export const STEP_NAMES = ["clone", "checks", "build", "scan", "push", "sign", "deploy", "plan", "crates", "layers", "locales"] as const;
export type StepName = (typeof STEP_NAMES)[number];

/** What a log line's `step` says: a step, or `queue` for what happened before the first. */
export type LogStep = StepName | "queue";

const STATE_STEPS: Record<string, StepName> = { cloning: "clone", checks: "checks", building: "build", scanning: "scan", pushing: "push", signing: "sign", deploying: "deploy" };


/** The step a build is in: its open timing's (a publish build runs four steps in `publishing`), else its state's. */
export function stepOfRow(row: Pick<BuildRow, "status" | "stepTimings">): LogStep {
  return timingsOf(row).findLast((s) => s.finishedAt === undefined)?.step ?? STATE_STEPS[row.status] ?? "queue";
}

/** One timing as stored (epoch ms). */
export interface StoredTiming {
  step: StepName;
  startedAt: number;
  finishedAt?: number;
  /** Absent for a step that did not run; the note says why. */
  ok?: boolean;
  note?: string;
}

export function timingsOf(row: Pick<BuildRow, "stepTimings">): StoredTiming[] {
  try {
    const parsed = JSON.parse(row.stepTimings) as StoredTiming[];
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}

function timingView(s: StoredTiming): StepTiming {
  return {
    step: s.step,
    started_at: iso(s.startedAt),
    ...(s.finishedAt !== undefined ? { finished_at: iso(s.finishedAt) } : {}),
    ...(s.ok !== undefined ? { ok: s.ok } : {}),
    ...(s.note !== undefined ? { note: s.note } : {}),
  };
}

/** The spec's BuildResponse of a row (every field; nothing else is read). */
export function toBuildResponse(row: BuildRow): BuildResponse {
  return {
    author: row.author,
    branch: row.branch,
    cache_hit: row.cacheHit,
    commit_sha: row.commitSha,
    environment: row.environment,
    error: row.error,
    failure_kind: row.failureKind,
    finished_at: isoOrNull(row.finishedAt),
    host_check_run_id: row.hostCheckRunId,
    id: row.id,
    image_digest: row.imageDigest,
    image_ref: row.imageRef,
    image_size_bytes: row.imageSizeBytes,
    kind: row.kind,
    message: row.message,
    project: row.project,
    queued_at: iso(row.queuedAt),
    repo: row.repo,
    requested_by: row.requestedBy,
    service: row.service,
    source_id: row.sourceId,
    started_at: isoOrNull(row.startedAt),
    status: row.status,
    step_timings: timingsOf(row).map(timingView),
    trigger: row.trigger,
  };
}

export function isFinal(status: string): boolean {
  return (FINAL_STATES as readonly string[]).includes(status);
}

export function isWorking(status: string): boolean {
  return (WORKING_STATES as readonly string[]).includes(status);
}

/** The build, or null. */
export function buildById(q: Queryable, id: number): BuildRow | null {
  return q.select().from(builds).where(eq(builds.id, id)).get() ?? null;
}

/** A build of the project (by slug), or null when there is none. */
export function getBuildRow(core: Core, projectSlug: string, id: number): BuildRow | null {
  const project = core.access.findProject(projectSlug);
  if (!project || !Number.isSafeInteger(id)) return null;
  return core.db.select().from(builds).where(and(eq(builds.id, id), eq(builds.projectId, project.id))).get() ?? null;
}

/** A build of the project, or 404. */
export function requireBuild(core: Core, projectId: string, id: number): BuildRow {
  const row = Number.isSafeInteger(id) ? core.db.select().from(builds).where(and(eq(builds.id, id), eq(builds.projectId, projectId))).get() : undefined;
  if (!row) throw new OpsError("not_found", `No build ${id} in this project.`);
  return row;
}

/**
 * Builds of one environment (optionally one service), newest first. Without a service, the
 * project's publish builds (which live in no environment) are listed too unless `imagesOnly`.
 */
export function listBuildRows(q: Queryable, projectId: string, environment: string, service: string | null, limit: number, imagesOnly = false): BuildRow[] {
  const inEnvironment = and(eq(builds.environment, environment), eq(builds.kind, "image"));
  const where =
    service !== null
      ? and(eq(builds.projectId, projectId), inEnvironment, eq(builds.service, service))
      : and(eq(builds.projectId, projectId), imagesOnly ? inEnvironment : or(inEnvironment, eq(builds.kind, "publish")));
  return q.select().from(builds).where(where).orderBy(desc(builds.id)).limit(limit).all();
}

/** Builds in any of `states` (every project). */
export function buildsIn(q: Queryable, states: readonly string[]): BuildRow[] {
  return q.select().from(builds).where(inArray(builds.status, [...states])).all();
}
