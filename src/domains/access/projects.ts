/**
 * Projects: slug (resource-name pattern, immutable), name, ordered environments (default
 * `production`, `staging`), archive flag.
 */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import { evaluate } from "../../core/authz/effective";
import { iso } from "../../core/clock";
import type { ProjectResponse, UpdateProjectBody } from "./model-projects";
import { tx } from "../../core/db/client";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { projects, environmentPolicies } from "./tables";
import type { ProjectRow } from "./rows";

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const ENVIRONMENT_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;
export const DEFAULT_ENVIRONMENTS = ["production", "staging"] as const;

export interface CreateProjectInput {
  slug: string;
  name: string;
  environments?: string[];
}

export function validateEnvironments(envs: string[]): string[] {
  if (envs.length === 0) throw invalid("environments", "a project needs at least one environment");
  const seen = new Set<string>();
  for (const e of envs) {
    if (!ENVIRONMENT_PATTERN.test(e)) throw invalid("environments", `"${e}" is not a valid environment name (lower-case letters, digits and dashes)`);
    if (seen.has(e)) throw invalid("environments", `"${e}" is listed twice`);
    seen.add(e);
  }
  return envs;
}

/** Create a project (audited as `estate.manage`). 409 when the slug is taken. */
export function createProject(core: Core, input: CreateProjectInput, actor: AuditActor): ProjectRow {
  if (!SLUG_PATTERN.test(input.slug)) throw invalid("slug", "must match ^[a-z0-9][a-z0-9-]{0,62}$");
  const name = input.name.trim();
  if (name === "" || name.length > 100) throw invalid("name", "must be 1 to 100 characters");
  const environments = validateEnvironments(input.environments ?? [...DEFAULT_ENVIRONMENTS]);
  const now = core.clock.now();
  return tx(core.db, (t) => {
    if (t.select({ id: projects.id }).from(projects).where(eq(projects.slug, input.slug)).get()) {
      throw new OpsError("already_exists", `A project with slug "${input.slug}" already exists.`);
    }
    const row = t
      .insert(projects)
      .values({ id: uuidv7(now), slug: input.slug, name, environments: JSON.stringify(environments), createdAt: now, updatedAt: now })
      .returning()
      .get();
    auditAllowed(core, t, actor, "estate.manage", `project:${input.slug}`, { project: input.slug }, { op: "project.create" });
    return row;
  });
}

/** The project with `slug`, or null. */
export function findProjectRow(core: Core, slug: string): ProjectRow | null {
  return core.db.select().from(projects).where(eq(projects.slug, slug)).get() ?? null;
}

/** Throw 409 `archived` when the project is archived (writes refuse on archived projects). */
export function assertNotArchived(project: ProjectRef): void {
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
}

/** The ProjectResponse of a row. */
export function projectView(p: ProjectRow): ProjectResponse {
  return {
    id: p.id,
    slug: p.slug,
    name: p.name,
    environments: JSON.parse(p.environments) as string[],
    archived: p.archivedAt !== null,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}

/** The projects where the caller holds `project.read` (every project for an estate-wide member), by slug. */
/** Every project's id and slug (ops's own checks that look at the whole estate, such as `ops doctor`). */
export function allProjects(core: Core): ProjectRef[] {
  return core.db
    .select({ id: projects.id })
    .from(projects)
    .orderBy(asc(projects.slug))
    .all()
    .map((p) => core.access.findProjectById(p.id))
    .filter((p): p is ProjectRef => p !== null);
}

export function listProjects(core: Core, principal: Principal): ProjectResponse[] {
  const grants = core.access.grants(principal);
  return core.db
    .select()
    .from(projects)
    .orderBy(asc(projects.slug))
    .all()
    .filter((p) => evaluate(principal, grants, { kind: "project", projectId: p.id, environment: null }).permissions.has("project.read"))
    .map(projectView);
}

/**
 * Change a project's name, environments or archive flag (audited as `project.settings`).
 * An archived project takes only `archived: false`. Environments removed lose their policies.
 */
export function updateProject(core: Core, slug: string, body: UpdateProjectBody, actor: AuditActor): ProjectResponse {
  const now = core.clock.now();
  return projectView(
    tx(core.db, (t) => {
      const p = t.select().from(projects).where(eq(projects.slug, slug)).get();
      if (!p) throw new OpsError("not_found", "No such project.");
      const set: Partial<ProjectRow> = { updatedAt: now };
      const changes: string[] = [];
      const unarchiving = body.archived === false && p.archivedAt !== null;
      if (p.archivedAt !== null && !unarchiving && (body.name !== undefined || body.environments !== undefined)) {
        throw new OpsError("archived", `Project "${slug}" is archived; unarchive it first.`);
      }
      if (body.name !== undefined) {
        const name = body.name.trim();
        if (name === "" || name.length > 100) throw invalid("name", "must be 1 to 100 characters");
        set.name = name;
        changes.push("name");
      }
      if (body.environments !== undefined) {
        const envs = validateEnvironments(body.environments);
        const before = JSON.parse(p.environments) as string[];
        const removed = before.filter((e) => !envs.includes(e));
        if (removed.length > 0) t.delete(environmentPolicies).where(and(eq(environmentPolicies.projectId, p.id), inArray(environmentPolicies.environment, removed))).run();
        set.environments = JSON.stringify(envs);
        changes.push("environments");
      }
      if (body.archived === true && p.archivedAt === null) {
        set.archivedAt = now;
        changes.push("archive");
      } else if (unarchiving) {
        set.archivedAt = null;
        changes.push("unarchive");
      }
      t.update(projects).set(set).where(eq(projects.id, p.id)).run();
      auditAllowed(core, t, actor, "project.settings", `project:${slug}`, { project: slug }, { op: "project.update", changes: changes.join(",") });
      return t.select().from(projects).where(eq(projects.id, p.id)).get()!;
    }),
  );
}
