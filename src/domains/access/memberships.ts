/**
 * Memberships: one per operator per project (or one estate-wide, `project_id` null). Setting a
 * membership for an operator who already has one in that scope changes their role.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { uuidv7 } from "../../core/ids";
import { memberships } from "./tables";
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
