/**
 * Job runs: requested by hand (202, one live run per job) or by the job's cron schedule, executed
 * by the scheduler in its project's sandbox (jobArgv below: bwrap, its own network namespace, the project's host user) with the env group's
 * values as environment, a scratch working directory under `run/jobs/`, a timeout and captured
 * output (stdout `info`, stderr `warn`, ops's own notes `info`/`error`). Values of `secret`
 * variables are masked (`***`) in the captured output, as CI systems do.
 *
 * A run survives a restart as a consistent record: a graceful shutdown stops live runs and marks
 * them failed; after a crash, `recoverInterruptedRuns` (ops serve start-up) marks the runs left
 * `running` failed with the reason, and the scheduler never runs them twice.
 */
import { rmSync } from "node:fs";
import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import { coreLocal, type Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, SYSTEM_ACTOR } from "../../core/audit";
import { tx, type Queryable } from "../../core/db/client";
import { iso, isoOrNull } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { nextCronRun, type ItemContext } from "../../core/scheduler";
import { assertNotArchived } from "../access/service";
import { startCommand, secretMasker, DEFAULT_PATH, type RunningCommand, type SecretMasker } from "../../adapters/runtime/process";
import { projectIdentity, sandboxNetworkOf, type Netns } from "../../adapters/sandbox";
import { hostTrustVariables, sandboxArgv } from "../../adapters/sandbox/bwrap";
import { findSandboxTools, sandboxDir } from "../../adapters/sandbox/users";
import { appendPlatformLogs, type PlatformLogEntry } from "../observability/service";
import { jobRunLines, jobRuns, jobSchedules } from "./tables";
import { auditTarget, findResource, getResourceRow, resourceById, specOf, type Place, type ResourceRow } from "./rows";
import { liveRun } from "./kind-rules";
import { jobHomeOf, jobLimits, type JobLimits } from "./job-limits";
import { secretValues } from "./kinds";
import type { JobSpec } from "./specs";
import type { JobLogResponse, JobRunResponse } from "./model";

export const JOB_RUN_ITEM = "resources.job-run";
export const JOB_SCHEDULE_TASK = "resources.job-schedules";
/** Lines kept per run; the rest is counted, not stored. */
export const MAX_RUN_LINES = 10_000;
const DEFAULT_TIMEOUT_SECS = 3600;
const LIVE_KEY = "resources.live-runs";

type RunRow = typeof jobRuns.$inferSelect;

export function toRunResponse(r: RunRow): JobRunResponse {
  return {
    duration_secs: r.startedAt !== null && r.finishedAt !== null ? Math.floor((r.finishedAt - r.startedAt) / 1000) : null,
    environment: r.environment,
    error: r.error,
    exit_code: r.exitCode,
    finished_at: isoOrNull(r.finishedAt),
    id: r.id,
    job: r.job,
    lines: r.lines,
    queued_at: iso(r.queuedAt),
    requested_by: r.requestedBy,
    started_at: isoOrNull(r.startedAt),
    status: r.status,
    trigger: r.trigger,
  };
}

function liveRuns(core: Core): Map<number, RunningCommand> {
  return coreLocal<Map<number, RunningCommand>>(core, LIVE_KEY, () => new Map());
}

function queueRun(core: Core, t: Parameters<Parameters<typeof tx>[1]>[0], job: ResourceRow, trigger: "manual" | "schedule", requestedBy: string): RunRow {
  const run = t
    .insert(jobRuns)
    .values({ resourceId: job.id, environment: job.environment ?? "", job: job.name, status: "queued", trigger, requestedBy, queuedAt: core.clock.now() })
    .returning()
    .get();
  core.scheduler.enqueue(t, JOB_RUN_ITEM, { runId: run.id }, { maxAttempts: 1 });
  return run;
}

/** POST …/job/{name}/run: queue a manual run. 409 while one is queued or running, or archived. */
export function requestRun(core: Core, place: Place, name: string, auth: AuthContext): JobRunResponse {
  assertNotArchived(place.project);
  const job = getResourceRow(core.db, place, "job", name);
  const actor = actorOf(auth.principal, auth.meta);
  const run = tx(core.db, (t) => {
    const live = liveRun(t, job.id);
    if (live) throw new OpsError("conflict", `Run ${live.id} of job "${name}" is ${live.status}; one live run per job.`, { run: live.id });
    const r = queueRun(core, t, job, "manual", auth.principal.email ?? auth.principal.name);
    auditAllowed(core, t, actor, "jobs.run", auditTarget("job", name), { project: place.project.slug, environment: place.environment }, { run: r.id });
    return r;
  });
  return toRunResponse(run);
}

