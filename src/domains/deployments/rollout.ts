/**
 * The rollout state machine, run by the scheduler item `deployments.rollout`. The deployment row
 * is the persistent state (`rollout`, `rollout_note`); its phases:
 *
 *   queued → starting (pull, unpack) → releasing (the `pre-deploy` release steps, release.ts)
 *          → starting (the new replicas on fresh ports)
 *          → probing (every new replica answers `health_check_path` with a 2xx, or accepts a TCP
 *            connection, before OPS_DEPLOY_HEALTH_TIMEOUT_SECS)
 *          → switching (the ingress's table now names the new replicas; requests in flight finish
 *            on the old ones) → draining (no request in flight to the old replicas, then SIGTERM,
 *            grace, SIGKILL; then the `post-deploy` steps) → healthy
 *   probing fails → unhealthy → rolling_back (the new replicas stop; the previous digest, which
 *            never stopped serving, keeps the traffic) → rolled_back, `failure_kind: health`
 *   starting or releasing fails (image, sandbox, sealed secrets, a release step) → failed,
 *            `failure_kind: deploy`
 *
 * Replicas are children of this process and die with it (only `ops restart` hands them to the
 * next image, and then only the current deployment's are kept), so a rollout interrupted by a
 * restart starts again from `queued` (see recover.ts); the item carries a token and an item whose token is
 * not the deployment's any more does nothing. One rollout or reconcile per service at a time
 * (`withServiceLock`). Its start and its end are reported to the code host (host.ts).
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { SYSTEM_ACTOR } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { specOf, type ServiceSpec } from "../resources/service";
import { notify } from "../notifications/service";
import { ingressOf } from "../../adapters/ingress";
import { deployments, serviceRuns, type DeploymentRow } from "./tables";
import { deploymentById, serviceKeyOf, serviceRun, shortDigest, type Rollout } from "./rows";
import { imageFor, liveOf, rolloutRoom, routeTo, serviceEnv, serviceRow, setLive, startReplicas, stopReplicas, upstreamsOf, withServiceLock, type ServiceAddress } from "./live";
import { probeReplicas } from "./probe";
import { releaseSteps, runReleaseStep } from "./release";
import { insertRollout, serviceLink } from "./record";
import { restoreService, enqueueReconcile } from "./reconcile";
import { syncStatusComponent, writeServiceStatus } from "./status";
import { reportRollout } from "./host";
import { serviceNote } from "./logs";
import { collectFailureOutput } from "./failure-output";

/** How long a switch waits for requests in flight to the old replicas before stopping them. */
export const DRAIN_MS = 30_000;

export type Verdict = { status: "healthy" } | { status: "rolled_back"; failureKind: "health"; error: string } | { status: "failed"; failureKind: "deploy"; error: string };

/** Called once per finished rollout (the builds hand-off records a build's verdict here). */
export type RolloutListener = (core: Core, row: DeploymentRow, verdict: Verdict) => void | Promise<void>;
const LISTENERS = "deployments.rollout-listeners";

export function onRolloutFinished(core: Core, fn: RolloutListener): void {
  const list = (core.locals.get(LISTENERS) as RolloutListener[] | undefined) ?? [];
  list.push(fn);
  core.locals.set(LISTENERS, list);
}

/** Thrown when the Core closes under a rollout: it stays in flight and starts again at the next start. */
class Closing extends Error {}

function assertOpen(core: Core): void {
  if (core.locals.get("core.closed")) throw new Closing("ops is stopping");
}

function setPhase(core: Core, id: number, rollout: Rollout, note: string, extra: Partial<typeof deployments.$inferInsert> = {}): DeploymentRow {
  assertOpen(core);
  return core.db
    .update(deployments)
    .set({ rollout, rolloutNote: note.slice(0, 500), ...extra })
    .where(eq(deployments.id, id))
    .returning()
    .get();
}

function finishedFields(core: Core): Partial<typeof deployments.$inferInsert> {
  return { inFlight: null, finishedAt: core.clock.now() };
}

