/**
 * The authorization matrix: every route × every kind of caller, with the outcome expected.
 * Each domain appends its rows (`MATRIX_ROWS.push(...)` from its own file, or add to
 * `ACCESS_ROWS`' neighbours here); `test/authz-matrix.test.ts` builds one world and runs them all.
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
 * - suspended: a maintainer of the project whose operator is suspended
 *
 * Expectations: "allow" = authorization passed (any status but 401/403; the business outcome may
 * be 404/409/422); "deny" = 403 and a new `denied` audit row for that operator; "refuse" = 422
 * `refused` and a new `denied` audit row (a token rule, e.g. a pinned token minting elsewhere);
 * "unauth" = 401. The runner also sends every row without credentials and expects 401.
 */
import type { TestApp } from "./harness";
import type { ProjectRow, OperatorRow } from "../src/domains/access/service";

export const COLUMNS = ["owner", "maintainer", "developer", "viewer", "custom", "pinnedElsewhere", "narrowToken", "policyRestricted", "suspended"] as const;
export type Column = (typeof COLUMNS)[number];
export type Expect = "allow" | "deny" | "refuse" | "unauth";
export type Expectations = Record<Column, Expect>;

/** What rows can refer to. Domains may add their own fixtures in a row's `setup`. */
export interface World {
  t: TestApp;
  project: ProjectRow;
  other: ProjectRow;
  /** Ids of fixed roles by slug and of the project's own roles (tiny = project.read only). */
  roles: Record<"owner" | "maintainer" | "developer" | "viewer" | "tiny" | "auditor" | "releaser" | "spare" | "doomed", string>;
  /** Operators rows may act on (never one of the callers). */
  targets: { person: OperatorRow; member: OperatorRow };
  /** A fresh name on every call. */
  unique(prefix: string): string;
  /** Scratch space for rows' setups. */
  vars: Record<string, string>;
}

export interface MatrixRow {
  /** `METHOD /path/:param` exactly as the app registers it (used for coverage). */
  route: string;
  /** The concrete path (placeholders filled from the world). */
  path: (w: World) => string;
  body?: (w: World) => unknown;
  /** Runs once before the row (create what the route acts on). */
  setup?: (w: World) => void | Promise<void>;
  expect: Expectations;
}

const row = (e: Partial<Expectations> & { base: Expect }): Expectations => {
  const { base, ...rest } = e;
  return Object.fromEntries(COLUMNS.map((c) => [c, (rest as Partial<Expectations>)[c] ?? base])) as Expectations;
};

/** Any signed-in caller (self-service). */
export const ANYONE = row({ base: "allow", suspended: "unauth" });
/** Self-service that only a signed-in session may do (password, MFA). */
export const SESSION_ONLY = row({ base: "allow", pinnedElsewhere: "deny", narrowToken: "deny", suspended: "unauth" });
/** Estate keys: only the estate-wide owner. */
export const ESTATE = row({ base: "deny", owner: "allow", suspended: "unauth" });
/** `project.read`, project-level. */
export const PROJECT_READ = row({ base: "allow", pinnedElsewhere: "deny", suspended: "unauth" });
/** `project.members`, project-level. */
export const PROJECT_MEMBERS = row({ base: "deny", owner: "allow", maintainer: "allow", policyRestricted: "allow", suspended: "unauth" });
/** `project.settings`, project-level. */
export const PROJECT_SETTINGS = row({ base: "deny", owner: "allow", maintainer: "allow", suspended: "unauth" });
/** `audit.read`, project-level. */
export const AUDIT_READ = row({ base: "deny", owner: "allow", maintainer: "allow", custom: "allow", policyRestricted: "allow", suspended: "unauth" });

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

/** Every row the matrix test runs; other domains push theirs here. */
export const MATRIX_ROWS: MatrixRow[] = [...ACCESS_ROWS];

/** Public routes of issue 3 (no credential needed; not in the matrix). */
export const PUBLIC_ROUTES = ["POST /api/v1/auth/login"];

/** Route tags whose every route must have a matrix row (domains add theirs). */
export const COVERED_TAGS = ["access", "notifications"];
