/**
 * What the OCI registry adds to the shared package model: which blobs a repository may serve
 * (blobs are scoped per repository, as in the reference registry: a blob pushed to A is not
 * readable through B unless mounted), and blob upload sessions in progress.
 */
import { sqliteTable, text, integer, primaryKey, index } from "drizzle-orm/sqlite-core";
import { packages } from "../shared/tables";

export const ociBlobLinks = sqliteTable(
  "oci_blob_links",
  {
    packageId: integer("package_id")
      .notNull()
      .references(() => packages.id, { onDelete: "cascade" }),
    /** Lowercase hex SHA-256. */
    digest: text("digest").notNull(),
    size: integer("size").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.packageId, t.digest] }), index("oci_blob_links_digest").on(t.digest)],
);

/**
 * A blob upload session. Its bytes are either one blob already in the store (`blob_digest`: the
 * common single-PATCH or monolithic upload streams straight into `core.blobs`), or an append file
 * under `blobs/uploads/<id>` (several chunks), or nothing yet.
 */
export const ociUploads = sqliteTable(
  "oci_uploads",
  {
    id: text("id").primaryKey(),
    packageId: integer("package_id")
      .notNull()
      .references(() => packages.id, { onDelete: "cascade" }),
    size: integer("size").notNull().default(0),
    blobDigest: text("blob_digest"),
    inFile: integer("in_file", { mode: "boolean" }).notNull().default(false),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("oci_uploads_updated").on(t.updatedAt)],
);
