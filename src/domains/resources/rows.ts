/**
 * Row-level helpers shared by every resource type: lookups, the JSON view, status writes. No
 * type-specific rules live here (see kinds.ts), so the per-type files can import it freely.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { iso } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { resources } from "./tables";
import type { ResourceResponse } from "./model";
import { TYPE_INFO, type ResourceType } from "./specs";

export type ResourceRow = typeof resources.$inferSelect;

/** The status a resource carries until first observed: `pending` with the text `null`. */
export const UNOBSERVED_SUMMARY = "null";

export interface Observed {
  state: "ready" | "pending" | "error";
  summary: string;
  detail?: Record<string, unknown>;
}

/** Where a resource lives: its project and environment (null for project-level types). */
export interface Place {
  project: ProjectRef;
  environment: string | null;
}

/**
 * The environment a resource route acts in: a project-level type has none; otherwise the
 * `environment` parameter, default `production`. An explicit unknown environment is 404 (also
 * for project-level types, so a typo never passes silently).
 */
export function placeFor(project: ProjectRef, type: ResourceType, environment: string | null | undefined): Place {
  if (environment !== undefined && environment !== null && environment !== "" && !project.environments.includes(environment)) {
    throw new OpsError("not_found", `No such environment "${environment}" in this project.`);
  }
  if (TYPE_INFO[type].projectLevel) return { project, environment: null };
  return { project, environment: environment || "production" };
}

export function scopeOf(environment: string | null): string {
  return environment ?? "";
}

/** The resource, or null. */
export function findResource(q: Queryable, place: Place, type: ResourceType, name: string): ResourceRow | null {
  return (
    q
      .select()
      .from(resources)
      .where(and(eq(resources.projectId, place.project.id), eq(resources.scope, scopeOf(place.environment)), eq(resources.type, type), eq(resources.name, name)))
      .get() ?? null
  );
}

/** The resource, or 404 naming what is missing. */
export function getResourceRow(q: Queryable, place: Place, type: ResourceType, name: string): ResourceRow {
  const row = findResource(q, place, type, name);
  if (!row) {
    const where = place.environment ? ` in ${place.environment}` : "";
    throw new OpsError("not_found", `No ${type} "${name}"${where} in project ${place.project.slug}.`);
  }
  return row;
}

/** Every resource of `type` in one environment (or project-level), by name. */
export function listOfType(q: Queryable, place: Place, type: ResourceType): ResourceRow[] {
  return q
    .select()
    .from(resources)
    .where(and(eq(resources.projectId, place.project.id), eq(resources.scope, scopeOf(place.environment)), eq(resources.type, type)))
    .orderBy(asc(resources.name))
    .all();
}

/** Every resource of a project with `type`, in every environment. */
export function listOfTypeInProject(q: Queryable, projectId: string, type: ResourceType): ResourceRow[] {
  return q.select().from(resources).where(and(eq(resources.projectId, projectId), eq(resources.type, type))).orderBy(asc(resources.name)).all();
}

/** Every resource of a type, in every project (start-up work). */
export function listOfTypeEverywhere(q: Queryable, type: ResourceType): ResourceRow[] {
  return q.select().from(resources).where(eq(resources.type, type)).all();
}

export function specOf<T = Record<string, unknown>>(row: ResourceRow): T {
  return JSON.parse(row.spec) as T;
}

/** The JSON view of a resource. */
export function toResponse(row: ResourceRow, projectSlug: string): ResourceResponse {
  return {
    created_at: iso(row.createdAt),
    environment: row.environment,
    id: row.id,
    name: row.name,
    project: projectSlug,
    spec: JSON.parse(row.spec),
    status: {
      detail: JSON.parse(row.statusDetail),
      observed_at: iso(row.statusAt),
      state: row.statusState,
      summary: row.statusSummary,
    },
    type: row.type,
    updated_at: iso(row.updatedAt),
    updated_by: row.updatedBy,
    version: row.version,
  };
}

/** Store a fresh observation. */
export function writeStatus(core: Core, q: Queryable, id: string, o: Observed): void {
  const now = core.clock.now();
  q.update(resources)
    .set({ statusState: o.state, statusSummary: o.summary, statusDetail: JSON.stringify(o.detail ?? {}), statusAt: now, observedAt: now })
    .where(eq(resources.id, id))
    .run();
}

export function resourceById(q: Queryable, id: string): ResourceRow | null {
  return q.select().from(resources).where(eq(resources.id, id)).get() ?? null;
}

/** Audit target naming a resource. */
export function auditTarget(type: string, name: string): string {
  return `resource:${type}/${name}`;
}
