/**
 * Roles of a project: the fixed roles every project has plus the project's own. Creating and
 * editing needs `project.members`; fixed roles are untouchable (409), a role with members cannot
 * be deleted (409), unknown permissions and Estate keys are refused (422: a project role never
 * applies estate-wide, so an Estate key in it would be a lie). As with members, a caller cannot
 * put into a role permissions they do not hold in the project (403).
 */
import { and, asc, count, eq, isNull, or } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { ESTATE_KEYS, FIXED_ROLES, PERMISSION_KEYS, isPermissionKey, type PermissionKey } from "../../core/authz/catalog";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { roles, memberships, environmentPolicies } from "./tables";
import { assertCanGrant, roleInProject } from "./members";
import { parseList, type RoleRow } from "./rows";
import { ENVIRONMENT_KEYS } from "./policies";
import type { RoleResponse, WriteRoleBody } from "./model-projects";

export const ROLE_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

function view(core: Core, r: RoleRow, project: ProjectRef): RoleResponse {
  const scope = r.fixed ? or(eq(memberships.projectId, project.id), isNull(memberships.projectId)) : eq(memberships.projectId, project.id);
  const members = core.db.select({ n: count() }).from(memberships).where(and(eq(memberships.roleId, r.id), scope)).get()?.n ?? 0;
  return {
    id: r.id,
    slug: r.slug,
    display_name: r.displayName,
    description: r.description,
    fixed: r.fixed,
    members,
    permissions: parseList(r.permissions),
    project: r.projectId === null ? null : project.slug,
  };
}

/** Fixed roles first (owner → viewer), then the project's own by slug. */
export function listRoles(core: Core, project: ProjectRef): RoleResponse[] {
  const rows = core.db.select().from(roles).where(or(isNull(roles.projectId), eq(roles.projectId, project.id))).orderBy(asc(roles.createdAt), asc(roles.slug)).all();
  const order = FIXED_ROLES.map((f) => f.slug);
  const fixed = rows.filter((r) => r.fixed).sort((a, b) => order.indexOf(a.slug) - order.indexOf(b.slug));
  const own = rows.filter((r) => !r.fixed).sort((a, b) => a.slug.localeCompare(b.slug));
  return [...fixed, ...own].map((r) => view(core, r, project));
}

/** Validate and normalise a role's permission list (catalog order, no repeats). */
function checkPermissions(list: readonly string[]): PermissionKey[] {
  const unknown = list.filter((k) => !isPermissionKey(k));
  if (unknown.length > 0) throw new OpsError("refused", `Unknown permission: ${unknown.join(", ")}.`, { permissions: unknown });
  const estate = list.filter((k) => ESTATE_KEYS.has(k as PermissionKey));
  if (estate.length > 0) throw new OpsError("refused", `${estate.join(", ")} can only be held estate-wide, through a fixed role.`, { permissions: estate });
  const set = new Set(list);
  return PERMISSION_KEYS.filter((k) => set.has(k));
}

function checkNames(body: WriteRoleBody): { slug: string; displayName: string; description: string } {
  if (!ROLE_SLUG_PATTERN.test(body.slug)) throw invalid("slug", "must be lower-case letters, digits and dashes (up to 63)");
  const displayName = body.display_name.trim();
  if (displayName === "" || displayName.length > 100) throw invalid("display_name", "must be 1 to 100 characters");
  return { slug: body.slug, displayName, description: (body.description ?? "").trim() };
}

function assertSlugFree(core: Core, project: ProjectRef, slug: string, except: string | null): void {
  const clash = core.db
    .select({ id: roles.id })
    .from(roles)
    .where(and(eq(roles.slug, slug), or(isNull(roles.projectId), eq(roles.projectId, project.id))))
    .all()
    .find((r) => r.id !== except);
  if (clash) throw new OpsError("already_exists", `A role "${slug}" already exists in this project.`);
}

/** Create a project role (the path decides the project; the body's `project` is ignored). */
export function createRole(core: Core, auth: AuthContext, body: WriteRoleBody): RoleResponse {
  const project = auth.project!;
  const names = checkNames(body);
  const permissions = checkPermissions(body.permissions);
  assertSlugFree(core, project, names.slug, null);
  assertCanGrant(core, auth, permissions, `role:${names.slug}`);
  const now = core.clock.now();
  const row = tx(core.db, (t) => {
    const r = t
      .insert(roles)
      .values({ id: uuidv7(now), projectId: project.id, slug: names.slug, displayName: names.displayName, description: names.description, permissions: JSON.stringify(permissions), fixed: false, scope: project.id, createdAt: now, updatedAt: now })
      .returning()
      .get();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `role:${r.id}`, { project: project.slug }, { op: "role.create", slug: r.slug });
    return r;
  });
  return view(core, row, project);
}

function ownRole(core: Core, project: ProjectRef, id: string): RoleRow {
  const role = roleInProject(core, id, project);
  if (role.fixed) throw new OpsError("conflict", `"${role.slug}" is a fixed role; it cannot be changed or deleted.`);
  return role;
}

/**
 * Change a project role's names and permissions. Environment policies of the role are trimmed
 * to what it still has, so `removed` stays meaningful, and keep every project-wide key it gains.
 */
export function updateRole(core: Core, auth: AuthContext, id: string, body: WriteRoleBody): RoleResponse {
  const project = auth.project!;
  const role = ownRole(core, project, id);
  const names = checkNames(body);
  const permissions = checkPermissions(body.permissions);
  assertSlugFree(core, project, names.slug, role.id);
  assertCanGrant(core, auth, permissions, `role:${role.id}`);
  const now = core.clock.now();
  const row = tx(core.db, (t) => {
    t.update(roles).set({ slug: names.slug, displayName: names.displayName, description: names.description, permissions: JSON.stringify(permissions), updatedAt: now }).where(eq(roles.id, role.id)).run();
    for (const p of t.select().from(environmentPolicies).where(eq(environmentPolicies.roleId, role.id)).all()) {
      // Project-wide keys stay allowed: no environment narrows them (decision 0544).
      const had = new Set(parseList(p.allowed));
      const allowed = permissions.filter((k) => had.has(k) || !ENVIRONMENT_KEYS.has(k));
      t.update(environmentPolicies)
        .set({ allowed: JSON.stringify(allowed), updatedAt: now })
        .where(and(eq(environmentPolicies.projectId, p.projectId), eq(environmentPolicies.environment, p.environment), eq(environmentPolicies.roleId, p.roleId)))
        .run();
    }
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `role:${role.id}`, { project: project.slug }, { op: "role.update", slug: names.slug });
    return t.select().from(roles).where(eq(roles.id, role.id)).get()!;
  });
  return view(core, row, project);
}

/** Delete a project role: 409 for a fixed role or one that still has members. */
export function deleteRole(core: Core, auth: AuthContext, id: string): void {
  const project = auth.project!;
  const role = ownRole(core, project, id);
  tx(core.db, (t) => {
    const n = t.select({ n: count() }).from(memberships).where(eq(memberships.roleId, role.id)).get()?.n ?? 0;
    if (n > 0) throw new OpsError("conflict", `Role "${role.slug}" still has ${n} member${n === 1 ? "" : "s"}; give them another role first.`, { members: n });
    t.delete(roles).where(eq(roles.id, role.id)).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `role:${role.id}`, { project: project.slug }, { op: "role.delete", slug: role.slug });
  });
}
