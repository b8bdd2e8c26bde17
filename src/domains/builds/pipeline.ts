/**
 * The build state machine on the scheduler. Each working state runs as one `builds.step` item
 * (leased and renewed while it runs); when its step is done, the same transaction that records
 * the step moves the build to the next state and enqueues that state's item, or ends the build.
 * After `signing` an image build moves to `deploying` and is handed to the installed deployer
 * (deployer.ts), or ends `healthy` with a note when it is not deployed. A publish build runs
 * `cloning`, then four steps in `publishing` (one item each, publish.ts), and ends `published`.
 *
 * No build is left in a running state:
 * - cancel kills the running step's process tree at once and the build reads `cancelled` at the
 *   step's end (a step that runs no process finishes first);
 * - a shutdown kills the process steps (checks, building; a publish's crates, layers) and fails
 *   their builds `internal`;
 * - at `ops serve` start-up (`recoverBuilds`), a build found in a working state belonged to a
 *   process that is gone: the steps that are safe to repeat (cloning, scanning, pushing, signing;
 *   a publish's plan, crates, locales) run again from the work dir; checks, building and a
 *   publish's layers, whose processes ran the repository's commands, died with ops and may have
 *   left the work dir half-written, fail `internal` saying so. A build in `deploying` whose
 *   hand-over never completed is handed over again.
 * An item whose build names another item (`step_item`) is stale and does nothing, so a lease a
 * dead worker left expiring later cannot run a step twice.
 */
import { rmSync } from "node:fs";
import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx, type Tx } from "../../core/db/client";
import { schedulerItems } from "../../core/tables";
import { OpsError } from "../../core/errors";
import type { ItemContext } from "../../core/scheduler";
import { builds, buildLogLines } from "./tables";
import { buildById, buildsIn, timingsOf, type BuildRow, type StepName, type StoredTiming } from "./rows";
import { WORKING_STATES, type BuildState } from "./model";
import { STEP_ITEM, dispatchBuilds, enqueueStep, type StepPayload } from "./dispatch";
import { NO_CHECKS, STEPS, type StepDef, type StepDone } from "./steps";
import { publishStateAfter, publishStepOf } from "./publish";
import { StepFailure, parsePlan } from "./plan";
import { appendLines, openBuildLog, type BuildLog } from "./log";
import { reportToHost } from "./host";
import { releaseBuildDisk } from "./disk";
import { buildDeployer, deployDecision, type DeployableBuild } from "./deployer";
import { afterPark, installReuse, isParked, releaseFollowers, releaseParked, settleClaimIn } from "./reuse";
import { abortLive, afterEnd, closeTiming, endBuild, endBuildIn, hasOpenTiming, liveSteps, openTiming, workDirOf, type LiveStep } from "./lifecycle";

export const PRUNE_TASK = "builds.prune-logs";
/** Builds of a service whose logs are kept whatever their age. */
const KEEP_NEWEST_LOGS = 5;

/** Register the step item and the log retention task. */
export function defineBuildJobs(core: Core): void {
  installReuse(core);
  core.scheduler.defineItem(STEP_ITEM, (payload, item) => runStepItem(core, payload as StepPayload, item), { maxAttempts: 1 });
  core.scheduler.defineTask(PRUNE_TASK, "23 3 * * *", () => {
    pruneBuildLogs(core);
  });
}

