/**
 * What the signed-in person may do, decided the way the server decides it: the console runs the
 * server's own evaluation (core/authz/effective.ts) over what `GET /api/v1/me` reports — the
 * memberships with their roles' permissions, the environment policies that narrow them, and a
 * token's pin and scopes — so a page offers an action only when the route would allow it, and
 * says why not (in the words of the audit log's deny reason) when it would not.
 *
 * Projects are named by slug on both sides here (MeResponse names them so), which the evaluation
 * treats as opaque ids.
 */
import { denyReason, evaluate, type Grants } from "../core/authz/effective";
import { ESTATE_KEYS, PERMISSIONS, type PermissionKey } from "../core/authz/catalog";
import type { Principal } from "../core/authz/principal";
import type { Me } from "./api";

/**
 * The environment a route evaluates in: null for routes declared `environment: "none"` (no
 * policy applies), else the request's `environment` (path or query) or `production`, as the
 * authorization macro does.
 */
export type RouteEnvironment = string | null;

/** The environment a project route without its own environment rule evaluates in. */
export function routeEnvironment(explicit?: string | null): string {
  return explicit || "production";
}

export interface Access {
  /** Whether the person holds `key` in this project (and environment; see RouteEnvironment). */
  can(key: PermissionKey, environment: RouteEnvironment): boolean;
  /** Whether `key` is held in at least one of `environments` or project-wide. */
  canSomewhere(key: PermissionKey, environments: readonly string[]): boolean;
  /** Why `key` is refused, for a disabled control's hover text; "" when it is allowed. */
  why(key: PermissionKey, environment: RouteEnvironment): string;
}

function grantsOf(me: Me): Grants {
  return {
    memberships: me.memberships.map((m) => ({ projectId: m.project ?? null, roleId: m.role_id, permissions: m.permissions })),
    policies: me.policies.map((p) => ({ projectId: p.project, environment: p.environment, roleId: p.role_id, allowed: p.allowed })),
  };
}

function principalOf(me: Me): Principal {
  // Only the fields the evaluation reads; the rest describe the credential for the audit log.
  return { suspended: me.suspended, tokenProjectId: me.token_project ?? null, tokenScopes: me.token_scopes ?? null } as Principal;
}

function labelOf(key: PermissionKey): string {
  return PERMISSIONS.find((p) => p.key === key)?.label ?? key;
}

/**
 * The permissions whose routes change a project and so answer 409 `archived` while it is archived
 * (decision 0303). Members, roles, policies and settings (unarchiving) stay open; a database's
 * page keeps its runbook (a read under databases.manage) and withholds only the rotation.
 */
const ARCHIVE_REFUSES: ReadonlySet<PermissionKey> = new Set<PermissionKey>([
  "resources.write",
  "resources.destroy",
  "jobs.run",
  "secrets.write",
  "secrets.rotate",
  "sources.write",
  "sources.save",
  "builds.run",
  "deployments.deploy",
  "translations.write",
  "packages.publish",
]);

export const ARCHIVED_REASON = "The project is archived: it takes no changes until it is unarchived on its Settings page.";

/** The person's access in `project` (a slug), or estate-wide when `project` is null; an archived project refuses its writes. */
export function accessOf(me: Me, project: string | null, opts: { archived?: boolean } = {}): Access {
  const grants = grantsOf(me);
  const principal = principalOf(me);
  const evaluation = (key: PermissionKey, environment: RouteEnvironment) =>
    evaluate(principal, grants, ESTATE_KEYS.has(key) ? { kind: "estate" } : project === null ? { kind: "any" } : { kind: "project", projectId: project, environment });
  const frozen = (key: PermissionKey) => opts.archived === true && ARCHIVE_REFUSES.has(key);
  const can = (key: PermissionKey, environment: RouteEnvironment) => !frozen(key) && evaluation(key, environment).permissions.has(key);
  return {
    can,
    canSomewhere: (key, environments) => can(key, null) || environments.some((e) => can(key, e)),
    why(key, environment) {
      if (frozen(key)) return ARCHIVED_REASON;
      const ev = evaluation(key, environment);
      if (ev.permissions.has(key)) return "";
      const where = ESTATE_KEYS.has(key) ? "estate-wide" : project === null ? "in any project" : `in ${project}${environment ? ` (${environment})` : ""}`;
      return `Needs “${labelOf(key)}” (${key}): ${denyReason(key, ev, where)}.`;
    },
  };
}
