/**
 * Project members (`project.read` to list, `project.members` to change). One membership per
 * operator per project; estate-wide members are listed too (`project: null`) but are changed
 * only through the operator routes.
 *
 * A caller cannot hand out more than they hold: the role given must be a subset of the caller's
 * own permissions in the project (403, audited), so `project.members` alone is no ladder to
 * everything else.
 */
import { and, asc, eq, isNull, or } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { ESTATE_KEYS, type PermissionKey } from "../../core/authz/catalog";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { iso } from "../../core/clock";
import { memberships, operators, roles, projects } from "./tables";
import { upsertMembership } from "./memberships";
import { findOperator } from "./operators";
import { deniedBy } from "./audit-deny";
import { operatorName, parseList, type RoleRow } from "./rows";
import type { MemberResponse } from "./model-projects";

/** Members of the project: its own memberships, then estate-wide ones. */
export function listMembers(core: Core, project: ProjectRef): MemberResponse[] {
  return core.db
    .select({ m: memberships, o: operators, r: roles, p: projects })
    .from(memberships)
    .innerJoin(operators, eq(operators.id, memberships.operatorId))
    .innerJoin(roles, eq(roles.id, memberships.roleId))
    .leftJoin(projects, eq(projects.id, memberships.projectId))
    .where(or(eq(memberships.projectId, project.id), isNull(memberships.projectId)))
    .orderBy(asc(memberships.scope), asc(operators.email), asc(operators.handle))
    .all()
    .sort((a, b) => (a.m.projectId === null ? 1 : 0) - (b.m.projectId === null ? 1 : 0))
    .map(({ m, o, r, p }) => ({
      operator_id: o.id,
      email: operatorName(o),
      display_name: o.displayName,
      kind: o.kind,
      project: p?.slug ?? null,
      project_name: p?.name ?? null,
      role_id: r.id,
      role_name: r.displayName,
      role_slug: r.slug,
      since: iso(m.createdAt),
    }));
}

/** Operators who could be added: not suspended, no membership in this project yet. Identity only. */
export function listCandidates(core: Core, project: ProjectRef) {
  const taken = new Set(
    core.db
      .select({ id: memberships.operatorId })
      .from(memberships)
      .where(eq(memberships.projectId, project.id))
      .all()
      .map((r) => r.id),
  );
  return core.db
    .select()
    .from(operators)
    .where(isNull(operators.suspendedAt))
    .orderBy(asc(operators.kind), asc(operators.email), asc(operators.handle))
    .all()
    .filter((o) => !taken.has(o.id))
    .map((o) => ({ id: o.id, email: operatorName(o), display_name: o.displayName, kind: o.kind }));
}

/** A role usable in `project`: a fixed role or one of the project's own. 404 otherwise. */
export function roleInProject(core: Core, roleId: string, project: ProjectRef): RoleRow {
  const role = core.db.select().from(roles).where(eq(roles.id, roleId)).get();
  if (!role || (role.projectId !== null && role.projectId !== project.id)) throw new OpsError("not_found", "No such role in this project.");
  return role;
}

/** 403 (audited) when `permissions` hold something the caller lacks in the project. */
export function assertCanGrant(core: Core, auth: AuthContext, permissions: readonly string[], target: string): void {
  const project = auth.project!;
  const extra = permissions.filter((k) => !ESTATE_KEYS.has(k as PermissionKey) && !auth.permissions.has(k));
  if (extra.length > 0) {
    throw deniedBy(core, auth, "project.members", target, `would grant more than the caller holds: ${extra.join(", ")}`, `You cannot grant permissions you do not hold in ${project.slug}: ${extra.join(", ")}.`, { project: project.slug });
  }
}

/**
 * Give `operatorId` the role in the project (adding them, or changing their role). With
 * `mustExist` (PUT) a non-member is 404. 409 archived project or suspended operator.
 */
export function setMembership(core: Core, auth: AuthContext, operatorId: string, roleId: string, mustExist: boolean): void {
  const project = auth.project!;
  const op = findOperator(core.db, operatorId);
  if (!op) throw new OpsError("not_found", "No such operator.");
  const role = roleInProject(core, roleId, project);
  if (mustExist && !core.db.select({ id: memberships.id }).from(memberships).where(and(eq(memberships.operatorId, operatorId), eq(memberships.projectId, project.id))).get()) {
    throw new OpsError("not_found", "That operator is not a member of this project.");
  }
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
  if (op.suspendedAt !== null) throw new OpsError("conflict", "That operator is suspended; unsuspend them first.");
  assertCanGrant(core, auth, parseList(role.permissions), `member:${operatorId}`);
  tx(core.db, (t) => {
    const { created } = upsertMembership(core, t, operatorId, project.id, role.id);
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `member:${operatorId}`, { project: project.slug }, { op: created ? "member.add" : "member.change", role: role.id });
  });
}

/** Remove the operator's membership in the project (404 when there is none). */
export function removeMember(core: Core, auth: AuthContext, operatorId: string): void {
  const project = auth.project!;
  tx(core.db, (t) => {
    const gone = t
      .delete(memberships)
      .where(and(eq(memberships.operatorId, operatorId), eq(memberships.projectId, project.id)))
      .returning({ id: memberships.id })
      .all();
    if (gone.length === 0) throw new OpsError("not_found", "That operator is not a member of this project.");
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `member:${operatorId}`, { project: project.slug }, { op: "member.remove" });
  });
}
