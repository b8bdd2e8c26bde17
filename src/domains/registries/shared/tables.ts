/**
 * The one package model every registry format shares (Gitea's lesson: one model, many formats):
 *
 *   package (a claimed name, owned by a project) → version (immutable once published) →
 *   file (a named part of a version) → blob (content-addressed bytes in `core.blobs`).
 *
 * npm and cargo packages are claimed before their first publish; an OCI repository
 * `<project>/<service>` is a package of registry `oci` created by its first push (the project is
 * in its name). Tags (npm dist-tags, OCI tags) point at versions. Documents the protocols serve
 * (npm packuments, cargo index files) are rendered once per change and stored here, never built
 * per request. `registry_blobs` is the ledger of blobs this domain wrote, which the orphan GC
 * (`registries.gc`) sweeps. Timestamps are epoch ms.
 */
import { sqliteTable, text, integer, index, uniqueIndex, primaryKey } from "drizzle-orm/sqlite-core";

export const packages = sqliteTable(
  "packages",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** `npm`, `cargo` or `oci`. */
    registry: text("registry", { enum: ["npm", "cargo", "oci"] }).notNull(),
    /** The name as claimed (npm `@scope/name`, cargo in its original case, OCI `<project>/<service>`). */
    name: text("name").notNull(),
    /** Uniqueness key per registry: cargo lower-cased with `-` and `_` folded; others the name. */
    nameKey: text("name_key").notNull(),
    /** Lower-cased name: how protocol paths find the package (cargo index paths are lower case). */
    lookup: text("lookup").notNull(),
    projectId: text("project_id").notNull(),
    /** Who claimed it (actor name), for the record. */
    claimedBy: text("claimed_by").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("packages_registry_key").on(t.registry, t.nameKey), index("packages_registry_lookup").on(t.registry, t.lookup), index("packages_project").on(t.projectId)],
);

export const packageVersions = sqliteTable(
  "package_versions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    packageId: integer("package_id")
      .notNull()
      .references(() => packages.id, { onDelete: "cascade" }),
    /** As published (npm/cargo SemVer; OCI the manifest digest `sha256:…`). */
    version: text("version").notNull(),
    /** Uniqueness key: cargo ignores `+build` metadata; others the version. */
    versionKey: text("version_key").notNull(),
    yanked: integer("yanked", { mode: "boolean" }).notNull().default(false),
    /** The publisher's name (email of a person, handle of a machine). */
    publisher: text("publisher").notNull(),
    publisherId: text("publisher_id"),
    publishedAt: integer("published_at").notNull(),
    /** Bytes of the version's archive (OCI: config plus layers). */
    sizeBytes: integer("size_bytes").notNull(),
    /** Lowercase hex SHA-256 of the archive (OCI: of the manifest). */
    digest: text("digest").notNull(),
    /** npm only: `sha512-<base64>`. */
    integrity: text("integrity"),
    /** npm only: hex SHA-1 of the tarball. */
    shasum: text("shasum"),
    /** JSON the protocol serves for this version (npm version manifest, cargo index line, OCI summary). */
    manifest: text("manifest").notNull(),
  },
  (t) => [uniqueIndex("package_versions_key").on(t.packageId, t.versionKey), index("package_versions_published").on(t.packageId, t.publishedAt)],
);

export const packageFiles = sqliteTable(
  "package_files",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    versionId: integer("version_id")
      .notNull()
      .references(() => packageVersions.id, { onDelete: "cascade" }),
    /** File name as clients ask for it (`lib-1.0.0.tgz`, `foo-0.1.0.crate`, OCI `sha256:…`). */
    name: text("name").notNull(),
    /** `archive`, or for OCI `manifest`, `config`, `layer`, `child`. */
    role: text("role").notNull(),
    /** Lowercase hex SHA-256 of the bytes in `core.blobs`. */
    digest: text("digest").notNull(),
    size: integer("size").notNull(),
    mediaType: text("media_type").notNull().default("application/octet-stream"),
  },
  (t) => [uniqueIndex("package_files_version_name").on(t.versionId, t.name), index("package_files_digest").on(t.digest)],
);

/** npm dist-tags and OCI tags: a movable name for a version. */
export const packageTags = sqliteTable(
  "package_tags",
  {
    packageId: integer("package_id")
      .notNull()
      .references(() => packages.id, { onDelete: "cascade" }),
    tag: text("tag").notNull(),
    versionId: integer("version_id")
      .notNull()
      .references(() => packageVersions.id, { onDelete: "cascade" }),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.packageId, t.tag] })],
);

/**
 * Rendered protocol documents (`npm.full`, `npm.abbreviated`, `cargo.index`), rebuilt in the
 * transaction that changes the package. `base_url` is the public URL they were rendered with: a
 * changed OPS_PUBLIC_URL re-renders them once on first read.
 */
export const packageDocuments = sqliteTable(
  "package_documents",
  {
    packageId: integer("package_id")
      .notNull()
      .references(() => packages.id, { onDelete: "cascade" }),
    kind: text("kind").notNull(),
    body: text("body").notNull(),
    etag: text("etag").notNull(),
    baseUrl: text("base_url").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.packageId, t.kind] })],
);

/** Every blob this domain put into `core.blobs`; the GC deletes those no row references any more. */
export const registryBlobs = sqliteTable("registry_blobs", {
  digest: text("digest").primaryKey(),
  size: integer("size").notNull(),
  createdAt: integer("created_at").notNull(),
});
