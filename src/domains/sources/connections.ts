/**
 * Connected repositories: `/host/app`, `/host/repos`, connect, list, disconnect, and what a push
 * does (records `last_event_at`, then announces `PUSH` per project the repository is connected
 * to). Everything goes through the Core's code host; nothing here knows which host that is.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed } from "../../core/audit";
import { iso, isoOrNull } from "../../core/clock";
import { tx } from "../../core/db/client";
import { evaluate } from "../../core/authz/effective";
import { OpsError } from "../../core/errors";
import { isUuid, uuidv7 } from "../../core/ids";
import { codeHostFor, type CodeHost } from "../../adapters/codehost";
import type { HostPush, RepoRef } from "../../adapters/codehost/types";
import { assertNotArchived, listProjects } from "../access/service";
import { listOfTypeInProject, specOf, type ServiceSpec } from "../resources/service";
import { sources } from "./tables";
import { PUSH } from "./events";
import { REPO_RE, type DeclaredNames, type HostAppResponse, type Repo, type SourceResponse } from "./model";

export type SourceRow = typeof sources.$inferSelect;

/** The Core's code host; 503 when it is not configured. */
export function requireHost(core: Core): CodeHost {
  const host = codeHostFor(core);
  if (!host.configured()) throw new OpsError("unavailable", "The code host App is not configured on this server.");
  return host;
}

/** 422 unless `repo` is `owner/repo`. */
export function assertRepoName(repo: string): void {
  if (!REPO_RE.test(repo) || repo.split("/").some((part) => part === "." || part === "..")) throw new OpsError("validation_failed", `"${repo}" is not of the form owner/repo.`, { fields: [{ path: "repo", message: "not an owner/repo name" }] });
}

export function repoRefOf(row: Pick<SourceRow, "repo" | "installationId">): RepoRef {
  return { repo: row.repo, installationId: row.installationId };
}

/** Names of the project's services (any environment) whose spec builds from `repo`. */
export function servicesBuildingFrom(core: Core, projectId: string, repo: string): string[] {
  const names = new Set<string>();
  for (const row of listOfTypeInProject(core.db, projectId, "service")) {
    if (specOf<ServiceSpec>(row).source?.repo === repo) names.add(row.name);
  }
  return [...names].sort();
}

export function toSourceResponse(core: Core, row: SourceRow): SourceResponse {
  return {
    clone_url: codeHostFor(core).cloneUrl(row.repo),
    connected_at: iso(row.connectedAt),
    declared: row.declared ? (JSON.parse(row.declared) as DeclaredNames) : null,
    default_branch: row.defaultBranch,
    id: row.id,
    installation_id: row.installationId,
    last_event_at: isoOrNull(row.lastEventAt),
    repo: row.repo,
    services: servicesBuildingFrom(core, row.projectId, row.repo),
  };
}

/** A source of the project by id; 404 otherwise. */
export function getSourceRow(core: Core, project: ProjectRef, id: string): SourceRow {
  const row = isUuid(id) ? core.db.select().from(sources).where(and(eq(sources.id, id), eq(sources.projectId, project.id))).get() : undefined;
  if (!row) throw new OpsError("not_found", `No source ${id} in project ${project.slug}.`);
  return row;
}

/** The project's source of `repo`, or null. */
export function findSourceByRepo(core: Core, projectId: string, repo: string): SourceRow | null {
  return core.db.select().from(sources).where(and(eq(sources.projectId, projectId), eq(sources.repo, repo))).get() ?? null;
}

/** 409 unless the host still reaches the source's repository through an installation. */
export async function assertInstalled(core: Core, host: CodeHost, project: ProjectRef, row: SourceRow): Promise<void> {
  const owner = row.repo.split("/")[0]!;
  const inst = row.installationId === 0 ? null : await host.installationFor(owner, project.slug);
  if (inst === null) throw new OpsError("conflict", `The code host App is not installed on ${owner}: the source cannot be read or written.`);
}

/** `/host/app`. */
export async function describeHost(core: Core): Promise<HostAppResponse> {
  const app = await requireHost(core).describe();
  return { html_url: app.htmlUrl, install_url: app.installUrl, installations: app.installations, slug: app.slug };
}

/**
 * `/host/repos`: every repository the host's installations see, narrowed to owners reachable from
 * a project where the caller holds `sources.read` (on the built-in host, each project's own).
 */