/** The scheduler's handler of `builds.step`. Never throws: every outcome is recorded on the build. */
async function runStepItem(core: Core, payload: StepPayload, item: ItemContext): Promise<void> {
  const row = buildById(core.db, Number(payload?.build));
  if (!row || row.stepItem !== item.id || row.status !== payload.state) return;
  if (item.resumed) {
    // The lease lapsed: its worker died, or (under heavy load) it still runs here.
    if (!liveSteps(core).has(row.id)) await recoverBuild(core, row, "its worker stopped");
    return;
  }
  if (row.status === "deploying") return handOver(core, row);
  const def = stepDefOf(row);
  if (!def) return;
  if (row.cancelRequested) {
    // Cancelled between two steps: the timing its hand-over opened ends as cancelled.
    const ended = endBuild(core, row.id, [row.status], hasOpenTiming(row, def.step) ? { status: "cancelled", step: def.step, ok: false, note: "cancelled" } : { status: "cancelled" });
    if (ended) await afterEnd(core, ended);
    return;
  }
  // Registered before anything awaits, so a cancel from now on reaches this step's processes.
  const controller = new AbortController();
  const settled = Promise.withResolvers<void>();
  const live: LiveStep = { controller, why: null, done: settled.promise };
  liveSteps(core).set(row.id, live);
  // The hand-over that enqueued this item opened the step's timing; a re-run opens a new one.
  const opened = payload.opened === true && item.attempt === 1 && hasOpenTiming(row, def.step);
  const current = opened ? row : tx(core.db, (t) => openTiming(core, t, row, def.step));
  // The host hears of the new state in the background (in order); the build's end waits for it.
  void reportToHost(core, row.id);
  // A server that starts draining stops its process steps at once rather than after the grace period.
  const drainWatch = def.killsProcesses ? setInterval(() => core.state.draining && abortLive(core, row.id, "shutdown"), 250) : null;
  const log = openBuildLog(core, row.id, current);
  let result: StepDone | StepFailure;
  let next: string | null = null;
  try {
    const work = def.run({ core, row: current, step: def.step, log, signal: controller.signal, workDir: workDirOf(core, row.id) });
    // The builder bounds its own commands; the other steps get the same limit here.
    result = def.killsProcesses ? await work : await withinStepLimit(work, core.config.buildStepTimeoutSecs, def.step);
  } catch (e) {
    if (e instanceof StepFailure) result = e;
    else {
      core.log.error("build step failed unexpectedly", { build: row.id, step: def.step, err: e });
      result = new StepFailure("internal", `the ${def.step} step failed unexpectedly: ${(e as Error)?.message ?? String(e)}`);
    }
  } finally {
    if (drainWatch) clearInterval(drainWatch);
  }
  try {
    if (result instanceof StepFailure) log.add(def.step, "error", `${def.step} failed (${result.kind}): ${result.message}`);
    else if (result.cancelled) log.add(def.step, "warn", live.why === "shutdown" ? "ops is shutting down: the step's processes were stopped" : "cancelled: the step's processes were stopped");
    next = await advance(core, row.id, def, result, live.why, log, item);
  } catch (e) {
    core.log.error("build step not recorded", { build: row.id, step: def.step, err: e });
    try {
      log.close(def.step);
    } catch (err) {
      core.log.error("build step's last log lines not written", { build: row.id, step: def.step, err });
    }
  } finally {
    // The entry may already be the next step's, when something started it before this cleanup.
    if (liveSteps(core).get(row.id) === live) liveSteps(core).delete(row.id);
    settled.resolve();
  }
  // The hand-over: the next step's item (committed with this step's result) starts in this turn
  // rather than when a timer and a search for due work find it.
  if (next) core.scheduler.startNow(next);
  // A signed image: builds with the same inputs waiting for it take it now.
  if (def.state === "signing" && row.kind === "image") await releaseFollowers(core, row.id);
}

/**
 * `work`, or a StepFailure (`internal`) once it took longer than `secs`. The work itself cannot be
 * interrupted (a host fetch, a push): it finishes or fails unobserved, and its result is dropped.
 */
export function withinStepLimit<T>(work: Promise<T>, secs: number, step: StepName): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StepFailure("internal", `the ${step} step did not finish within ${secs}s (OPS_BUILD_STEP_TIMEOUT_SECS)`)), secs * 1000);
  });
  work.catch(() => undefined);
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

const NEXT: Partial<Record<BuildState, BuildState>> = { cloning: "checks", checks: "building", building: "scanning", scanning: "pushing", pushing: "signing" };

/** The step a build in a working state runs now (an image build's state's, a publish build's next), or null. */
function stepDefOf(row: Pick<BuildRow, "kind" | "status" | "stepTimings">): StepDef | null {
  return row.kind === "publish" ? publishStepOf(row) : (STEPS.find((s) => s.state === row.status) ?? null);
}

/** The step a build of `kind` runs in `state`, after the steps in `timings`; null when none. */
function stepOpening(kind: BuildRow["kind"], state: BuildState, timings: StoredTiming[]): StepName | null {
  if (state === "deploying") return "deploy";
  return stepDefOf({ kind, status: state, stepTimings: JSON.stringify(timings) })?.step ?? null;
}

