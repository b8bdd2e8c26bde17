/**
 * Secret values, never stored in clear: each row keeps the id of a sealed value in the secrets
 * store (envelope encryption, src/core/secrets.ts).
 *
 * - `secret_variables`: a secret group's variables (the group is a `secret-group` resource; its
 *   spec lists names and kinds, this table holds the values and their store versions).
 * - `secret_group_renders`: each rendered `<group>.env.v<version>` document, newest current.
 * - `unit_secrets`: per deploy unit (service or bucket) secrets of a project.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";
import { resources } from "../resources/tables";

export const secretVariables = sqliteTable(
  "secret_variables",
  {
    groupId: text("group_id")
      .notNull()
      .references(() => resources.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["secret", "text"] }).notNull(),
    valueId: text("value_id").notNull(),
    /** Store version: 1 on first set, +1 on each change. */
    version: integer("version").notNull(),
    /** The store version the newest render holds; null when no render holds this variable. */
    renderedVersion: integer("rendered_version"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("secret_variables_group_name").on(t.groupId, t.name)],
);

export const secretGroupRenders = sqliteTable(
  "secret_group_renders",
  {
    groupId: text("group_id")
      .notNull()
      .references(() => resources.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    /** `<group>.env.v<version>` */
    secret: text("secret").notNull(),
    /** Sealed value id of the rendered dotenv document. */
    valueId: text("value_id").notNull(),
    actor: text("actor").notNull(),
    renderedAt: integer("rendered_at").notNull(),
  },
  (t) => [uniqueIndex("secret_group_renders_group_version").on(t.groupId, t.version)],
);

export const unitSecrets = sqliteTable(
  "unit_secrets",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    unit: text("unit").notNull(),
    name: text("name").notNull(),
    valueId: text("value_id").notNull(),
    version: integer("version").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    updatedBy: text("updated_by").notNull(),
  },
  (t) => [uniqueIndex("unit_secrets_project_unit_name").on(t.projectId, t.unit, t.name), index("unit_secrets_project").on(t.projectId)],
);
