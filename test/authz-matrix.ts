/**
 * The authorization matrix: every permission-guarded route × every kind of caller, with the
 * outcome expected. The access and notifications rows live here; every other domain keeps its
 * rows in `test/authz-matrix.<domain>.ts` and registers them with `registerMatrixDomain(…)`
 * (its rows, the route tags it covers, its public routes); `test/authz-matrix.test.ts` imports
 * every domain file, builds one world and runs them all.
 *
 * Callers (columns), all in the project `world.project` unless said otherwise:
 * - owner: estate-wide owner (session)
 * - maintainer, developer, viewer: the fixed roles in the project (sessions)
 * - custom: the project role `auditor` = project.read + audit.read (session)
 * - pinnedElsewhere: a maintainer of both projects using a maintainer token pinned to the other one
 * - narrowToken: a maintainer of the project using an unpinned token minted with the viewer role
 * - policyRestricted: the project role `releaser` (project.read, project.members, audit.read,
 *   deployments.read, deployments.deploy) under a `production` policy keeping only project.read
 *   and deployments.read — it bites on environment-scoped routes, never on project-level ones
 * - policyReadOnly: the project role `steward` (the resources, secrets and packages keys) under a
 *   `production` policy keeping only project.read, resources.read, secrets.read and packages.read:
 *   read-only in production, full rights in staging and on project-level routes (buckets, secrets
 *   per deploy unit, packages)
 * - suspended: a maintainer of the project whose operator is suspended
 *
 * Expectations: "allow" = authorization passed (any status but 401/403/5xx; the business outcome
 * may be 404/409/422, or exactly `status` when the row says so); "deny" = 403 and a new `denied`
 * audit row for that operator; "refuse" = 422 `refused` and a new `denied` audit row (a token rule,
 * e.g. a pinned token minting elsewhere); "unauth" = 401. The runner also sends every row without
 * credentials and expects 401.
 *
 * Most rows derive their expectations from the route's declared permission and where the macro
 * evaluates it (`guarded(route, key, where)`; the runner checks the key against the route's
 * `permission:`), through `holds()`: DESIGN.md §3's effective-permission rules applied to the
 * columns' roles, written out here independently of src/core/authz/effective.ts.
 */
import type { TestApp } from "./harness";
import type { ProjectRow, OperatorRow } from "../src/domains/access/service";
import type { RequestMeta } from "../src/core/authz/principal";
import type { AuthContext } from "../src/core/authz/plugin";
import { ESTATE_KEYS, FIXED_ROLES, type PermissionKey } from "../src/core/authz/catalog";

export const COLUMNS = ["owner", "maintainer", "developer", "viewer", "custom", "pinnedElsewhere", "narrowToken", "policyRestricted", "policyReadOnly", "suspended"] as const;
export type Column = (typeof COLUMNS)[number];
export type Expect = "allow" | "deny" | "refuse" | "unauth";
export type Expectations = Record<Column, Expect>;

/** The project roles the world creates in `world.project` (the runner makes them from this). */
export const PROJECT_ROLES = {
  tiny: ["project.read"],
  auditor: ["project.read", "audit.read"],
  releaser: ["project.read", "project.members", "audit.read", "deployments.read", "deployments.deploy"],
  steward: [
    "project.read",
    "resources.read",
    "resources.write",
    "resources.destroy",
    "jobs.run",
    "databases.manage",
    "secrets.read",
    "secrets.write",
    "secrets.reveal",
    "secrets.rotate",
    "packages.read",
    "packages.publish",
  ],
  spare: ["project.read"],
  doomed: ["project.read"],
} as const satisfies Record<string, readonly PermissionKey[]>;
export type ProjectRoleSlug = keyof typeof PROJECT_ROLES;

/** The environment policies of `world.project`: role → environment → the keys it keeps. */
export const POLICIES: Partial<Record<ProjectRoleSlug, Record<string, readonly PermissionKey[]>>> = {
  releaser: { production: ["project.read", "deployments.read"] },
  steward: { production: ["project.read", "resources.read", "secrets.read", "packages.read"] },
};

/** What rows can refer to. Domains may add their own fixtures in a row's `setup`. */
export interface World {
  t: TestApp;
  project: ProjectRow;
  other: ProjectRow;
  /** Ids of fixed roles by slug and of the project's own roles (tiny = project.read only). */
  roles: Record<"owner" | "maintainer" | "developer" | "viewer" | ProjectRoleSlug, string>;
  /** Operators rows may act on (never one of the callers). */
  targets: { person: OperatorRow; member: OperatorRow };
  /** A fresh name on every call. */
  unique(prefix: string): string;
  /** Scratch space for rows' setups. */
  vars: Record<string, string>;
  /** The estate owner (not a column's operator) as a service sees it, to create what rows act on. */
  setupAuth(environment?: string | null): AuthContext;
  /** Request meta for setups, with a fresh client address each call (per-address limits never bite). */
  setupMeta(): RequestMeta;
}