async function tellListeners(core: Core, row: DeploymentRow, verdict: Verdict): Promise<void> {
  for (const fn of (core.locals.get(LISTENERS) as RolloutListener[] | undefined) ?? []) {
    try {
      await fn(core, row, verdict);
    } catch (e) {
      core.log.error("a rollout listener failed", { deployment: row.id, err: (e as Error).message });
    }
  }
}

const params = (addr: ServiceAddress, row: DeploymentRow) => ({ project: addr.project.slug, environment: addr.environment, service: addr.service, digest: shortDigest(row.imageDigest), deployment: row.id });

/** The rollout failed before any new replica took traffic: the previous digest keeps serving. */
async function fail(core: Core, addr: ServiceAddress, row: DeploymentRow, started: readonly string[], error: string, kind: "deploy" | "internal" = "deploy"): Promise<void> {
  await stopReplicas(core, started, 2000);
  assertOpen(core);
  const output = await collectFailureOutput(core, addr, row.id);
  const done = setPhase(core, row.id, "failed", error, { failureKind: kind, failureOutput: output.length > 0 ? JSON.stringify(output) : null, ...finishedFields(core) });
  core.log.warn("rollout failed", { deployment: row.id, service: serviceKeyOf(addr), err: error });
  writeServiceStatus(core, addr);
  await reportRollout(core, addr, done.id);
  await tellListeners(core, done, { status: "failed", failureKind: "deploy", error });
}

/** The new replicas were not healthy: stop them and leave (or bring back) the previous digest. */
async function rollBack(core: Core, addr: ServiceAddress, row: DeploymentRow, started: readonly string[], reason: string): Promise<void> {
  const error = `the new replicas were not healthy: ${reason}`;
  setPhase(core, row.id, "unhealthy", error, { failureKind: "health" });
  const previous = row.previousDigest ? shortDigest(row.previousDigest) : null;
  setPhase(core, row.id, "rolling_back", previous ? `stopping the new replicas; ${previous} keeps serving` : "stopping the new replicas; nothing ran before");
  await stopReplicas(core, started, 2000);
  assertOpen(core);
  const output = await collectFailureOutput(core, addr, row.id);
  const live = liveOf(core, addr);
  if (!live || live.replicaIds.length === 0) await restoreService(core, addr);
  assertOpen(core);
  const note = `${error}; ${previous ? `rolled back to ${previous}` : "nothing ran before, so nothing serves"}`;
  const done = tx(core.db, (t) => {
    const r = t
      .update(deployments)
      .set({ rollout: "rolled_back", rolloutNote: note.slice(0, 500), failureKind: "health", failureOutput: output.length > 0 ? JSON.stringify(output) : null, inFlight: null, finishedAt: core.clock.now() })
      .where(eq(deployments.id, row.id))
      .returning()
      .get();
    notify(core, t, { kind: "deployment.auto_rollback", projectId: addr.project.id, params: params(addr, row), link: serviceLink(addr) });
    return r;
  });
  core.log.warn("rollout rolled back", { deployment: row.id, service: serviceKeyOf(addr), err: reason });
  serviceNote(core, { projectId: addr.project.id, environment: addr.environment, service: addr.service }, "error", `deployment ${row.id} rolled back: ${note}`);
  writeServiceStatus(core, addr);
  await reportRollout(core, addr, done.id);
  await tellListeners(core, done, { status: "rolled_back", failureKind: "health", error: note });
}

/** The new replicas serve: record them as current and finish. */
async function finishHealthy(core: Core, addr: ServiceAddress, row: DeploymentRow, replicas: number, note: string): Promise<void> {
  assertOpen(core);
  const done = tx(core.db, (t) => {
    const now = core.clock.now();
    const prior = serviceRun(t, addr.project.id, addr.environment, addr.service);
    const values = { repository: row.repository, currentDigest: row.imageDigest, currentDeploymentId: row.id, replicas, health: replicas > 0 ? "up" : null, healthNote: replicas > 0 ? "healthy at rollout" : null, updatedAt: now };
    if (prior) t.update(serviceRuns).set(values).where(and(eq(serviceRuns.projectId, addr.project.id), eq(serviceRuns.environment, addr.environment), eq(serviceRuns.service, addr.service))).run();
    else t.insert(serviceRuns).values({ projectId: addr.project.id, environment: addr.environment, service: addr.service, ...values }).run();
    const r = t
      .update(deployments)
      .set({ rollout: "healthy", rolloutNote: note.slice(0, 500), inFlight: null, finishedAt: now })
      .where(eq(deployments.id, row.id))
      .returning()
      .get();
    notify(core, t, { kind: "deployment.rolled", projectId: addr.project.id, params: params(addr, row), link: serviceLink(addr) });
    return r;
  });
  writeServiceStatus(core, addr);
  syncStatusComponent(core, addr);
  await reportRollout(core, addr, done.id);
  await tellListeners(core, done, { status: "healthy" });
}

