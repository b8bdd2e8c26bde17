/**
 * The host identity of each project's sandboxes (DESIGN §6 "Identity"): a project's slot, fixed
 * once given, makes its uid and gid `OPS_SANDBOX_UID_BASE + slot`. Slots are never reused, so a
 * file left by a deleted project can never belong to a new one. Keyed by project id text (the
 * sandbox adapter does not import the access domain's tables).
 */
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const sandboxIdentities = sqliteTable("sandbox_identities", {
  /** Counts from 1; the project's uid/gid offset from the base. */
  slot: integer("slot").primaryKey({ autoIncrement: true }),
  projectId: text("project_id").notNull().unique(),
  createdAt: integer("created_at").notNull(),
});
