/**
 * Environment policies: in one environment of a project, a project role keeps only `allowed`
 * (a subset of its permissions); `removed` is computed. Fixed roles take no policy (409).
 *
 * A policy removes only what an environment narrows: the keys some route or service evaluates in
 * one environment (ENVIRONMENT_KEYS). A policy that leaves out a project-wide key the role holds
 * (members, settings, audit, sources, translations, packages) would list it as removed and remove
 * nothing, so it is refused with 422 naming each such key. Decision:
 * docs/decisions/0544-policies-remove-only-what-environments-narrow.md.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { PERMISSION_KEYS, isPermissionKey, type PermissionKey } from "../../core/authz/catalog";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { iso } from "../../core/clock";
import { environmentPolicies, roles } from "./tables";
import { roleInProject } from "./members";
import { parseList, type RoleRow } from "./rows";
import type { EnvironmentPolicyResponse } from "./model-projects";

/**
 * The keys checked in one environment somewhere: by a route's own scope (resources, jobs,
 * databases, secrets, builds, deployments) or inside a service per environment (a unit's dotenv
 * export, telemetry reads and intake). policies.test.ts walks every route to keep this list true.
 */
export const ENVIRONMENT_KEYS: ReadonlySet<PermissionKey> = new Set<PermissionKey>([
  "resources.read",
  "resources.write",
  "resources.destroy",
  "jobs.run",
  "databases.manage",
  "secrets.read",
  "secrets.write",
  "secrets.reveal",
  "secrets.rotate",
  "builds.read",
  "builds.run",
  "deployments.read",
  "deployments.deploy",
  "obs.read",
  "obs.ingest",
]);

function view(role: Pick<RoleRow, "id" | "displayName" | "permissions">, environment: string, allowedJson: string, updatedAt: number): EnvironmentPolicyResponse {
  const allowed = new Set(parseList(allowedJson));
  const perms = parseList(role.permissions);
  return {
    environment,
    role_id: role.id,
    role_name: role.displayName,
    allowed: PERMISSION_KEYS.filter((k) => allowed.has(k)),
    removed: PERMISSION_KEYS.filter((k) => ENVIRONMENT_KEYS.has(k) && perms.includes(k) && !allowed.has(k)),
    updated_at: iso(updatedAt),
  };
}

export function listPolicies(core: Core, project: ProjectRef): EnvironmentPolicyResponse[] {
  return core.db
    .select({ p: environmentPolicies, r: roles })
    .from(environmentPolicies)
    .innerJoin(roles, eq(roles.id, environmentPolicies.roleId))
    .where(eq(environmentPolicies.projectId, project.id))
    .orderBy(asc(environmentPolicies.environment), asc(roles.slug))
    .all()
    .map(({ p, r }) => view(r, p.environment, p.allowed, p.updatedAt));
}

function target(core: Core, project: ProjectRef, environment: string, roleId: string): RoleRow {
  if (!project.environments.includes(environment)) throw new OpsError("not_found", `No such environment "${environment}" in this project.`);
  return roleInProject(core, roleId, project);
}

/** Set the policy for (environment, role): 404 unknown environment or role; 409 fixed role; 422 keys the role lacks, or project-wide keys left out. */
export function putPolicy(core: Core, auth: AuthContext, environment: string, roleId: string, allowed: readonly string[]): EnvironmentPolicyResponse {
  const project = auth.project!;
  const role = target(core, project, environment, roleId);
  if (role.fixed) throw new OpsError("conflict", `"${role.slug}" is a fixed role; fixed roles take no environment policy.`);
  const unknown = allowed.filter((k) => !isPermissionKey(k));
  if (unknown.length > 0) throw new OpsError("refused", `Unknown permission: ${unknown.join(", ")}.`, { permissions: unknown });
  const perms = new Set(parseList(role.permissions));
  const lacking = allowed.filter((k) => !perms.has(k));
  if (lacking.length > 0) throw new OpsError("refused", `A policy can only keep what the role has; "${role.slug}" lacks ${lacking.join(", ")}.`, { permissions: lacking });
  const keep = new Set(allowed);
  const projectWide = PERMISSION_KEYS.filter((k) => perms.has(k) && !keep.has(k) && !ENVIRONMENT_KEYS.has(k));
  if (projectWide.length > 0) {
    const list = projectWide.join(", ");
    throw new OpsError("refused", `No environment narrows ${list}: ${projectWide.length === 1 ? "it applies" : "they apply"} in the whole project. Keep ${projectWide.length === 1 ? "it" : "them"} in allowed, or take ${projectWide.length === 1 ? "it" : "them"} out of the role "${role.slug}".`, { permissions: projectWide });
  }
  const json = JSON.stringify(PERMISSION_KEYS.filter((k) => keep.has(k)));
  const now = core.clock.now();
  tx(core.db, (t) => {
    t.insert(environmentPolicies)
      .values({ projectId: project.id, environment, roleId: role.id, allowed: json, updatedAt: now })
      .onConflictDoUpdate({ target: [environmentPolicies.projectId, environmentPolicies.environment, environmentPolicies.roleId], set: { allowed: json, updatedAt: now } })
      .run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `policy:${environment}/${role.id}`, { project: project.slug, environment }, { op: "policy.put" });
  });
  return view(role, environment, json, now);
}

/** Drop the policy: the role has its full set again in that environment. 404 when there is none. */
export function deletePolicy(core: Core, auth: AuthContext, environment: string, roleId: string): void {
  const project = auth.project!;
  const role = target(core, project, environment, roleId);
  tx(core.db, (t) => {
    const gone = t
      .delete(environmentPolicies)
      .where(and(eq(environmentPolicies.projectId, project.id), eq(environmentPolicies.environment, environment), eq(environmentPolicies.roleId, role.id)))
      .returning({ e: environmentPolicies.environment })
      .all();
    if (gone.length === 0) throw new OpsError("not_found", "No policy for that role in that environment.");
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "project.members", `policy:${environment}/${role.id}`, { project: project.slug, environment }, { op: "policy.delete" });
  });
}