export async function listHostRepos(core: Core, auth: AuthContext): Promise<Repo[]> {
  const host = requireHost(core);
  const grants = core.access.grants(auth.principal);
  const readable = listProjects(core, auth.principal).filter((p) => evaluate(auth.principal, grants, { kind: "project", projectId: p.id, environment: null }).permissions.has("sources.read"));
  const reachable = new Map<string, boolean>();
  const out: Repo[] = [];
  for (const r of await host.listRepos()) {
    const owner = r.fullName.split("/")[0]!;
    if (!reachable.has(owner)) {
      let ok = false;
      for (const p of readable) {
        if ((await host.installationFor(owner, p.slug)) !== null) {
          ok = true;
          break;
        }
      }
      reachable.set(owner, ok);
    }
    if (reachable.get(owner)) out.push({ default_branch: r.defaultBranch, full_name: r.fullName, private: r.private });
  }
  return out;
}

/** Every source of the project, by repository: ops's own rows, readable with no code host configured. */
export function listSources(core: Core, project: ProjectRef): SourceResponse[] {
  return core.db
    .select()
    .from(sources)
    .where(eq(sources.projectId, project.id))
    .orderBy(asc(sources.repo))
    .all()
    .map((r) => toSourceResponse(core, r));
}

/**
 * Connect a repository (201). The installation is the host's on the owner for this project (409
 * when none, or when the one given differs); the built-in host creates a missing repository.
 */
export async function connectSource(core: Core, project: ProjectRef, body: { repo: string; installation_id?: number | null }, auth: AuthContext): Promise<SourceResponse> {
  const host = requireHost(core);
  assertRepoName(body.repo);
  assertNotArchived(project);
  if (findSourceByRepo(core, project.id, body.repo)) throw new OpsError("already_exists", `${body.repo} is already connected to ${project.slug}.`);
  const owner = body.repo.split("/")[0]!;
  const installationId = await host.installationFor(owner, project.slug);
  if (installationId === null) throw new OpsError("conflict", `The code host App is not installed on ${owner} for project ${project.slug}.`);
  if (body.installation_id != null && body.installation_id !== installationId) {
    throw new OpsError("conflict", `Installation ${body.installation_id} does not reach ${owner}; the App's installation there is ${installationId}.`);
  }
  const repo = await host.ensureRepo({ repo: body.repo, installationId });
  if (!repo) throw new OpsError("not_found", `No repository ${body.repo} on the code host.`);
  const actor = actorOf(auth.principal, auth.meta);
  const row = tx(core.db, (t) => {
    if (t.select({ id: sources.id }).from(sources).where(and(eq(sources.projectId, project.id), eq(sources.repo, repo.fullName))).get()) {
      throw new OpsError("already_exists", `${repo.fullName} is already connected to ${project.slug}.`);
    }
    const now = core.clock.now();
    const inserted = t
      .insert(sources)
      .values({ id: uuidv7(now), projectId: project.id, repo: repo.fullName, installationId, defaultBranch: repo.defaultBranch, connectedAt: now, connectedBy: auth.principal.name, lastEventAt: null, declared: null })
      .returning()
      .get();
    auditAllowed(core, t, actor, "sources.write", `source:${repo.fullName}`, { project: project.slug }, { op: "connect", source: inserted.id });
    return inserted;
  });
  return toSourceResponse(core, row);
}

/** Disconnect (204), with or without a code host configured (only ops's rows change). 409 while a service builds from the repository; saves and scans keep their history. */
export function disconnectSource(core: Core, project: ProjectRef, id: string, auth: AuthContext): void {
  const row = getSourceRow(core, project, id);
  const actor = actorOf(auth.principal, auth.meta);
  tx(core.db, (t) => {
    const users = servicesBuildingFrom(core, project.id, row.repo);
    if (users.length > 0) throw new OpsError("conflict", `Services still build from ${row.repo}: ${users.join(", ")}. Point them elsewhere first.`, { services: users });
    t.delete(sources).where(eq(sources.id, row.id)).run();
    auditAllowed(core, t, actor, "sources.write", `source:${row.repo}`, { project: project.slug }, { op: "disconnect", source: row.id });
  });
}

/**
 * A push the host reported: `last_event_at` moves for every project the repository is connected
 * to, then `PUSH` is announced for each (after the write committed, so subscribers read it).
 */
export async function recordPush(core: Core, push: HostPush): Promise<void> {
  const rows = tx(core.db, (t) => {
    const found = t.select().from(sources).where(eq(sources.repo, push.repo)).all();
    if (found.length > 0) t.update(sources).set({ lastEventAt: push.at }).where(eq(sources.repo, push.repo)).run();
    return found;
  });
  if (rows.length === 0) push.say?.(`${push.repo} is not connected to a project: nothing builds (connect it on a project's Sources page)`);
  for (const row of rows) {
    const project = core.access.findProjectById(row.projectId);
    if (!project) continue;
    await core.events.emit(PUSH, { project: project.slug, sourceId: row.id, repo: row.repo, ref: push.ref, before: push.before, after: push.after, pusher: push.pusher, say: push.say });
  }
}
