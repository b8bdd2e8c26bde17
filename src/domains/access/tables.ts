/**
 * Access: operators (people and machines), sessions, minted tokens, projects, roles, memberships
 * and environment policies. Secrets handed out (session bearers, tokens) are stored only as
 * SHA-256 digests; MFA seeds only as sealed-value ids.
 */
import { sqliteTable, text, integer, index, uniqueIndex, primaryKey } from "drizzle-orm/sqlite-core";

export const operators = sqliteTable(
  "operators",
  {
    id: text("id").primaryKey(),
    kind: text("kind", { enum: ["person", "machine"] }).notNull(),
    /** Lower-cased; people only. */
    email: text("email"),
    /** Machines only. */
    handle: text("handle"),
    displayName: text("display_name").notNull(),
    /** argon2id (Bun.password); people only. */
    passwordHash: text("password_hash"),
    suspendedAt: integer("suspended_at"),
    /** Sealed value id of the enrolled TOTP seed (MFA in force). */
    mfaSecretId: text("mfa_secret_id"),
    /** Sealed value id of a staged seed awaiting confirmation. */
    mfaStagedId: text("mfa_staged_id"),
    /** Last accepted TOTP counter: a code is accepted once (replay protection). */
    mfaLastCounter: integer("mfa_last_counter"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("operators_email").on(t.email), uniqueIndex("operators_handle").on(t.handle)],
);

export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    operatorId: text("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["console", "cli"] }).notNull(),
    digest: text("digest").notNull(),
    ip: text("ip").notNull().default(""),
    userAgent: text("user_agent").notNull().default(""),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    /** Absolute expiry. Console sessions also expire after 12 h idle (from last_seen_at). */
    expiresAt: integer("expires_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("sessions_digest").on(t.digest), index("sessions_operator").on(t.operatorId)],
);

export const projects = sqliteTable(
  "projects",
  {
    id: text("id").primaryKey(),
    slug: text("slug").notNull(),
    name: text("name").notNull(),
    /** JSON array of environment names, in order. */
    environments: text("environments").notNull(),
    archivedAt: integer("archived_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("projects_slug").on(t.slug)],
);

export const roles = sqliteTable(
  "roles",
  {
    id: text("id").primaryKey(),
    /** null for the fixed roles every project has. */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    slug: text("slug").notNull(),
    displayName: text("display_name").notNull(),
    description: text("description").notNull().default(""),
    /** JSON array of permission keys. */
    permissions: text("permissions").notNull(),
    fixed: integer("fixed", { mode: "boolean" }).notNull().default(false),
    /** `project_id`, or "" for a fixed role: lets one unique index cover both (NULLs never collide). */
    scope: text("scope").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("roles_scope_slug").on(t.scope, t.slug)],
);

export const memberships = sqliteTable(
  "memberships",
  {
    id: text("id").primaryKey(),
    operatorId: text("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    /** null = estate-wide: the role applies in every project. */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    roleId: text("role_id")
      .notNull()
      .references(() => roles.id),
    /** `project_id`, or "" when estate-wide: one membership per operator per scope. */
    scope: text("scope").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("memberships_operator_scope").on(t.operatorId, t.scope), index("memberships_project").on(t.projectId)],
);

export const environmentPolicies = sqliteTable(
  "environment_policies",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    environment: text("environment").notNull(),
    roleId: text("role_id")
      .notNull()
      .references(() => roles.id, { onDelete: "cascade" }),
    /** JSON array: what the role keeps in this environment. */
    allowed: text("allowed").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.environment, t.roleId] })],
);

export const tokens = sqliteTable(
  "tokens",
  {
    id: text("id").primaryKey(),
    operatorId: text("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["api", "cli", "mcp"] }).notNull(),
    digest: text("digest").notNull(),
    roleId: text("role_id").notNull(),
    /** Role name at mint time (the role may be renamed or deleted later). */
    roleName: text("role_name").notNull(),
    /** JSON array: the role's permissions at mint time. */
    scopes: text("scopes").notNull(),
    /** Pinned project, or null. */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at"),
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("tokens_digest").on(t.digest), index("tokens_operator").on(t.operatorId), index("tokens_project").on(t.projectId)],
);

/**
 * One row counting changes to what authentication and authorization read (operators, sessions'
 * and tokens' revocation and expiry, memberships, roles, policies, projects). SQLite triggers
 * (migration 0003) bump it in the writing transaction, whichever connection or process writes, so
 * the in-memory caches of principals and grants (access-cache.ts) are dropped the moment any of
 * it changes: revocation stays instant. Sessions' `last_seen_at` counts too (the batched flush
 * moves it about once a minute), so a cached session row never carries a stale idle clock.
 */
export const accessGeneration = sqliteTable("access_generation", {
  id: integer("id").primaryKey(),
  n: integer("n").notNull(),
});
