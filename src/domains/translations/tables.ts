/**
 * Translations: bundle → key (namespace + dotted key) → value per locale.
 *
 * - `tms_bundles`: a project's own bundle, an estate-shared bundle (`estate`, composed by every
 *   project) or a package bundle (`package`, following a claimed npm/cargo name). The home project
 *   edits it. `generation` bumps on every change of its keys, values or versions (export caching).
 * - `tms_keys`: one row per (bundle, namespace, key), never deleted: a delete sets `deleted_at`
 *   and moves the values to history, so overrides and history keep pointing at the key.
 * - `tms_values`: the current value per key and locale, with its status and version.
 * - `tms_history`: every value that was replaced or deleted (the bundle's own, or a project's
 *   override when `project_id` is set).
 * - `tms_versions` + `tms_version_keys`: the registered versions of a package bundle and the keys
 *   each ships (its source-locale tree's leaves).
 * - `tms_attachments`: a project composing a package bundle at a registered version.
 * - `tms_overrides`: a project's own text for a key of a shared bundle, per locale.
 * - `tms_project_state`: per-project generation (overrides, attachments), and `tms_state` the
 *   estate-wide change counter an export reads first to know its cached rendering is current.
 *
 * Timestamps are epoch ms.
 */
import { sql } from "drizzle-orm";
import { sqliteTable, text, integer, index, uniqueIndex, primaryKey } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";

/**
 * The columns that tie a row to its project, bundle or key; the row goes when that one is deleted.
 * Functions, so that each table gets a column of its own.
 */
const projectRef = () =>
  text("project_id")
    .notNull()
    .references(() => projects.id, { onDelete: "cascade" });
const bundleRef = () =>
  integer("bundle_id")
    .notNull()
    .references(() => tmsBundles.id, { onDelete: "cascade" });
const keyRef = () =>
  integer("key_id")
    .notNull()
    .references(() => tmsKeys.id, { onDelete: "cascade" });

export const tmsBundles = sqliteTable(
  "tms_bundles",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The home project: whose translations.write members edit the bundle. */
    projectId: projectRef(),
    kind: text("kind", { enum: ["own", "estate", "package"] }).notNull(),
    /** Slug-shaped for own and estate bundles; the package name verbatim for package bundles. */
    name: text("name").notNull(),
    /** The locale whose keys define the bundle's key set and that other locales fall back to. */
    sourceLocale: text("source_locale").notNull(),
    packageRegistry: text("package_registry", { enum: ["npm", "cargo"] }),
    packageName: text("package_name"),
    /** Who created it (the audit actor: an email, a machine's `api-token`, or `system`). */
    owner: text("owner").notNull(),
    generation: integer("generation").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("tms_bundles_project_name").on(t.projectId, t.name),
    uniqueIndex("tms_bundles_estate_name").on(t.name).where(sql`kind = 'estate'`),
    uniqueIndex("tms_bundles_package").on(t.packageRegistry, t.packageName),
    index("tms_bundles_kind").on(t.kind),
  ],
);

export const tmsKeys = sqliteTable(
  "tms_keys",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    bundleId: bundleRef(),
    namespace: text("namespace").notNull(),
    key: text("key").notNull(),
    createdAt: integer("created_at").notNull(),
    /** Set by a delete; the key row stays (overrides and history refer to it). */
    deletedAt: integer("deleted_at"),
  },
  (t) => [uniqueIndex("tms_keys_bundle_ns_key").on(t.bundleId, t.namespace, t.key)],
);

export const tmsValues = sqliteTable(
  "tms_values",
  {
    keyId: keyRef(),
    locale: text("locale").notNull(),
    value: text("value").notNull(),
    status: text("status", { enum: ["translated", "review"] }).notNull(),
    /** Per key and locale, counting on from the history (never reused after a delete). */
    version: integer("version").notNull(),
    updatedAt: integer("updated_at").notNull(),
    updatedBy: text("updated_by").notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.locale] })],
);

export const tmsHistory = sqliteTable(
  "tms_history",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    bundleId: bundleRef(),
    keyId: keyRef(),
    /** The overriding project for an override's history; null for the bundle's own values. */
    projectId: text("project_id"),
    locale: text("locale").notNull(),
    value: text("value").notNull(),
    /** The bundle value's status; null for an override. */
    status: text("status"),
    version: integer("version").notNull(),
    /** When the value was written, and when and why it left (`replaced` or `deleted`). */
    writtenAt: integer("written_at").notNull(),
    writtenBy: text("written_by").notNull(),
    endedAt: integer("ended_at").notNull(),
    endedBy: text("ended_by").notNull(),
    reason: text("reason", { enum: ["replaced", "deleted"] }).notNull(),
  },
  (t) => [index("tms_history_key").on(t.keyId, t.locale)],
);

export const tmsVersions = sqliteTable(
  "tms_versions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    bundleId: bundleRef(),
    version: text("version").notNull(),
    registeredAt: integer("registered_at").notNull(),
    registeredBy: text("registered_by").notNull(),
  },
  (t) => [uniqueIndex("tms_versions_bundle_version").on(t.bundleId, t.version)],
);

export const tmsVersionKeys = sqliteTable(
  "tms_version_keys",
  {
    versionId: integer("version_id")
      .notNull()
      .references(() => tmsVersions.id, { onDelete: "cascade" }),
    keyId: keyRef(),
  },
  (t) => [primaryKey({ columns: [t.versionId, t.keyId] })],
);

export const tmsAttachments = sqliteTable(
  "tms_attachments",
  {
    projectId: projectRef(),
    bundleId: bundleRef(),
    versionId: integer("version_id")
      .notNull()
      .references(() => tmsVersions.id),
    attachedAt: integer("attached_at").notNull(),
    attachedBy: text("attached_by").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.bundleId] }), index("tms_attachments_bundle").on(t.bundleId)],
);

export const tmsOverrides = sqliteTable(
  "tms_overrides",
  {
    projectId: projectRef(),
    bundleId: bundleRef(),
    keyId: keyRef(),
    locale: text("locale").notNull(),
    value: text("value").notNull(),
    version: integer("version").notNull(),
    updatedAt: integer("updated_at").notNull(),
    updatedBy: text("updated_by").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.keyId, t.locale] }), index("tms_overrides_project_bundle").on(t.projectId, t.bundleId)],
);

export const tmsProjectState = sqliteTable("tms_project_state", {
  projectId: text("project_id")
    .primaryKey()
    .references(() => projects.id, { onDelete: "cascade" }),
  generation: integer("generation").notNull(),
});

/** One row (id 1): bumped by every translations change anywhere. */
export const tmsState = sqliteTable("tms_state", {
  id: integer("id").primaryKey(),
  generation: integer("generation").notNull(),
});