export interface MatrixRow {
  /** `METHOD /path/:param` exactly as the app registers it (used for coverage). */
  route: string;
  /** Tells rows of the same route apart in the test name (e.g. "in staging"). */
  name?: string;
  /** The key the route declares (`permission:`); the runner checks it against the route. */
  permission?: string;
  /** The concrete path (placeholders filled from the world); evaluated for every request. */
  path: (w: World) => string;
  /** A JSON body; evaluated for every request. */
  body?: (w: World) => unknown;
  /** A raw body with its headers instead of JSON (e.g. a binary upload). */
  raw?: (w: World) => { body: BodyInit; headers: Record<string, string> };
  /** Runs once before the row (create what the route acts on). */
  setup?: (w: World) => void | Promise<void>;
  /** Runs before every request of the row (fresh data per caller, e.g. something to delete). */
  each?: (w: World) => void | Promise<void>;
  /** Runs after the row, pass or fail (undo what the row changed for everyone, e.g. a seal). */
  after?: (w: World) => void | Promise<void>;
  /** The status every allowed caller must get (shows the setup put in place what the route acts on). */
  status?: number;
  /** More checks of an allowed caller's answer; return a problem, or null. */
  verify?: (w: World, column: Column, body: string) => string | null;
  expect: Expectations;
}

export const row = (e: Partial<Expectations> & { base: Expect }): Expectations => {
  const { base, ...rest } = e;
  return Object.fromEntries(COLUMNS.map((c) => [c, (rest as Partial<Expectations>)[c] ?? base])) as Expectations;
};

/**
 * Where the macro evaluates a route's permission (DESIGN.md §3): in `world.project` without an
 * environment ("project": project-level routes), in it and one environment ("production",
 * "staging": environment policies apply), "anywhere" (no project in the route: held in some
 * project; a pinned token's anywhere is its own project), or "estate" (the Estate keys).
 */
export type Where = "project" | "production" | "staging" | "anywhere" | "estate";

const FIXED = Object.fromEntries(FIXED_ROLES.map((r) => [r.slug, new Set<string>(r.permissions)])) as Record<string, ReadonlySet<string>>;

function roleKeeps(role: ProjectRoleSlug, key: string, where: Where): boolean {
  const perms: readonly string[] = PROJECT_ROLES[role];
  if (!perms.includes(key)) return false;
  const kept = where === "production" || where === "staging" ? POLICIES[role]?.[where] : undefined;
  return kept === undefined || (kept as readonly string[]).includes(key);
}

/**
 * Whether column `c` holds `key` where the route evaluates it, by DESIGN.md §3: the union of the
 * memberships that apply (only estate-wide ones grant the Estate keys), each narrowed by its
 * environment policy; intersected with a token's scopes; nothing for a pinned token outside its
 * project. (A suspended operator's credentials never authenticate: that column is "unauth".)
 */
export function holds(c: Column, key: string, where: Where): boolean {
  const project = where !== "estate";
  switch (c) {
    case "owner":
      return true;
    case "maintainer":
    case "developer":
    case "viewer":
      return project && FIXED[c].has(key);
    case "custom":
      return project && roleKeeps("auditor", key, where);
    case "pinnedElsewhere":
      // Pinned to the other project, where it is a maintainer: only "anywhere" reaches it.
      return where === "anywhere" && FIXED.maintainer.has(key);
    case "narrowToken":
      return project && FIXED.maintainer.has(key) && FIXED.viewer.has(key);
    case "policyRestricted":
      return project && roleKeeps("releaser", key, where);
    case "policyReadOnly":
      return project && roleKeeps("steward", key, where);
    case "suspended":
      return false;
  }
}

/** The expectations of a route guarded by `key` where the macro evaluates it. */
export function gate(key: PermissionKey | "authenticated", where: Where): Expectations {
  if (ESTATE_KEYS.has(key as PermissionKey) && where !== "estate") throw new Error(`${key} is always evaluated estate-wide`);
  return Object.fromEntries(COLUMNS.map((c) => [c, c === "suspended" ? "unauth" : key === "authenticated" || holds(c, key, where) ? "allow" : "deny"])) as Expectations;
}

/**
 * A row for a route guarded by `key`, evaluated `where`: expectations from `gate`, with the
 * service's own refusals (a token rule, say) laid over them in `override`.
 */