/** `fn` in one transaction with the step's last log lines (the writer is closed). */
function withStepLog<T>(core: Core, log: BuildLog, step: StepName, fn: (t: Tx) => T): T {
  const out = tx(core.db, (t) => {
    log.closeIn(t, step);
    return fn(t);
  });
  log.committed();
  return out;
}

/**
 * Record a step's result with its last log lines and move the build on (next state, deploying,
 * or an end). Returns the item of the build's next state, for the caller to start once it is done
 * with this step.
 */
async function advance(core: Core, buildId: number, def: StepDef, result: StepDone | StepFailure, aborted: LiveStep["why"], log: BuildLog, item: ItemContext): Promise<string | null> {
  const from = [def.state];
  // Each outcome ends this step's item in the transaction that records it.
  const record = <T>(fn: (t: Tx) => T): T =>
    withStepLog(core, log, def.step, (t) => {
      item.finishIn(t);
      return fn(t);
    });
  if (result instanceof StepFailure) {
    const ended = record((t) => endBuildIn(core, t, buildId, from, { status: "failed", failureKind: result.kind, error: result.message, step: def.step, ok: false, note: result.kind }));
    if (ended) await afterEnd(core, ended);
    return null;
  }
  if (result.cancelled) {
    const end =
      aborted === "shutdown"
        ? ({ status: "failed", failureKind: "internal", error: `ops shut down during the ${def.step} step; retry the build`, step: def.step, ok: false, note: "ops shut down" } as const)
        : ({ status: "cancelled", step: def.step, ok: false, note: "cancelled" } as const);
    const ended = record((t) => endBuildIn(core, t, buildId, from, end));
    if (ended) await afterEnd(core, ended);
    return null;
  }
  let said: string | null = null;
  const moved = record((t) => {
    const row = buildById(t, buildId);
    if (!row || row.status !== def.state) return null;
    // The clone claims its inputs (reuse.ts): a build that another one's image serves is parked,
    // holding no builder.
    const claimed = result.claim && !row.cancelRequested ? settleClaimIn(core, t, row, result.claim, result.set ?? {}) : null;
    if (claimed?.kind === "parked") return { parked: claimed.leader!, line: claimed.line! };
    said = claimed?.line ?? null;
    const timings = closeTiming(core, timingsOf(row), def.step, result.skipped ? { note: result.note } : { ok: true, note: result.note });
    let next = claimed?.kind === "reclone" ? ("cloning" as const) : row.kind === "publish" ? publishStateAfter(def.step) : NEXT[def.state];
    if (next === "checks" && parsePlan(result.set?.plan ?? row.plan)?.checks.length === 0) {
      // Nothing to check: the step is recorded as skipped without a scheduler round trip.
      const now = core.clock.now();
      timings.push({ step: "checks", startedAt: now, finishedAt: now, note: NO_CHECKS });
      next = "building";
    }
    const recorded = { ...result.set, stepTimings: JSON.stringify(timings) };
    const recordRow = () => t.update(builds).set(recorded).where(eq(builds.id, buildId)).run();
    if (row.cancelRequested) {
      recordRow();
      return { ended: endBuildIn(core, t, buildId, from, { status: "cancelled" }) };
    }
    // Moving on: the step's result, the next state with its step's timing open, and its item
    // are one write of the row.
    const moveTo = (state: BuildState) => {
      const step = stepOpening(row.kind, state, timings);
      const opened = step ? [...timings, { step, startedAt: core.clock.now() }] : timings;
      return enqueueStep(core, t, buildId, state, { startNow: true, opened: step !== null, set: { ...recorded, stepTimings: JSON.stringify(opened), status: state } });
    };
    if (next) return { next, item: moveTo(next) };
    if (row.kind === "publish") {
      recordRow();
      return { ended: endBuildIn(core, t, buildId, from, { status: "published" }) };
    }
    const decision = deployDecision(core, row);
    if (decision.deploy) return { next: "deploying" as const, item: moveTo("deploying") };
    recordRow();
    const now = core.clock.now();
    return { ended: endBuildIn(core, t, buildId, from, { status: "healthy", more: [{ step: "deploy", startedAt: now, finishedAt: now, note: decision.why }] }) };
  });
  if (!moved) return null;
  if (said) appendLines(core, buildId, "clone", [["info", said]]);
  if ("parked" in moved && moved.parked !== undefined) {
    appendLines(core, buildId, "clone", [["info", moved.line!]]);
    await afterPark(core, buildId, moved.parked);
    return null;
  }
  if ("ended" in moved && moved.ended?.status === "healthy") {
    const note = timingsOf(moved.ended).at(-1)?.note;
    if (note) appendLines(core, buildId, "deploy", [["info", note]]);
  }
  if ("ended" in moved) {
    if (moved.ended) await afterEnd(core, moved.ended);
    return null;
  }
  // The builder's slot is free while the rollout runs.
  if (moved.next === "deploying") dispatchBuilds(core);
  return moved.item;
}