/** After a rollout: a restart asked for meanwhile, or a replica count changed meanwhile. */
function followUp(core: Core, addr: ServiceAddress): void {
  const run = serviceRun(core.db, addr.project.id, addr.environment, addr.service);
  if (!run) return;
  const svc = serviceRow(core, addr);
  if (run.restartPending && svc && run.replicas > 0) {
    const reason = run.restartPending;
    tx(core.db, (t) => {
      t.update(serviceRuns).set({ restartPending: null }).where(and(eq(serviceRuns.projectId, addr.project.id), eq(serviceRuns.environment, addr.environment), eq(serviceRuns.service, addr.service))).run();
      insertRollout(core, t, { addr, digest: run.currentDigest, trigger: "restart", message: `Restart: ${reason}`, author: "system", actor: SYSTEM_ACTOR, createdBy: "system", note: reason });
    });
    return;
  }
  if (!svc || (specOf<ServiceSpec>(svc).replicas ?? 1) !== run.replicas) enqueueReconcile(core, core.db, { projectId: addr.project.id, environment: addr.environment, service: addr.service });
}

async function rollout(core: Core, addr: ServiceAddress, row: DeploymentRow): Promise<void> {
  const svc = serviceRow(core, addr);
  if (!svc) return fail(core, addr, row, [], `the service "${addr.service}" no longer exists in ${addr.environment}`);
  // The host hears of the rollout now; the rollout does not wait for it (its end report does).
  void reportRollout(core, addr, row.id);
  const spec = specOf<ServiceSpec>(svc);
  const wanted = spec.replicas ?? 1;
  const digest = shortDigest(row.imageDigest);
  if (wanted === 0) {
    // Nothing to start: the digest becomes current and runs when the service is scaled up.
    const old = liveOf(core, addr);
    if (old) {
      routeTo(core, addr, []);
      setLive(core, addr, row.id, row.imageDigest, []);
      await stopReplicas(core, old.replicaIds);
    }
    return finishHealthy(core, addr, row, 0, `${digest} is current; the service is scaled to 0 replicas, so nothing was started`);
  }
  setPhase(core, row.id, "starting", `pulling and unpacking ${digest}`);
  writeServiceStatus(core, addr);
  let started: string[] = [];
  let image, env, post;
  let room: Awaited<ReturnType<typeof rolloutRoom>> = null;
  try {
    image = await imageFor(core, addr, row.imageDigest);
    env = serviceEnv(core, addr, svc);
    const pre = await releaseSteps(core, addr, svc, row.commitSha, "pre-deploy");
    post = await releaseSteps(core, addr, svc, row.commitSha, "post-deploy");
    for (const step of pre) {
      setPhase(core, row.id, "releasing", `running the pre-deploy step ${step.name} in ${digest}`);
      const failed = await runReleaseStep(core, addr, svc, row.id, image, env, step);
      if (failed) return fail(core, addr, row, [], failed);
    }
    room = await rolloutRoom(core, svc, wanted);
    if (room) serviceNote(core, { projectId: addr.project.id, environment: addr.environment, service: addr.service }, "info", `deployment ${row.id}: ${room.mode}: ${room.why}`);
    const old = liveOf(core, addr);
    if (room?.mode === "stop-first" && old && old.replicaIds.length > 0) {
      // No room beside them: the old replicas go first; a failed rollout brings the previous digest back.
      setPhase(core, row.id, "draining", `stop-first: ${room.why}`);
      routeTo(core, addr, []);
      setLive(core, addr, old.deploymentId, old.digest, []);
      await stopReplicas(core, old.replicaIds);
    }
    setPhase(core, row.id, "starting", `starting ${wanted} replica${wanted === 1 ? "" : "s"} of ${digest}${room ? ` (${room.mode})` : ""}`);
    started = (await startReplicas(core, addr, svc, row.id, image, env, wanted)).map((s) => s.id);
  } catch (e) {
    const msg = e instanceof OpsError || e instanceof Error ? e.message : String(e);
    return fail(core, addr, row, started, `the new replicas could not start: ${msg}`);
  }
  const path = spec.health_check_path ?? null;
  const secs = core.config.deployHealthTimeoutSecs;
  setPhase(core, row.id, "probing", path ? `waiting up to ${secs} s for ${path} to answer 2xx on ${wanted} new replica${wanted === 1 ? "" : "s"}` : `waiting up to ${secs} s for ${wanted} new replica${wanted === 1 ? "" : "s"} to accept connections`);
  // Each probe result reaches the timeline (so the console and ops deploy) and the service's log as it changes.
  const verdict = await probeReplicas(core, started, path, secs * 1000, (replica, result, left) => {
    setPhase(core, row.id, "probing", `${replica}: ${result} (${left} s left)`);
    serviceNote(core, { projectId: addr.project.id, environment: addr.environment, service: addr.service }, "info", `deployment ${row.id} probe of ${replica}: ${result}`);
  });
  if (!verdict.ok) return rollBack(core, addr, row, started, `${verdict.replica}: ${verdict.reason}`);

  setPhase(core, row.id, "switching", `routing traffic to ${wanted} new replica${wanted === 1 ? "" : "s"}`);
  const old = liveOf(core, addr);
  routeTo(core, addr, started);
  setLive(core, addr, row.id, row.imageDigest, started);
  if (old && old.replicaIds.length > 0) {
    setPhase(core, row.id, "draining", `draining ${old.replicaIds.length} replica${old.replicaIds.length === 1 ? "" : "s"} of ${shortDigest(old.digest)}`);
    const drained = await ingressOf(core).drained(upstreamsOf(core, old.replicaIds), DRAIN_MS);
    if (!drained) core.log.warn("requests to old replicas still in flight after the drain period; stopping them", { service: serviceKeyOf(addr), drain_ms: DRAIN_MS });
    await stopReplicas(core, old.replicaIds);
  }
  const notes: string[] = [];
  for (const step of post) {
    const failed = await runReleaseStep(core, addr, svc, row.id, image, env, step);
    notes.push(failed ? `; ${failed} (post-deploy)` : `; post-deploy step ${step.name} ran`);
  }
  await finishHealthy(core, addr, row, wanted, `${wanted} replica${wanted === 1 ? "" : "s"} of ${digest} serving${path ? ` (${path} healthy)` : ""}${room ? `; ${room.mode}` : ""}${notes.join("")}`);
}

/** The scheduler item's handler: run (or resume from the start) one deployment's rollout. */
export async function runRollout(core: Core, payload: { deployment: number; token: string }): Promise<void> {
  const first = deploymentById(core.db, payload.deployment);
  if (!first || first.runToken !== payload.token || first.inFlight === null) return;
  const project = core.access.findProjectById(first.projectId);
  if (!project) return;
  const addr: ServiceAddress = { project, environment: first.environment, service: first.service };
  await withServiceLock(core, serviceKeyOf(addr), async () => {
    const row = deploymentById(core.db, payload.deployment);
    if (!row || row.runToken !== payload.token || row.inFlight === null) return;
    try {
      await rollout(core, addr, row);
    } catch (e) {
      if (e instanceof Closing || core.locals.get("core.closed")) return;
      core.log.error("rollout failed unexpectedly", { deployment: row.id, err: e });
      const cur = deploymentById(core.db, row.id);
      if (cur?.inFlight !== null) await fail(core, addr, row, [], `internal error: ${(e as Error).message}`, "internal");
    }
    followUp(core, addr);
  });
}
