/**
 * What queues and stops builds: a push to a service's branch or of a release tag (the `PUSH`
 * event), `POST …/builds` (manual, image builds only), `…/retry` and `…/cancel`. Manual builds,
 * retries and cancels are audited as `builds.run` in the transaction that makes them; a push is
 * audited by the sources domain.
 */
import { eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed } from "../../core/audit";
import { tx, type Tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { assertNotArchived } from "../access/service";
import { findResource, listOfTypeInProject, specOf, type ServiceSpec } from "../resources/service";
import { commitOf, findSourceOfRepo, repoRefOf, requireHost, sourceById, type PushEvent, type SourceRow, type CommitInfo } from "../sources/service";
import { builds } from "./tables";
import { buildById, isFinal, requireBuild, stepOfRow, toBuildResponse, type BuildRow } from "./rows";
import { publishTriggerOf } from "./publish";
import { dispatchBuilds } from "./dispatch";
import { reportToHost } from "./host";
import { abortLive, afterEnd, endBuildIn } from "./lifecycle";
import { appendLines } from "./log";
import { isParked } from "./reuse";
import type { BuildResponse, CreateBuildRequest } from "./model";

const ZERO_SHA = /^0+$/;

interface NewBuild {
  project: ProjectRef;
  /** Empty for a publish build, as `service`. */
  environment: string;
  service: string;
  kind: BuildRow["kind"];
  trigger: "push" | "manual" | "retry";
  requestedBy: string;
  pushedBy: string | null;
  source: Pick<SourceRow, "id" | "repo">;
  branch: string | null;
  commit: Pick<CommitInfo, "sha" | "author" | "message" | "committedAt">;
  retryOf?: number;
}

function insertBuild(core: Core, t: Tx, b: NewBuild): BuildRow {
  return t
    .insert(builds)
    .values({
      projectId: b.project.id,
      project: b.project.slug,
      environment: b.environment,
      service: b.service,
      kind: b.kind,
      status: "queued",
      trigger: b.trigger,
      requestedBy: b.requestedBy,
      pushedBy: b.pushedBy,
      sourceId: b.source.id,
      repo: b.source.repo,
      branch: b.branch,
      commitSha: b.commit.sha,
      author: b.commit.author,
      message: b.commit.message,
      commitTime: b.commit.committedAt,
      queuedAt: core.clock.now(),
      retryOf: b.retryOf ?? null,
    })
    .returning()
    .get();
}

/** A queued build's first report to the host and the queue's next move. */
async function queued(core: Core, ids: number[]): Promise<void> {
  dispatchBuilds(core);
  for (const id of ids) await reportToHost(core, id);
}

function requesterOf(auth: AuthContext): string {
  return auth.principal.email ?? auth.principal.name;
}

/** The commit a push would build, or null (logged): the project is archived, or the host cannot read it. */
async function pushedCommit(core: Core, project: ProjectRef, source: SourceRow, ev: PushEvent, sha: string): Promise<CommitInfo | null> {
  if (project.archived) {
    core.log.info("push to an archived project builds nothing", { project: project.slug, repo: ev.repo, ref: ev.ref });
    return null;
  }
  try {
    return await commitOf(core, source, sha);
  } catch (e) {
    core.log.error("pushed commit could not be read: no build queued", { project: project.slug, repo: ev.repo, ref: ev.ref, sha, err: (e as Error).message });
    return null;
  }
}

/**
 * The environment's branch (docs/decisions/0286): the repository's branch named like the
 * environment (`staging`), or null when it has none.
 */
export async function environmentBranch(core: Core, source: Pick<SourceRow, "repo" | "installationId">, environment: string): Promise<string | null> {
  return (await requireHost(core).resolveRef(repoRefOf(source), `refs/heads/${environment}`)) ? environment : null;
}

/**
 * The `PUSH` subscriber: a push to a branch queues a build of every service, in every environment,
 * that builds from the repository and follows that branch: its `source.branch`, else the
 * environment's branch (a branch named like the environment), else the repository's default
 * branch — the order a manual build's branch follows. A release tag queues a publish build
 * (onTagPush). Other tags and deleted refs queue nothing. Returns every build queued: each
 * environment gets its own, even when one of them will reuse another's image (reuse.ts, decision
 * 0435: builds with the same inputs run the builder once).
 */
export async function onPush(core: Core, ev: PushEvent): Promise<number[]> {
  if (ev.ref.startsWith("refs/tags/")) return onTagPush(core, ev);
  if (!ev.ref.startsWith("refs/heads/") || ZERO_SHA.test(ev.after)) return [];
  const branch = ev.ref.slice("refs/heads/".length);
  const project = core.access.findProject(ev.project);
  const source = sourceById(core, ev.sourceId);
  if (!project || !source) return [];
  const ofRepo = listOfTypeInProject(core.db, project.id, "service").filter((r) => r.environment !== null && specOf<ServiceSpec>(r).source?.repo === ev.repo);
  // Asked once per environment, and only where it decides: a service without a branch of another
  // environment follows a push of the default branch unless its environment has a branch of its own.
  const envBranches = new Map<string, Promise<string | null>>();
  const follows = async (r: (typeof ofRepo)[number]): Promise<boolean> => {
    const own = specOf<ServiceSpec>(r).source?.branch;
    if (own) return own === branch;
    if (r.environment === branch) return true;
    if (branch !== source.defaultBranch) return false;
    if (!envBranches.has(r.environment!)) envBranches.set(r.environment!, environmentBranch(core, source, r.environment!).catch(() => null));
    return (await envBranches.get(r.environment!)) === null;
  };
  const services: typeof ofRepo = [];
  for (const r of ofRepo) if (await follows(r)) services.push(r);
  if (services.length === 0) return [];
  const commit = await pushedCommit(core, project, source, ev, ev.after);
  if (!commit) return [];
  const ids = tx(core.db, (t) =>
    services.map((s) => insertBuild(core, t, { project, environment: s.environment!, service: s.name, kind: "image", trigger: "push", requestedBy: "host", pushedBy: ev.pusher, source, branch, commit }).id),
  );
  for (const id of ids) appendLines(core, id, "queue", [["info", `queued by a push of ${branch} by ${ev.pusher}`]]);
  await queued(core, ids);
  return ids;
}

/**
 * A pushed tag: a publish build of the tagged commit when the modules domain says the tag is a
 * release (`v<semver>` on a commit with `modules/`). It belongs to no service or environment
 * (both empty) and keeps the tag in `branch`; the pusher is the versions' publisher.
 */
async function onTagPush(core: Core, ev: PushEvent): Promise<number[]> {
  const project = core.access.findProject(ev.project);
  const source = sourceById(core, ev.sourceId);
  if (!project || !source) return [];
  const trigger = await publishTriggerOf(core, source, ev);
  if (!trigger) return [];
  const commit = await pushedCommit(core, project, source, ev, trigger.commit);
  if (!commit) return [];
  const row = tx(core.db, (t) => insertBuild(core, t, { project, environment: "", service: "", kind: "publish", trigger: "push", requestedBy: "host", pushedBy: ev.pusher, source, branch: trigger.tag, commit }));
  appendLines(core, row.id, "queue", [["info", `queued by a push of the tag ${trigger.tag} by ${ev.pusher} (commit ${trigger.commit.slice(0, 12)})`]]);
  await queued(core, [row.id]);
  return [row.id];
}

/**
 * POST …/builds: queue a build of the head of a branch of the service's repository (201). 422 for
 * an unknown service or one without a source, 404 for an unknown branch, 409 when the host no
 * longer reaches the repository (or the project is archived), 503 when the host is not configured.
 */
export async function createBuild(core: Core, project: ProjectRef, environment: string, body: CreateBuildRequest, auth: AuthContext): Promise<BuildResponse> {
  const host = requireHost(core);
  const service = findResource(core.db, { project, environment }, "service", body.service);
  if (!service) throw new OpsError("validation_failed", `No service "${body.service}" in ${environment}.`, { fields: [{ path: "service", message: "unknown service" }] });
  const spec = specOf<ServiceSpec>(service).source;
  if (!spec?.repo) throw new OpsError("validation_failed", `The service "${body.service}" has no source: it runs an image, there is nothing to build.`, { fields: [{ path: "service", message: "no source" }] });
  const source = findSourceOfRepo(core, project.id, spec.repo);
  if (!source) throw new OpsError("validation_failed", `The service "${body.service}" builds from ${spec.repo}, which is not connected to ${project.slug}.`, { fields: [{ path: "service", message: "source not connected" }] });
  assertNotArchived(project);
  const owner = source.repo.split("/")[0]!;
  if (source.installationId === 0 || (await host.installationFor(owner, project.slug)) === null) {
    throw new OpsError("conflict", `The code host App is not installed on ${owner}: ${source.repo} cannot be read.`);
  }
  // The spec's order: the request's ref, the service's branch, the environment's branch (a branch
  // named like the environment, e.g. `staging`, when the repository has one), the default branch.
  const branch = body.ref ?? spec.branch ?? (await environmentBranch(core, source, environment)) ?? source.defaultBranch;
  const sha = await host.resolveRef({ repo: source.repo, installationId: source.installationId }, `refs/heads/${branch}`);
  if (!sha) throw new OpsError("not_found", `No branch "${branch}" in ${source.repo}.`);
  const commit = await commitOf(core, source, sha);
  const actor = actorOf(auth.principal, auth.meta);
  const row = tx(core.db, (t) => {
    const r = insertBuild(core, t, { project, environment, service: service.name, kind: "image", trigger: "manual", requestedBy: requesterOf(auth), pushedBy: null, source, branch, commit });
    auditAllowed(core, t, actor, "builds.run", `build:${r.id}`, { project: project.slug, environment }, { op: "create", service: service.name, branch, commit: sha });
    return r;
  });
  appendLines(core, row.id, "queue", [["info", `queued by ${row.requestedBy} (${branch} at ${sha.slice(0, 12)})`]]);
  // The answer is the build as created (`queued`), whether or not a builder takes it at once.
  const created = toBuildResponse(buildById(core.db, row.id)!);
  await queued(core, [row.id]);
  return created;
}

/**
 * POST …/builds/{id}/retry: a new build of the same commit, service and kind, trigger `retry`
 * (201). A publish retry names the same tag and publisher; its steps skip what the ledger says
 * this commit already published.
 */
export async function retryBuild(core: Core, project: ProjectRef, id: number, auth: AuthContext): Promise<BuildResponse> {
  const old = requireBuild(core, project.id, id);
  assertNotArchived(project);
  const actor = actorOf(auth.principal, auth.meta);
  const row = tx(core.db, (t) => {
    const r = insertBuild(core, t, {
      project,
      environment: old.environment,
      service: old.service,
      kind: old.kind,
      trigger: "retry",
      requestedBy: requesterOf(auth),
      pushedBy: old.pushedBy,
      source: { id: old.sourceId as string, repo: old.repo },
      branch: old.branch,
      commit: { sha: old.commitSha, author: old.author, message: old.message, committedAt: old.commitTime },
      retryOf: old.id,
    });
    const what: Record<string, string | null> = old.kind === "publish" ? { kind: "publish", tag: old.branch } : { service: old.service };
    auditAllowed(core, t, actor, "builds.run", `build:${r.id}`, { project: project.slug, environment: old.environment || null }, { op: "retry", retry_of: old.id, ...what, commit: old.commitSha });
    return r;
  });
  appendLines(core, row.id, "queue", [["info", `retry of build ${old.id}, queued by ${row.requestedBy}`]]);
  const created = toBuildResponse(buildById(core.db, row.id)!);
  await queued(core, [row.id]);
  return created;
}

/**
 * POST …/builds/{id}/cancel: a queued build ends `cancelled` now (200); a running one has its
 * step's process tree killed and reads `cancelled` at the step's end (202). 409 once finished or
 * when the rollout started (`deploying`).
 */
export async function cancelBuild(core: Core, project: ProjectRef, id: number, auth: AuthContext): Promise<{ status: 200 | 202; build: BuildResponse }> {
  const actor = actorOf(auth.principal, auth.meta);
  const who = requesterOf(auth);
  const out = tx(core.db, (t) => {
    const row = requireBuild(core, project.id, id);
    if (isFinal(row.status)) throw new OpsError("conflict", `Build ${id} already finished (${row.status}).`, { status: row.status });
    if (row.status === "deploying") throw new OpsError("conflict", `Build ${id} cannot be cancelled: its rollout started.`, { status: row.status });
    const where = { project: project.slug, environment: row.environment || null };
    if (row.status === "queued") {
      const ended = endBuildIn(core, t, id, ["queued"], { status: "cancelled" })!;
      auditAllowed(core, t, actor, "builds.run", `build:${id}`, where, { op: "cancel", was: "queued" });
      return { status: 200 as const, row: ended };
    }
    if (isParked(row)) {
      // Waiting for another build's image (reuse.ts): nothing of its own runs, so it ends now.
      const ended = endBuildIn(core, t, id, ["building"], { status: "cancelled", step: "build", ok: false, note: "cancelled" })!;
      auditAllowed(core, t, actor, "builds.run", `build:${id}`, where, { op: "cancel", was: row.status });
      return { status: 202 as const, row: ended };
    }
    t.update(builds).set({ cancelRequested: true }).where(eq(builds.id, id)).run();
    auditAllowed(core, t, actor, "builds.run", `build:${id}`, where, { op: "cancel", was: row.status });
    return { status: 202 as const, row: buildById(t, id)! };
  });
  appendLines(core, id, out.row.status === "cancelled" ? "queue" : stepOfRow(out.row), [["warn", `cancel requested by ${who}`]]);
  if (out.row.status === "cancelled") await afterEnd(core, out.row);
  else abortLive(core, id, "cancel");
  return { status: out.status, build: toBuildResponse(out.row) };
}