function deployableOf(row: BuildRow): DeployableBuild {
  return {
    id: row.id,
    project: row.project,
    environment: row.environment,
    service: row.service,
    imageDigest: row.imageDigest!,
    imageRef: row.imageRef!,
    commitSha: row.commitSha,
    message: row.message,
    author: row.author,
    requestedBy: row.requestedBy,
    trigger: row.trigger,
    sourceId: row.sourceId,
    repo: row.repo,
  };
}

/** `deploying`: hand the signed image to the deployer; its verdict comes through recordBuildVerdict. */
async function handOver(core: Core, row: BuildRow): Promise<void> {
  const deployer = buildDeployer(core);
  const step: StepName = "deploy";
  if (!deployer) {
    const ended = endBuild(core, row.id, ["deploying"], { status: "failed", failureKind: "deploy", error: "no deployer is installed in this server: the rollout cannot be started", step, ok: false, note: "deploy" });
    if (ended) await afterEnd(core, ended);
    return;
  }
  // Nothing of the work dir is needed any more.
  await releaseBuildDisk(core, row.id);
  rmSync(workDirOf(core, row.id), { recursive: true, force: true });
  if (!hasOpenTiming(row, step)) tx(core.db, (t) => openTiming(core, t, row, step));
  void reportToHost(core, row.id);
  try {
    await deployer.deployBuild(core, deployableOf(row));
    core.db
      .update(builds)
      .set({ deployHandedAt: core.clock.now() })
      .where(and(eq(builds.id, row.id), eq(builds.status, "deploying")))
      .run();
    appendLines(core, row.id, step, [["info", `rollout of ${row.imageDigest} to ${row.environment} recorded; waiting for its verdict`]]);
  } catch (e) {
    const message = e instanceof OpsError ? e.message : `the rollout could not be started: ${(e as Error)?.message ?? String(e)}`;
    if (!(e instanceof OpsError)) core.log.error("deployer failed", { build: row.id, err: e });
    appendLines(core, row.id, step, [["error", `deploy refused: ${message}`]]);
    const ended = endBuild(core, row.id, ["deploying"], { status: "failed", failureKind: "deploy", error: message, step, ok: false, note: "deploy" });
    if (ended) await afterEnd(core, ended);
  }
}

export type BuildVerdict = { status: "healthy" } | { status: "rolled_back"; failureKind: "health"; error: string } | { status: "failed"; failureKind: "deploy"; error: string };

/**
 * The deployer's verdict on a build it was handed (only a build in `deploying` takes one: else a
 * no-op returning false). Sets `finished_at` and the `deploy` timing, raises `build.failed` for a
 * failure, and reports to the code host (in the background). Call it outside a transaction.
 */
export function recordBuildVerdict(core: Core, buildId: number, verdict: BuildVerdict): boolean {
  const ended =
    verdict.status === "healthy"
      ? endBuild(core, buildId, ["deploying"], { status: "healthy", step: "deploy", ok: true })
      : endBuild(core, buildId, ["deploying"], { status: verdict.status, failureKind: verdict.failureKind, error: verdict.error, step: "deploy", ok: false, note: verdict.failureKind });
  if (!ended) return false;
  appendLines(core, buildId, "deploy", [[verdict.status === "healthy" ? "info" : "error", verdict.status === "healthy" ? "the rollout is healthy" : `${verdict.status.replace("_", " ")}: ${verdict.error}`]]);
  void afterEnd(core, ended);
  return true;
}

