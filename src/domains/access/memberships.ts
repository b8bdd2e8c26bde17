/**
 * Memberships: one per operator per project (or one estate-wide, `project_id` null). Setting a
 * membership for an operator who already has one in that scope changes their role.
 */
import { and, eq, isNull, or } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable, Tx } from "../../core/db/client";
import { uuidv7 } from "../../core/ids";
import { memberships, operators, roles } from "./tables";
import type { MembershipRow } from "./rows";

/** Insert or change the operator's membership in `projectId` (null = estate-wide) inside `t`. */
export function upsertMembership(core: Core, t: Tx, operatorId: string, projectId: string | null, roleId: string): { row: MembershipRow; created: boolean } {
  const scope = projectId === null ? isNull(memberships.projectId) : eq(memberships.projectId, projectId);
  const existing = t.select().from(memberships).where(and(eq(memberships.operatorId, operatorId), scope)).get();
  if (existing) {
    if (existing.roleId !== roleId) t.update(memberships).set({ roleId }).where(eq(memberships.id, existing.id)).run();
    return { row: { ...existing, roleId }, created: false };
  }
  const now = core.clock.now();
  const row = t.insert(memberships).values({ id: uuidv7(now), operatorId, projectId, roleId, scope: projectId ?? "", createdAt: now }).returning().get();
  return { row, created: true };
}

/** The people estate notices go to: persons holding `permission` estate-wide, not suspended. */
export function estatePeople(q: Queryable, permission: string): string[] {
  return q
    .selectDistinct({ id: operators.id, permissions: roles.permissions })
    .from(memberships)
    .innerJoin(operators, eq(operators.id, memberships.operatorId))
    .innerJoin(roles, eq(roles.id, memberships.roleId))
    .where(and(isNull(memberships.projectId), eq(operators.kind, "person"), isNull(operators.suspendedAt)))
    .all()
    .filter((r) => (JSON.parse(r.permissions) as string[]).includes(permission))
    .map((r) => r.id);
}

/**
 * The people a project's notices go to: everyone with a membership there or estate-wide, not
 * suspended. Machines get no notices (nobody reads them).
 */
export function projectPeople(q: Queryable, projectId: string): string[] {
  return q
    .selectDistinct({ id: operators.id })
    .from(memberships)
    .innerJoin(operators, eq(operators.id, memberships.operatorId))
    .where(and(or(eq(memberships.projectId, projectId), isNull(memberships.projectId)), eq(operators.kind, "person"), isNull(operators.suspendedAt)))
    .all()
    .map((r) => r.id);
}
