/**
 * CLI releases (binaries in the blob store, one row per version and target) and single-use
 * install codes (`opsi_`, digest only) that the installer route redeems for a minted token.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";

export const cliReleases = sqliteTable(
  "cli_releases",
  {
    id: text("id").primaryKey(),
    version: text("version").notNull(),
    /** `<platform>-<arch>`, e.g. `linux-x64`. */
    target: text("target").notNull(),
    /** Lowercase hex SHA-256 of the binary: its blob. */
    digest: text("digest").notNull(),
    size: integer("size").notNull(),
    /** The current release of a target is the one published last, whatever its version. */
    publishedAt: integer("published_at").notNull(),
    /** Publishing operator, or null for `ops admin publish-cli`. */
    publishedBy: text("published_by"),
  },
  (t) => [uniqueIndex("cli_releases_version_target").on(t.version, t.target), index("cli_releases_target_published").on(t.target, t.publishedAt)],
);

export const installCodes = sqliteTable(
  "install_codes",
  {
    id: text("id").primaryKey(),
    /** SHA-256 of the `opsi_` code. */
    digest: text("digest").notNull(),
    operatorId: text("operator_id").notNull(),
    roleId: text("role_id").notNull(),
    roleName: text("role_name").notNull(),
    /** JSON array: the role's permissions when the code was created (the over-carry check ran on them). */
    scopes: text("scopes").notNull(),
    projectId: text("project_id").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    usedAt: integer("used_at"),
    tokenId: text("token_id"),
  },
  (t) => [uniqueIndex("install_codes_digest").on(t.digest), index("install_codes_expires").on(t.expiresAt)],
);

export type CliReleaseRow = typeof cliReleases.$inferSelect;
export type InstallCodeRow = typeof installCodes.$inferSelect;
