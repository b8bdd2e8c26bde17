/**
 * How a build ends, and what it owns while it runs: the work dir `run/builds/<id>/` (removed when
 * the build ends), the service's dependency cache, the step timings on the row, and the abort
 * handle of a step running in this process (cancel and shutdown kill its process tree through it).
 */
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx, type Tx } from "../../core/db/client";
import { notify } from "../notifications/service";
import { builds } from "./tables";
import { buildById, timingsOf, type BuildRow, type StepName, type StoredTiming } from "./rows";
import { dispatchBuilds } from "./dispatch";
import { reportToHost } from "./host";
import { buildDirOf, releaseBuildDisk } from "./disk";
import type { FailureKind } from "./model";

const LIVE = "builds.live";

/** Why a running step was aborted. */
export type AbortWhy = "cancel" | "shutdown";

export interface LiveStep {
  controller: AbortController;
  why: AbortWhy | null;
  /** Settles when the step's handler has recorded its outcome. */
  done: Promise<void>;
}

export function liveSteps(core: Core): Map<number, LiveStep> {
  let m = core.locals.get(LIVE) as Map<number, LiveStep> | undefined;
  if (!m) core.locals.set(LIVE, (m = new Map()));
  return m;
}

/** Kill the process tree of a build's running step (if it runs in this process). */
export function abortLive(core: Core, buildId: number, why: AbortWhy): boolean {
  const live = liveSteps(core).get(buildId);
  if (!live) return false;
  live.why ??= why;
  live.controller.abort(why);
  return true;
}

/** The build's work dir (clone, scratch, image files): `run/builds/<id>/`, its own file system when capped (disk.ts). */
export function workDirOf(core: Core, buildId: number): string {
  return buildDirOf(core, buildId);
}

/**
 * Create `parts` under `base`, each 0755 whatever the umask: the sandbox user of a root ops
 * (65534) walks through them to the build's context and cache.
 */
export function reachableDir(base: string, ...parts: string[]): string {
  let dir = base;
  for (const part of parts) {
    dir = path.join(dir, part);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
  }
  return dir;
}

/** Whether `step` has a timing that was opened and not closed. */
export function hasOpenTiming(row: Pick<BuildRow, "stepTimings">, step: StepName): boolean {
  return timingsOf(row).some((s) => s.step === step && s.finishedAt === undefined);
}

/** Open a timing for `step` (it runs now); returns the row as it is now. */
export function openTiming(core: Core, t: Tx, row: BuildRow, step: StepName): BuildRow {
  const timings = timingsOf(row).filter((s) => !(s.step === step && s.finishedAt === undefined));
  timings.push({ step, startedAt: core.clock.now() });
  return t.update(builds).set({ stepTimings: JSON.stringify(timings) }).where(eq(builds.id, row.id)).returning().get()!;
}

/** Timings with `step`'s open timing closed (or a closed one added when it never opened). */
export function closeTiming(core: Core, timings: StoredTiming[], step: StepName, result: { ok?: boolean; note?: string }): StoredTiming[] {
  const now = core.clock.now();
  const out = [...timings];
  const i = out.findLastIndex((s) => s.step === step && s.finishedAt === undefined);
  const closed: StoredTiming = { ...(i >= 0 ? out[i] : { step, startedAt: now }), finishedAt: now };
  if (result.ok !== undefined) closed.ok = result.ok;
  if (result.note !== undefined) closed.note = result.note;
  if (i >= 0) out[i] = closed;
  else out.push(closed);
  return out;
}

export interface BuildEnd {
  status: "healthy" | "published" | "failed" | "cancelled" | "rolled_back";
  failureKind?: FailureKind | null;
  error?: string | null;
  /** Close this step's timing. */
  step?: StepName;
  ok?: boolean;
  note?: string;
  /** More timings to append after it (a skipped deploy …). */
  more?: StoredTiming[];
}

/**
 * End a build that is in one of `from` (in one transaction with its `build.failed` notices);
 * null when it was not (someone else moved it). Call `afterEnd` once the transaction committed.
 */
export function endBuild(core: Core, buildId: number, from: readonly string[], end: BuildEnd): BuildRow | null {
  return tx(core.db, (t) => endBuildIn(core, t, buildId, from, end));
}

/** `endBuild` inside the caller's transaction. */
export function endBuildIn(core: Core, t: Tx, buildId: number, from: readonly string[], end: BuildEnd): BuildRow | null {
  const row = buildById(t, buildId);
  if (!row || !from.includes(row.status)) return null;
  let timings = timingsOf(row);
  if (end.step) timings = closeTiming(core, timings, end.step, { ok: end.ok, note: end.note });
  // A timing left open by an earlier step (a crash) is closed as not finished.
  timings = timings.map((s) => (s.finishedAt === undefined ? { ...s, finishedAt: core.clock.now(), ok: false, note: s.note ?? "did not finish" } : s));
  if (end.more) timings.push(...end.more);
  const updated = t
    .update(builds)
    .set({
      status: end.status,
      failureKind: end.failureKind ?? null,
      error: end.error ?? null,
      finishedAt: core.clock.now(),
      stepTimings: JSON.stringify(timings),
      stepItem: null,
      cancelRequested: false,
    })
    .where(eq(builds.id, buildId))
    .returning()
    .get();
  if (end.status === "failed" || end.status === "rolled_back") {
    notify(core, t, {
      kind: "build.failed",
      projectId: row.projectId,
      params: { project: row.project, environment: row.environment, service: row.service, build: row.id, failure_kind: end.failureKind ?? "internal", commit: row.commitSha.slice(0, 12), ...(row.kind === "publish" && row.branch ? { tag: row.branch } : {}) },
      link: `/projects/${row.project}/builds/${row.id}`,
    });
  }
  return updated;
}

const ENDED = "builds.ended";

/**
 * Install what runs after every build's end (reuse.ts: builds waiting for this one's image move
 * on). An installed hook rather than an import: reuse.ts ends builds through this file.
 */
export function onBuildEnded(core: Core, fn: (core: Core, row: BuildRow) => Promise<void>): void {
  core.locals.set(ENDED, fn);
}

/**
 * After a build ended: its work dir goes, the host hears the verdict, a queued build may start,
 * and builds waiting for its image move on.
 */
export async function afterEnd(core: Core, row: BuildRow): Promise<void> {
  try {
    await releaseBuildDisk(core, row.id);
    rmSync(workDirOf(core, row.id), { recursive: true, force: true });
  } catch (e) {
    core.log.warn("build work dir not removed", { build: row.id, err: (e as Error).message });
  }
  dispatchBuilds(core);
  await reportToHost(core, row.id);
  const ended = core.locals.get(ENDED) as ((core: Core, row: BuildRow) => Promise<void>) | undefined;
  if (ended) await ended(core, row);
}