export function guarded(
  route: string,
  key: PermissionKey | "authenticated",
  where: Where,
  rest: Omit<MatrixRow, "route" | "permission" | "expect"> & { override?: Partial<Expectations> },
): MatrixRow {
  const { override, ...r } = rest;
  return { route, permission: key, ...r, expect: { ...gate(key, where), ...override } };
}

/** Any signed-in caller (self-service). */
export const ANYONE = row({ base: "allow", suspended: "unauth" });
/** Self-service that only a signed-in session may do (password, MFA). */
export const SESSION_ONLY = row({ base: "allow", pinnedElsewhere: "deny", narrowToken: "deny", suspended: "unauth" });
/** Estate keys: only the estate-wide owner. */
export const ESTATE = gate("estate.manage", "estate");
/** `project.read`, project-level. */
export const PROJECT_READ = gate("project.read", "project");
/** `project.members`, project-level. */
export const PROJECT_MEMBERS = gate("project.members", "project");
/** `project.settings`, project-level. */
export const PROJECT_SETTINGS = gate("project.settings", "project");
/** `audit.read`, project-level. */
export const AUDIT_READ = gate("audit.read", "project");

const NO_ID = "0190a0a0-0000-7000-8000-000000000000";
const P = (w: World) => `/api/v1/projects/${w.project.slug}`;

/** Rows of the access and notifications routes (issue 3). */
export const ACCESS_ROWS: MatrixRow[] = [
  { route: "GET /api/v1/permissions", path: () => "/api/v1/permissions", expect: ANYONE },
  { route: "GET /api/v1/me", path: () => "/api/v1/me", expect: ANYONE },
  { route: "GET /api/v1/me/sessions", path: () => "/api/v1/me/sessions", expect: ANYONE },
  { route: "DELETE /api/v1/me/sessions/:session_id", path: () => `/api/v1/me/sessions/${NO_ID}`, expect: ANYONE },
  { route: "POST /api/v1/auth/logout", path: () => "/api/v1/auth/logout", expect: ANYONE },
  { route: "POST /api/v1/auth/password", path: () => "/api/v1/auth/password", body: () => ({ current_password: "not-the-password", new_password: "matrix-new-password" }), expect: SESSION_ONLY },
  // MFA in this order: confirm (nothing waiting: 409), enrol (200), delete (204).
  { route: "POST /api/v1/me/mfa/confirm", path: () => "/api/v1/me/mfa/confirm", body: () => ({ code: "000000" }), expect: SESSION_ONLY },
  { route: "POST /api/v1/me/mfa/enrol", path: () => "/api/v1/me/mfa/enrol", expect: SESSION_ONLY },
  { route: "DELETE /api/v1/me/mfa", path: () => "/api/v1/me/mfa", expect: SESSION_ONLY },
  { route: "GET /api/v1/notifications", path: () => "/api/v1/notifications", expect: ANYONE },
  { route: "POST /api/v1/notifications/read-all", path: () => "/api/v1/notifications/read-all", expect: ANYONE },
  { route: "GET /api/v1/notifications/unread-count", path: () => "/api/v1/notifications/unread-count", expect: ANYONE },
  { route: "POST /api/v1/notifications/:id/read", path: () => `/api/v1/notifications/${NO_ID}/read`, expect: ANYONE },
  { route: "GET /api/v1/tokens", path: () => "/api/v1/tokens", expect: ANYONE },
  {
    route: "POST /api/v1/tokens",
    path: () => "/api/v1/tokens",
    body: (w) => ({ name: w.unique("matrix-token"), role_id: w.roles.tiny, project: w.project.slug }),
    expect: row({ base: "allow", pinnedElsewhere: "refuse", suspended: "unauth" }),
  },
  { route: "DELETE /api/v1/tokens/:id", path: () => `/api/v1/tokens/${NO_ID}`, expect: ANYONE },
  { route: "GET /api/v1/projects", path: () => "/api/v1/projects", expect: ANYONE },
  { route: "GET /api/v1/operators", path: () => "/api/v1/operators", expect: ESTATE },
  { route: "POST /api/v1/operators", path: () => "/api/v1/operators", body: (w) => ({ kind: "machine", handle: w.unique("matrix-bot"), display_name: "Matrix bot" }), expect: ESTATE },
  { route: "PATCH /api/v1/operators/:id", path: (w) => `/api/v1/operators/${w.targets.person.id}`, body: () => ({ display_name: "Renamed by the matrix" }), expect: ESTATE },
  { route: "POST /api/v1/projects", path: () => "/api/v1/projects", body: (w) => ({ slug: w.unique("matrix-new"), name: "New" }), expect: ESTATE },
  { route: "GET /api/v1/projects/:slug", path: P, expect: PROJECT_READ },
  { route: "PATCH /api/v1/projects/:slug", path: P, body: () => ({ name: "Matrix project" }), expect: PROJECT_SETTINGS },
  { route: "GET /api/v1/projects/:slug/members", path: (w) => `${P(w)}/members`, expect: PROJECT_READ },
  { route: "POST /api/v1/projects/:slug/members", path: (w) => `${P(w)}/members`, body: (w) => ({ operator_id: w.targets.member.id, role_id: w.roles.tiny }), expect: PROJECT_MEMBERS },
  { route: "GET /api/v1/projects/:slug/members/candidates", path: (w) => `${P(w)}/members/candidates`, expect: PROJECT_MEMBERS },
  { route: "PUT /api/v1/projects/:slug/members/:operator_id", path: (w) => `${P(w)}/members/${w.targets.member.id}`, body: (w) => ({ operator_id: w.targets.member.id, role_id: w.roles.tiny }), expect: PROJECT_MEMBERS },
  { route: "DELETE /api/v1/projects/:slug/members/:operator_id", path: (w) => `${P(w)}/members/${w.targets.member.id}`, expect: PROJECT_MEMBERS },
  { route: "GET /api/v1/projects/:slug/roles", path: (w) => `${P(w)}/roles`, expect: PROJECT_READ },
  { route: "POST /api/v1/projects/:slug/roles", path: (w) => `${P(w)}/roles`, body: (w) => ({ slug: w.unique("matrix-role"), display_name: "Matrix role", permissions: ["project.read"] }), expect: PROJECT_MEMBERS },
  { route: "PUT /api/v1/projects/:slug/roles/:id", path: (w) => `${P(w)}/roles/${w.roles.spare}`, body: () => ({ slug: "spare", display_name: "Spare role", permissions: ["project.read"] }), expect: PROJECT_MEMBERS },
  { route: "DELETE /api/v1/projects/:slug/roles/:id", path: (w) => `${P(w)}/roles/${w.roles.doomed}`, expect: PROJECT_MEMBERS },
  { route: "GET /api/v1/projects/:slug/environment-policies", path: (w) => `${P(w)}/environment-policies`, expect: PROJECT_READ },
  { route: "PUT /api/v1/projects/:slug/environment-policies/:environment/:role_id", path: (w) => `${P(w)}/environment-policies/staging/${w.roles.spare}`, body: () => ({ allowed: [] }), expect: PROJECT_MEMBERS },
  { route: "DELETE /api/v1/projects/:slug/environment-policies/:environment/:role_id", path: (w) => `${P(w)}/environment-policies/staging/${w.roles.spare}`, expect: PROJECT_MEMBERS },
  { route: "GET /api/v1/projects/:slug/tokens", path: (w) => `${P(w)}/tokens`, expect: PROJECT_MEMBERS },
  { route: "GET /api/v1/projects/:slug/audit", path: (w) => `${P(w)}/audit`, expect: AUDIT_READ },
  { route: "GET /api/v1/projects/:slug/notification-settings", path: (w) => `${P(w)}/notification-settings`, expect: PROJECT_READ },
  { route: "PUT /api/v1/projects/:slug/notification-settings", path: (w) => `${P(w)}/notification-settings`, body: () => ({ settings: [{ kind: "build.failed", in_app: true, email: false }] }), expect: PROJECT_READ },
];