/** The scheduler task: queue a run for every job whose cron fired; one run for fires missed while down. */
export function enqueueDueRuns(core: Core): number {
  const now = core.clock.now();
  const due = core.db
    .select({ resourceId: jobSchedules.resourceId, cron: jobSchedules.cron })
    .from(jobSchedules)
    .where(lte(jobSchedules.nextRunAt, now))
    .all();
  let queued = 0;
  for (const d of due) {
    tx(core.db, (t) => {
      const job = resourceById(t, d.resourceId);
      if (!job) return;
      t.update(jobSchedules).set({ nextRunAt: nextCronRun(d.cron, now) }).where(eq(jobSchedules.resourceId, d.resourceId)).run();
      const live = liveRun(t, job.id);
      if (live) {
        core.log.info("scheduled job run skipped: a run is still live", { job: job.name, run: live.id });
        return;
      }
      const project = core.access.findProjectById(job.projectId);
      if (project?.archived) return;
      const run = queueRun(core, t, job, "schedule", "scheduler");
      auditAllowed(core, t, SYSTEM_ACTOR, "jobs.run", auditTarget("job", job.name), { project: project?.slug ?? null, environment: job.environment }, { run: run.id, trigger: "schedule" });
      queued++;
    });
  }
  return queued;
}

/** Runs of a job, newest first. */
export function listRuns(core: Core, place: Place, name: string, limit: number): JobRunResponse[] {
  const job = getResourceRow(core.db, place, "job", name);
  return core.db.select().from(jobRuns).where(eq(jobRuns.resourceId, job.id)).orderBy(desc(jobRuns.id)).limit(limit).all().map(toRunResponse);
}

function getRun(q: Queryable, place: Place, name: string, runId: number): RunRow {
  const job = getResourceRow(q, place, "job", name);
  const run = q.select().from(jobRuns).where(and(eq(jobRuns.id, runId), eq(jobRuns.resourceId, job.id))).get();
  if (!run) throw new OpsError("not_found", `No run ${runId} of job "${name}".`);
  return run;
}

/** One page of a run's output after sequence `after`. */
export function runLog(core: Core, place: Place, name: string, runId: number, after: number, limit: number): JobLogResponse {
  const run = getRun(core.db, place, name, runId);
  const rows = core.db
    .select()
    .from(jobRunLines)
    .where(and(eq(jobRunLines.runId, run.id), gt(jobRunLines.seq, after)))
    .orderBy(asc(jobRunLines.seq))
    .limit(limit)
    .all();
  return {
    lines: rows.map((l) => ({ at: iso(l.at), level: l.level, line: l.line, seq: l.seq })),
    live: run.status === "queued" || run.status === "running",
    next: rows.length > 0 ? rows[rows.length - 1].seq : after,
  };
}

/**
 * Buffers a run's lines and writes them in batches (each batch one short transaction), then hands
 * the same lines to the telemetry store (service = the job, target `ops.job-run/<run>`), so a log
 * search finds them beside the services' own lines.
 */
class LineWriter {
  private seq: number;
  private kept = 0;
  private dropped = 0;
  private buf: Array<typeof jobRunLines.$inferInsert> = [];
  private timer: ReturnType<typeof setInterval>;
  private readonly platform: Omit<PlatformLogEntry, "level" | "message" | "timestamp"> | null;
  /** The env group's secret values in every form build logs mask (the runner masks with it too). */
  readonly mask: SecretMasker;

  constructor(
    private readonly core: Core,
    private readonly runId: number,
    mask: readonly string[],
  ) {
    this.mask = secretMasker(mask);
    const last = core.db.select({ n: sql<number>`coalesce(max(${jobRunLines.seq}), 0)` }).from(jobRunLines).where(eq(jobRunLines.runId, runId)).get();
    this.seq = last?.n ?? 0;
    this.kept = this.seq;
    this.timer = setInterval(() => this.flush(), 250);
    const run = core.db.select({ resourceId: jobRuns.resourceId, environment: jobRuns.environment, job: jobRuns.job }).from(jobRuns).where(eq(jobRuns.id, runId)).get();
    const job = run ? resourceById(core.db, run.resourceId) : null;
    this.platform = run && job ? { project: job.projectId, environment: run.environment, service: run.job, target: `ops.job-run/${runId}` } : null;
  }

  add(level: "info" | "warn" | "error", text: string): void {
    if (this.kept >= MAX_RUN_LINES) {
      this.dropped++;
      return;
    }
    const line = this.mask(text);
    this.kept++;
    this.buf.push({ runId: this.runId, seq: ++this.seq, at: this.core.clock.now(), level, line });
    if (this.buf.length >= 200) this.flush();
  }

