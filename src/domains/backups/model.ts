/**
 * The backup manifest (format `ops-backup/1`) and the backups routes' schemas. A manifest names
 * every restored file with its SHA-256, size, mode and the object that holds its bytes, and every
 * git repository with the refs it had at the snapshot.
 */
import { t } from "elysia";

export const MANIFEST_FORMAT = "ops-backup/1";

export const ManifestFile = t.Object({
  /** Path under the data dir, `/`-separated, never `..`. */
  path: t.String({ minLength: 1, maxLength: 4096 }),
  sha256: t.String({ pattern: "^[0-9a-f]{64}$" }),
  size: t.Integer({ minimum: 0 }),
  mode: t.Integer({ minimum: 0, maximum: 0o7777 }),
  /** The stored object's name (the SHA-256, or its HMAC for an encrypted backup). */
  object: t.String({ pattern: "^[0-9a-f]{64}$" }),
});
export type ManifestFile = typeof ManifestFile.static;

export const ManifestRepo = t.Object({
  path: t.String({ minLength: 1, maxLength: 4096 }),
  refs: t.Array(t.Object({ name: t.String({ pattern: "^refs/" }), sha: t.String({ pattern: "^[0-9a-f]{40,64}$" }) })),
});
export type ManifestRepo = typeof ManifestRepo.static;

export const Manifest = t.Object({
  format: t.Literal(MANIFEST_FORMAT),
  id: t.String({ pattern: "^[0-9]{8}T[0-9]{9}Z-[0-9a-z]{6}$" }),
  created_at: t.String(),
  ops_version: t.String(),
  migrations: t.Object({ ops: t.Array(t.String()), telemetry: t.Array(t.String()) }),
  files: t.Array(ManifestFile),
  repos: t.Array(ManifestRepo),
  stats: t.Object({ files: t.Integer(), bytes: t.Integer(), new_objects: t.Integer(), new_bytes: t.Integer(), ms: t.Integer() }),
});
export type Manifest = typeof Manifest.static;

/** What `manifests/<id>.json` holds: the manifest in the clear, or sealed with the wrap beside it. */
export const StoredManifest = t.Object({
  format: t.Literal(MANIFEST_FORMAT),
  id: t.String(),
  created_at: t.String(),
  encryption: t.Union([t.Null(), t.Object({ kdf: t.Literal("scrypt"), salt: t.String(), n: t.Integer(), r: t.Integer(), p: t.Integer(), cipher: t.Literal("aes-256-gcm"), wrapped: t.String() })]),
  manifest: t.Optional(Manifest),
  /** base64 of the sealed manifest JSON when encrypted. */
  sealed: t.Optional(t.String()),
});
export type StoredManifest = typeof StoredManifest.static;

export const BackupSummary = t.Object({
  id: t.String(),
  created_at: t.String({ format: "date-time" }),
  files: t.Integer(),
  bytes: t.Integer(),
  new_objects: t.Integer(),
  new_bytes: t.Integer(),
});
export type BackupSummary = typeof BackupSummary.static;

export const BackupStatusResponse = t.Object({
  /** OPS_BACKUP_TO with any credentials left out; null when scheduled backups are off. */
  target: t.Union([t.String(), t.Null()]),
  schedule: t.String(),
  keep: t.Integer(),
  encrypted: t.Boolean(),
  last_good: t.Union([BackupSummary, t.Null()]),
  last_attempt_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
  last_error: t.Union([t.String(), t.Null()]),
  failing: t.Boolean(),
});
export type BackupStatusResponse = typeof BackupStatusResponse.static;
