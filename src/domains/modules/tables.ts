/**
 * Modules: what a project's `modules/` tree publishes (DESIGN §5 "Publish builds and modules").
 *
 * - `module_sets`: per project, the tag version the module list was last recorded at (a publish
 *   that went through every step records its tree's modules).
 * - `modules`: one row per module a project ever published; `current` marks the modules of the
 *   newest recorded tree (a module a later tag dropped keeps its row and its notes).
 * - `module_notes`: the CHANGELOG.md section of each version, per module.
 * - `module_releases`: the ledger of what a publish put into the registries, per module, part
 *   (`crate`, `layer`, `locale:<locale>`) and version, with the commit it came from: a retry of
 *   the same tag skips what the ledger holds, a second tag at an old version is refused.
 * - `module_consumers`: packages a project's newest default-branch build resolved from ops's
 *   registries, read from the lockfiles the builder saw (replaced by each such build).
 *
 * Timestamps are epoch ms.
 */
import { sqliteTable, text, integer, index, primaryKey } from "drizzle-orm/sqlite-core";
import { projects } from "../access/tables";

export const moduleSets = sqliteTable("module_sets", {
  projectId: text("project_id")
    .primaryKey()
    .references(() => projects.id, { onDelete: "cascade" }),
  /** Tag version (without the `v`) the list was recorded at. */
  version: text("version").notNull(),
  commitSha: text("commit_sha").notNull(),
  recordedAt: integer("recorded_at").notNull(),
});

export const modules = sqliteTable(
  "modules",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** The directory name under `modules/`. */
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    /** `<project>-<name>` on the cargo registry, when the module has a crate half. */
    crateName: text("crate_name"),
    /** `@<scope>/<name>` on the npm registry, when the module has a layer. */
    layerName: text("layer_name"),
    /** JSON array of the module names it depends on. */
    requires: text("requires").notNull().default("[]"),
    /** In the newest recorded tree. */
    current: integer("current", { mode: "boolean" }).notNull().default(true),
    /** Tag version it was last published at. */
    version: text("version").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.name] })],
);

export const moduleNotes = sqliteTable(
  "module_notes",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    module: text("module").notNull(),
    version: text("version").notNull(),
    /** Markdown: the section's body under its `## <version>` heading. */
    notes: text("notes").notNull(),
    recordedAt: integer("recorded_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.module, t.version] })],
);

export const moduleReleases = sqliteTable(
  "module_releases",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    module: text("module").notNull(),
    /** `crate`, `layer` or `locale:<locale>`. */
    part: text("part").notNull(),
    version: text("version").notNull(),
    /** Registry and package name it went to (`cargo`, `npm`; locales: the bundle's package). */
    registry: text("registry").notNull(),
    packageName: text("package_name").notNull(),
    commitSha: text("commit_sha").notNull(),
    /** The publish build, when one did it. */
    buildId: integer("build_id"),
    at: integer("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.module, t.part, t.version] })],
);

export const moduleConsumers = sqliteTable(
  "module_consumers",
  {
    /** The project whose build resolved the package. */
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    registry: text("registry", { enum: ["npm", "cargo"] }).notNull(),
    packageName: text("package_name").notNull(),
    version: text("version").notNull(),
    buildId: integer("build_id"),
    recordedAt: integer("recorded_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.registry, t.packageName, t.version] }), index("module_consumers_package").on(t.registry, t.packageName)],
);