  flush(): void {
    if (this.buf.length === 0) return;
    const batch = this.buf;
    this.buf = [];
    tx(this.core.db, (t) => {
      for (const row of batch) t.insert(jobRunLines).values(row).run();
      t.update(jobRuns).set({ lines: this.seq }).where(eq(jobRuns.id, this.runId)).run();
    });
    if (this.platform) {
      const p = this.platform;
      appendPlatformLogs(this.core, batch.map((l) => ({ ...p, level: l.level as PlatformLogEntry["level"], message: l.line, timestamp: l.at }))).catch((e) =>
        this.core.log.warn("job run lines not copied to the log store", { run: this.runId, err: e }),
      );
    }
  }

  close(): void {
    clearInterval(this.timer);
    if (this.dropped > 0) {
      this.buf.push({ runId: this.runId, seq: ++this.seq, at: this.core.clock.now(), level: "warn", line: `${this.dropped} more lines not kept (a run keeps ${MAX_RUN_LINES})` });
    }
    this.flush();
  }
}

function finishRun(core: Core, runId: number, status: "succeeded" | "failed", exitCode: number | null, error: string | null): void {
  core.db.update(jobRuns).set({ status, exitCode, error, finishedAt: core.clock.now() }).where(eq(jobRuns.id, runId)).run();
}

/** The run's home on the host (job-limits.ts makes it, capped). */
function workDirOf(core: Core, _job: ResourceRow, runId: number): string {
  return jobHomeOf(core, runId);
}

/** Where a run's home is inside its sandbox. */
const JOB_HOME = "/home/job";

/**
 * The argv that runs a job's command in its project's sandbox (DESIGN §6): the host's system
 * trees read-only, its home writable, a sized /tmp, its own network namespace, the project's host
 * user, its limits' cgroups (job-limits.ts); nothing of ops's data dir. A job is project code like a build step.
 */
function jobArgv(core: Core, job: ResourceRow, workDir: string, command: string, netns: Netns | null, limits: Pick<JobLimits, "joinFirst" | "cgroupProcs">): string[] {
  const tools = findSandboxTools(DEFAULT_PATH, "job runs");
  if (typeof tools === "string") throw new Error(tools);
  const ids = projectIdentity(core, job.projectId);
  sandboxDir(workDir, ids);
  const network = netns ? { enter: netns.enterArgv(), ...sandboxNetworkOf(core).etc("ops-job") } : null;
  return sandboxArgv(tools, { mounts: [{ host: workDir, inside: JOB_HOME }], chdir: JOB_HOME, hide: [core.config.dataDir], tmpfs: ["/tmp"], tmpSizeMb: core.config.sandboxTmpMb, joinFirst: limits.joinFirst, cgroupProcs: limits.cgroupProcs, user: "host", hostUser: ids, hostname: "ops-job", network }, ["/bin/sh", "-c", command]);
}

