/**
 * Projects: slug (resource-name pattern, immutable), name, ordered environments (default
 * `production`, `staging`), archive flag.
 */
import { eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { tx } from "../../core/db/client";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { projects } from "./tables";
import { toProjectRef, type ProjectRow } from "./rows";

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

/** The project as the authorization layer sees it, or null. */
export function findProjectRef(core: Core, slug: string): ProjectRef | null {
  const row = findProjectRow(core, slug);
  return row ? toProjectRef(row) : null;
}

export function findProjectRefById(core: Core, id: string): ProjectRef | null {
  const row = core.db.select().from(projects).where(eq(projects.id, id)).get();
  return row ? toProjectRef(row) : null;
}

/** Throw 409 `archived` when the project is archived (writes refuse on archived projects). */
export function assertNotArchived(project: ProjectRef): void {
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
}
