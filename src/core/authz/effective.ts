/**
 * Effective permissions, computed here and nowhere else (DESIGN.md §3):
 *
 * for a request in project P and environment E, the union over the caller's memberships that
 * apply in P (P's own and estate-wide ones) of each role's permissions, each narrowed by the
 * environment policy for (P, E, role) when there is one; then intersected with a minted token's
 * `scopes` snapshot, itself narrowed by the policy for (P, E, the token's role); nothing at all when a pinned token is used outside its project or the
 * operator is suspended. Only estate-wide memberships grant the Estate keys.
 */
import type { Principal } from "./principal";
import { ESTATE_KEYS, type PermissionKey } from "./catalog";

export interface Membership {
  /** null = estate-wide: the role applies in every project. */
  projectId: string | null;
  roleId: string;
  permissions: readonly string[];
}

export interface Policy {
  projectId: string;
  environment: string;
  roleId: string;
  allowed: readonly string[];
}

/** What the access domain knows about a caller: their memberships and the policies that touch them. */
export interface Grants {
  memberships: readonly Membership[];
  policies: readonly Policy[];
}

export const NO_GRANTS: Grants = { memberships: [], policies: [] };

/**
 * Where a permission is evaluated: in one project (and environment); estate-wide only (the
 * Estate keys and project-less admin routes); or "anywhere" (held in at least one project, for
 * project-less reads that the service then narrows per project).
 */
export type Scope =
  | { kind: "project"; projectId: string; environment: string | null }
  | { kind: "estate" }
  | { kind: "any" };

export interface Evaluation {
  permissions: Set<string>;
  /** Why nothing (or less) applies, for deny reasons; empty when nothing special narrowed it. */
  narrowedBy: Array<"suspended" | "pinned-elsewhere" | "token-scopes" | "policy" | "no-membership">;
}

function rolePermsIn(m: Membership, projectId: string, environment: string | null, policies: readonly Policy[], narrowed: Set<string>): string[] {
  let perms = m.permissions.filter((k) => m.projectId === null || !ESTATE_KEYS.has(k as PermissionKey));
  if (environment !== null) {
    const policy = policies.find((p) => p.projectId === projectId && p.environment === environment && p.roleId === m.roleId);
    if (policy) {
      const allowed = new Set(policy.allowed);
      const before = perms.length;
      perms = perms.filter((k) => allowed.has(k));
      if (perms.length < before) narrowed.add("policy");
    }
  }
  return perms;
}

/** Evaluate what `principal` may do in `scope`, with the reasons anything was narrowed. */
export function evaluate(principal: Principal, grants: Grants, scope: Scope): Evaluation {
  const narrowed = new Set<Evaluation["narrowedBy"][number]>();
  const out = new Set<string>();
  if (principal.suspended) return { permissions: out, narrowedBy: ["suspended"] };

  let effectiveScope = scope;
  if (principal.tokenProjectId !== null) {
    if (scope.kind === "project" && scope.projectId !== principal.tokenProjectId) {
      return { permissions: out, narrowedBy: ["pinned-elsewhere"] };
    }
    if (scope.kind === "estate") return { permissions: out, narrowedBy: ["pinned-elsewhere"] };
    if (scope.kind === "any") effectiveScope = { kind: "project", projectId: principal.tokenProjectId, environment: null };
  }

  let applied = 0;
  if (effectiveScope.kind === "project") {
    const { projectId, environment } = effectiveScope;
    for (const m of grants.memberships) {
      if (m.projectId !== null && m.projectId !== projectId) continue;
      applied++;
      for (const k of rolePermsIn(m, projectId, environment, grants.policies, narrowed)) out.add(k);
    }
  } else if (effectiveScope.kind === "estate") {
    for (const m of grants.memberships) {
      if (m.projectId !== null) continue;
      applied++;
      for (const k of m.permissions) out.add(k);
    }
  } else {
    for (const m of grants.memberships) {
      applied++;
      for (const k of m.permissions) if (m.projectId === null || !ESTATE_KEYS.has(k as PermissionKey)) out.add(k);
    }
  }
  if (applied === 0) narrowed.add("no-membership");

  if (principal.tokenScopes !== null) {
    const scopes = new Set(principal.tokenScopes);
    for (const k of [...out]) {
      if (!scopes.has(k)) {
        out.delete(k);
        narrowed.add("token-scopes");
      }
    }
    // The token's own role is narrowed by its environment policy like a member of that role.
    if (effectiveScope.kind === "project" && effectiveScope.environment !== null) {
      const { projectId, environment } = effectiveScope;
      const policy = principal.tokenRolePolicies?.find((p) => p.projectId === projectId && p.environment === environment);
      if (policy) {
        const allowed = new Set(policy.allowed);
        for (const k of [...out]) {
          if (!allowed.has(k)) {
            out.delete(k);
            narrowed.add("policy");
          }
        }
      }
    }
  }
  return { permissions: out, narrowedBy: [...narrowed] };
}

/** Just the set (see `evaluate`). */
export function effectivePermissions(principal: Principal, grants: Grants, scope: Scope): Set<string> {
  return evaluate(principal, grants, scope).permissions;
}

/** A one-line deny reason for the audit log. Never mentions secrets. */
export function denyReason(key: string, ev: Evaluation, where: string): string {
  if (ev.narrowedBy.includes("suspended")) return "operator is suspended";
  if (ev.narrowedBy.includes("pinned-elsewhere")) return `token is pinned to another project`;
  if (ev.narrowedBy.includes("no-membership")) return `no role ${where}`;
  if (ev.narrowedBy.includes("policy") && !ev.permissions.has(key)) return `environment policy removes ${key}`;
  if (ev.narrowedBy.includes("token-scopes")) return `token scopes lack ${key}`;
  return `role lacks ${key} ${where}`;
}