/** Every row the matrix test runs, in order: access first, then each registered domain's. */
export const MATRIX_ROWS: MatrixRow[] = [...ACCESS_ROWS];

/** Public routes of the covered domains (no credential needed; not in the matrix). */
export const PUBLIC_ROUTES = ["POST /api/v1/auth/login"];

/** Route tags whose every route must have a matrix row (or be listed as public). */
export const COVERED_TAGS = ["access", "notifications"];

/**
 * Path prefixes left out of the matrix: the registry protocols, which authenticate with their
 * own credential forms (npm bearer and Basic, cargo's bare token, the OCI Docker token flow)
 * and are tested with the real clients (npm, cargo, skopeo) in src/domains/registries/.
 */
export const PROTOCOL_PREFIXES = ["/npm/", "/cargo/", "/v2/"];

export interface MatrixDomain {
  /** The route tags of the domain: each of their routes must have a row or be public. */
  tags: string[];
  rows: MatrixRow[];
  /** Its routes declared `public: true`. */
  publicRoutes?: string[];
}

/** Add a domain's rows (from `test/authz-matrix.<domain>.ts`; the runner imports each file). */
export function registerMatrixDomain(d: MatrixDomain): void {
  MATRIX_ROWS.push(...d.rows);
  COVERED_TAGS.push(...d.tags);
  PUBLIC_ROUTES.push(...(d.publicRoutes ?? []));
}