/** The scheduler item handler: execute one queued run. Never throws for a failing command. */
export async function executeRun(core: Core, payload: unknown, item: ItemContext): Promise<void> {
  const runId = Number((payload as { runId?: unknown })?.runId);
  const run = core.db.select().from(jobRuns).where(eq(jobRuns.id, runId)).get();
  if (!run) return;
  if (run.status === "running") {
    // The worker that started it died; a job may not be safe to repeat, so record it and stop.
    markInterrupted(core, run.id, "interrupted: ops stopped while the run was in flight");
    return;
  }
  if (run.status !== "queued") return;
  const job = resourceById(core.db, run.resourceId);
  if (!job) return finishRun(core, run.id, "failed", null, "the job was deleted");
  const spec = specOf<JobSpec>(job);
  const timeoutSecs = spec.timeout_secs ?? DEFAULT_TIMEOUT_SECS;
  const workDir = workDirOf(core, job, run.id);
  const env: Record<string, string> = {
    PATH: DEFAULT_PATH,
    HOME: JOB_HOME,
    ...hostTrustVariables(),
    OPS_PROJECT: core.access.findProjectById(job.projectId)?.slug ?? "",
    OPS_ENVIRONMENT: job.environment ?? "",
    OPS_JOB: job.name,
    OPS_RUN_ID: String(run.id),
  };
  let mask: string[] = [];
  core.db.update(jobRuns).set({ status: "running", startedAt: core.clock.now() }).where(eq(jobRuns.id, run.id)).run();
  if (spec.env_group) {
    const group = findResource(core.db, { project: { id: job.projectId } as never, environment: job.environment }, "secret-group", spec.env_group);
    if (!group) return failEarly(core, run.id, `env group "${spec.env_group}" does not exist`);
    try {
      const values = secretValues(core).groupEnv(core, core.db, group.id);
      Object.assign(env, values.env);
      mask = values.secrets.filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
    } catch (e) {
      return failEarly(core, run.id, e instanceof OpsError && e.code === "sealed" ? "the secrets store is sealed: the env group cannot be read" : "the env group could not be read");
    }
  }
  const writer = new LineWriter(core, run.id, mask);
  writer.add("info", `run ${run.id} started (${run.trigger}; timeout ${timeoutSecs}s${item.resumed ? "; resumed" : ""})`);
  const network = sandboxNetworkOf(core);
  let netns: Netns | null = null;
  if (network.note) writer.add("warn", network.note);
  // Live from here: a shutdown while the sandbox's network is being made stops the run before it starts.
  let startingStopped = false;
  let started!: (r: RunningCommand | null) => void;
  const starting = new Promise<RunningCommand | null>((resolve) => (started = resolve));
  liveRuns(core).set(run.id, {
    pid: 0,
    done: starting.then((r) => r?.done ?? { exitCode: null, signal: null, timedOut: false, stopped: true }),
    stop: (graceMs) => {
      startingStopped = true;
      void starting.then((r) => r?.stop(graceMs));
    },
  });
  let running: RunningCommand;
  let limits: JobLimits | null = null;
  /** The run ends before its command runs: recorded failed, its namespace, limits and folder released. */
  const abandon = async (line: string, error: string) => {
    writer.add("error", line);
    writer.close();
    finishRun(core, run.id, "failed", null, error);
    started(null);
    liveRuns(core).delete(run.id);
    await Promise.all([netns?.close(), limits?.release()]);
    rmSync(workDir, { recursive: true, force: true });
  };
  try {
    limits = await jobLimits(core, run.id);
    writer.add(limits.lines.some((l) => l.level === "warn") ? "warn" : "info", `limits: ${limits.lines.map((l) => l.text).join("; ")}`);
    if (network.refusal) throw new Error(network.refusal);
    netns = await network.open(false);
    if (startingStopped) return await abandon("ops shut down during the run", "ops shut down during the run");
    running = startCommand({
      command: jobArgv(core, job, workDir, spec.command, netns, limits),
      cwd: "/",
      env,
      timeoutMs: timeoutSecs * 1000,
      onLine: (stream, line) => writer.add(stream === "stdout" ? "info" : "warn", line),
      mask: writer.mask,
    });
  } catch (e) {
    return await abandon(`could not start the command: ${(e as Error).message}`, "the command could not be started");
  }
  started(running);
  liveRuns(core).set(run.id, running);
  const limited = limits;
  try {
    const res = await running.done;
    // Recorded ended only once its sandbox is empty (decision 0511).
    const left = await limited.ended().then(() => null, (e: Error) => e.message);
    const hit = res.exitCode !== 0 ? limited.verdict() : null;
    let error: string | null = null;
    if (left) error = left;
    else if (res.stopped) error = "ops shut down during the run";
    else if (res.timedOut) error = `timed out after ${timeoutSecs}s`;
    else if (hit) error = hit;
    else if (res.signal) error = `killed by ${res.signal}`;
    else if (res.exitCode !== 0) error = `exit code ${res.exitCode}`;
    writer.add(error ? "error" : "info", error ?? "exit code 0");
    writer.close();
    finishRun(core, run.id, error ? "failed" : "succeeded", res.exitCode, error);
  } finally {
    liveRuns(core).delete(run.id);
    await Promise.all([netns?.close(), limited.release()]);
  }
}

function failEarly(core: Core, runId: number, error: string): void {
  const writer = new LineWriter(core, runId, []);
  writer.add("error", error);
  writer.close();
  finishRun(core, runId, "failed", null, error);
}

function markInterrupted(core: Core, runId: number, reason: string): void {
  const writer = new LineWriter(core, runId, []);
  writer.add("error", reason);
  writer.close();
  finishRun(core, runId, "failed", null, reason);
}

/**
 * At `ops serve` start-up: every run still `running` belonged to a process that is gone (one
 * server per data dir), so it is marked failed with the reason. Queued runs stay queued.
 */
export function recoverInterruptedRuns(core: Core): number {
  const stale = core.db.select({ id: jobRuns.id }).from(jobRuns).where(eq(jobRuns.status, "running")).all();
  for (const r of stale) markInterrupted(core, r.id, "interrupted: ops stopped while the run was in flight (found at start-up)");
  if (stale.length > 0) core.log.warn("job runs interrupted by a stop were marked failed", { runs: stale.map((r) => r.id) });
  return stale.length;
}

/** On close: stop live runs (their records say why) and wait for them, bounded. */
export async function stopLiveRuns(core: Core, graceMs: number): Promise<void> {
  const live = [...liveRuns(core).values()];
  if (live.length === 0) return;
  for (const r of live) r.stop(Math.min(graceMs, 2000));
  await Promise.race([Promise.allSettled(live.map((r) => r.done)), Bun.sleep(graceMs + 500)]);
  // Give executeRun a turn to record each result before the database closes.
  for (let i = 0; i < 20 && liveRuns(core).size > 0; i++) await Bun.sleep(10);
}