/** A build whose step's worker is gone: run the step again, or fail it (see the file comment). */
async function recoverBuild(core: Core, row: BuildRow, why: string): Promise<void> {
  const def = stepDefOf(row);
  if (!def) return;
  if (!def.repeatable) {
    const where = row.kind === "publish" ? `${row.status}, step ${def.step}` : row.status;
    const error = `ops stopped while the build was in ${where} (${why}); the step's processes ended with it. Retry the build.`;
    appendLines(core, row.id, def.step, [["error", error]]);
    const ended = endBuild(core, row.id, [row.status], { status: "failed", failureKind: "internal", error, step: def.step, ok: false, note: "interrupted" });
    if (ended) await afterEnd(core, ended);
    return;
  }
  appendLines(core, row.id, def.step, [["warn", `ops stopped during the ${def.step} step (${why}); running it again`]]);
  tx(core.db, (t) => {
    const now = buildById(t, row.id);
    if (now?.status === row.status) enqueueStep(core, t, row.id, row.status as BuildState);
  });
}

/**
 * At `ops serve` start-up, before the scheduler runs: settle every build a stopped server left
 * running (see the file comment), then start queued builds.
 */
export async function recoverBuilds(core: Core): Promise<void> {
  // A step whose item no worker took yet needs nothing: the scheduler runs it.
  // A build parked on another's image runs nothing (reuse.ts): it moves on with its leader.
  const stale = buildsIn(core.db, WORKING_STATES).filter((r) => !isParked(r)).filter((r) => !r.stepItem || core.db.select({ state: schedulerItems.state }).from(schedulerItems).where(eq(schedulerItems.id, r.stepItem)).get()?.state !== "pending");
  for (const row of stale) await recoverBuild(core, row, "found at start-up");
  if (stale.length > 0) core.log.warn("builds a stopped server left running were settled", { builds: stale.map((r) => `${r.id}:${r.status}`) });
  const deployer = buildDeployer(core);
  for (const row of buildsIn(core.db, ["deploying"])) {
    if (!deployer) {
      const error = "ops restarted without a deployer: the rollout of this build cannot be followed";
      appendLines(core, row.id, "deploy", [["error", error]]);
      const ended = endBuild(core, row.id, ["deploying"], { status: "failed", failureKind: "deploy", error, step: "deploy", ok: false, note: "deploy" });
      if (ended) await afterEnd(core, ended);
    } else if (row.deployHandedAt === null) {
      tx(core.db, (t) => enqueueStep(core, t, row.id, "deploying"));
    }
    // A handed-over build waits for the deployer's own recovery to give its verdict.
  }
  await releaseParked(core);
  dispatchBuilds(core);
}

/** On close: stop running process steps (their builds fail `internal`), bounded by the grace period. */
export async function stopLiveBuilds(core: Core, graceMs: number): Promise<void> {
  const live = [...liveSteps(core).entries()];
  if (live.length === 0) return;
  for (const [id] of live) abortLive(core, id, "shutdown");
  await Promise.race([Promise.allSettled(live.map(([, l]) => l.done)), Bun.sleep(graceMs)]);
}

/**
 * The log retention task: lines of builds that ended more than OPS_LOG_RETENTION_DAYS ago are
 * deleted, except for each service's KEEP_NEWEST_LOGS newest builds. Build rows are kept.
 */
export function pruneBuildLogs(core: Core): number {
  const before = core.clock.now() - core.config.logRetentionDays * 86_400_000;
  const old = core.db
    .select({ id: builds.id })
    .from(builds)
    .where(
      and(
        lt(builds.finishedAt, before),
        sql`${builds.logLines} > 0`,
        sql`(select count(*) from builds n where n.project_id = ${builds.projectId} and n.environment = ${builds.environment} and n.service = ${builds.service} and n.id > ${builds.id}) >= ${KEEP_NEWEST_LOGS}`,
      ),
    )
    .all()
    .map((r) => r.id);
  for (let i = 0; i < old.length; i += 500) {
    const ids = old.slice(i, i + 500);
    tx(core.db, (t) => {
      t.delete(buildLogLines).where(inArray(buildLogLines.buildId, ids)).run();
      t.update(builds).set({ logLines: 0 }).where(inArray(builds.id, ids)).run();
    });
  }
  return old.length;
}
