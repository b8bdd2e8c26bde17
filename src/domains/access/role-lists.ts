/**
 * Role lists for choosers (device approval, install codes): the fixed roles every project has,
 * in catalog order, then the named projects' own roles by name.
 */
import { inArray, isNull, or, asc } from "drizzle-orm";
import type { Queryable } from "../../core/db/client";
import { FIXED_ROLES } from "../../core/authz/catalog";
import { roles } from "./tables";
import type { RoleRow } from "./rows";

/** Fixed roles plus the roles defined in `projectIds`. */
export function rolesForProjects(q: Queryable, projectIds: readonly string[]): RoleRow[] {
  const where = projectIds.length > 0 ? or(isNull(roles.projectId), inArray(roles.projectId, [...projectIds])) : isNull(roles.projectId);
  const rows = q.select().from(roles).where(where).orderBy(asc(roles.displayName)).all();
  const order = new Map(FIXED_ROLES.map((f, i) => [f.slug, i]));
  const fixed = rows.filter((r) => r.projectId === null).sort((a, b) => (order.get(a.slug) ?? 99) - (order.get(b.slug) ?? 99));
  return [...fixed, ...rows.filter((r) => r.projectId !== null)];
}
