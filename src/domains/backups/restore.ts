/**
 * Reading backups back: find a manifest, restore it into an empty directory (every file's
 * SHA-256 checked on the way, the refs written back through `git update-ref`), and verify a
 * backup by restoring it into a temporary directory and checking what a restore could not:
 * `PRAGMA integrity_check` of each database, `git fsck` of each repository, and that the keys
 * open the secrets store.
 */
import { Database } from "bun:sqlite";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { Value } from "@sinclair/typebox/value";
import { OpsError } from "../../core/errors";
import { systemClock } from "../../core/clock";
import { SecretsStore } from "../../core/secrets";
import { sealedValues } from "../../core/tables";
import type { Db } from "../../core/db/client";
import type { Config } from "../../core/config";
import { objectName, openBytes, openFile, openKeyWrap } from "./crypt";
import { hashFile } from "./create";
import { Manifest, StoredManifest, type ManifestFile } from "./model";
import { plainGitEnv } from "./snapshot";
import { objectKey, openTarget, type BackupTarget, type S3Settings } from "./target";

export interface ManifestRef {
  target: BackupTarget;
  /** `manifests/<id>.json` */
  key: string;
}

const MANIFEST_KEY = /^manifests\/[0-9]{8}T[0-9]{9}Z-[0-9a-z]{6}\.json$/;

/** The manifests at a place, oldest first. */
export async function listManifests(target: BackupTarget): Promise<string[]> {
  return (await target.list("manifests/")).filter((k) => MANIFEST_KEY.test(k));
}

/**
 * `FILE` of `ops backup verify` and `ops restore`: a manifest (`…/manifests/<id>.json`, a path or
 * an s3:// URL), or a backup place, meaning its newest backup.
 */
export async function resolveManifest(spec: string, s3: S3Settings, cwd: string): Promise<ManifestRef> {
  const m = /^(.*?)\/?(manifests\/[^/]+\.json)$/.exec(spec);
  if (m) return { target: openTarget(m[1] === "" ? "." : m[1], s3, cwd), key: m[2] };
  const target = openTarget(spec, s3, cwd);
  const all = await listManifests(target);
  if (all.length === 0) throw new OpsError("not_found", `No backup at ${target.label}.`);
  return { target, key: all[all.length - 1] };
}

/** Read and check a manifest; `key` is the data key when the backup is encrypted. */
export async function readManifest(ref: ManifestRef, passphrase: string | null): Promise<{ manifest: Manifest; key: Buffer | null }> {
  const bytes = await ref.target.getBytes(ref.key);
  if (!bytes) throw new OpsError("not_found", `No backup manifest ${ref.key} at ${ref.target.label}.`);
  let stored: unknown;
  try {
    stored = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    throw new OpsError("validation_failed", `${ref.key} is not a backup manifest (not JSON).`);
  }
  if (!Value.Check(StoredManifest, stored)) throw new OpsError("validation_failed", `${ref.key} is not an ops-backup/1 manifest.`);
  let manifest: unknown = stored.manifest;
  let key: Buffer | null = null;
  if (stored.encryption !== null) {
    if (passphrase === null) throw new OpsError("refused", "This backup is encrypted: give --passphrase-file.");
    key = await openKeyWrap(stored.encryption, passphrase);
    try {
      manifest = JSON.parse(openBytes(key, Buffer.from(stored.sealed ?? "", "base64"), `manifest:${stored.id}`).toString("utf8"));
    } catch {
      throw new OpsError("validation_failed", `${ref.key}: the sealed manifest does not open: it was changed.`);
    }
  }
  if (!Value.Check(Manifest, manifest) || manifest.id !== stored.id) throw new OpsError("validation_failed", `${ref.key} is not an ops-backup/1 manifest.`);
  return { manifest, key };
}

function inside(root: string, rel: string): string {
  if (rel.startsWith("/") || rel.split("/").some((p) => p === "" || p === "." || p === "..")) throw new OpsError("validation_failed", `The manifest names a path outside the data dir: ${rel}`);
  return path.join(root, rel);
}

async function restoreFile(ref: ManifestRef, key: Buffer | null, f: ManifestFile, dest: string): Promise<void> {
  if (objectName(key, f.sha256) !== f.object) throw new OpsError("validation_failed", `${f.path}: the manifest's object name does not match its hash.`);
  mkdirSync(path.dirname(dest), { recursive: true, mode: 0o700 });
  let got: string;
  if (key) {
    const fetched = `${dest}.sealed`;
    try {
      await ref.target.getFile(objectKey(f.object), fetched);
      got = await openFile(key, fetched, dest, f.object);
    } finally {
      rmSync(fetched, { force: true });
    }
  } else {
    await ref.target.getFile(objectKey(f.object), dest);
    got = await hashFile(dest);
  }
  if (got !== f.sha256) throw new OpsError("validation_failed", `${f.path}: its bytes do not match the manifest's SHA-256 (the backup is damaged).`);
  chmodSync(dest, f.mode & 0o777);
}

export interface RestoreResult {
  manifest: Manifest;
  files: number;
  bytes: number;
}

/** Restore `ref` into `dataDir`, which must be missing or empty. */
export async function restoreBackup(ref: ManifestRef, dataDir: string, passphrase: string | null): Promise<RestoreResult> {
  if (existsSync(dataDir)) {
    if (!statSync(dataDir).isDirectory()) throw new OpsError("conflict", `${dataDir} is not a directory.`);
    if (readdirSync(dataDir).length > 0) throw new OpsError("conflict", `${dataDir} is not empty: restore only into an empty or new directory.`);
  }
  const { manifest, key } = await readManifest(ref, passphrase);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  let bytes = 0;
  for (const f of manifest.files) {
    await restoreFile(ref, key, f, inside(dataDir, f.path));
    bytes += f.size;
  }
  if (existsSync(path.join(dataDir, "keys"))) chmodSync(path.join(dataDir, "keys"), 0o700);
  const env = plainGitEnv(dataDir);
  for (const repo of manifest.repos) {
    const dir = inside(dataDir, repo.path);
    for (const d of ["refs/heads", "refs/tags", "objects/info", "objects/pack"]) mkdirSync(path.join(dir, d), { recursive: true });
    if (repo.refs.length === 0) continue;
    const input = repo.refs.map((r) => `create ${r.name} ${r.sha}\n`).join("");
    const r = Bun.spawnSync(["git", `--git-dir=${dir}`, "update-ref", "--stdin"], { env, stdin: Buffer.from(input), stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new OpsError("validation_failed", `${repo.path}: its refs could not be restored: ${r.stderr.toString().trim().slice(0, 500)}`);
  }
  return { manifest, files: manifest.files.length, bytes };
}

export interface VerifyReport {
  id: string;
  files: number;
  bytes: number;
  databases: string[];
  repos: number;
  secrets: { values: number; opened: number };
}

/**
 * Restore into a temporary directory and check it whole. `keys` says where the secrets key comes
 * from when the backup does not hold `keys/secrets.key` (OPS_SECRETS_KEY or its file).
 */
export async function verifyBackup(ref: ManifestRef, passphrase: string | null, keys: Pick<Config, "secretsKey" | "secretsKeyFile">, scratch = tmpdir()): Promise<VerifyReport> {
  const dir = mkdtempSync(path.join(scratch, "ops-verify-"));
  const dataDir = path.join(dir, "data");
  try {
    const r = await restoreBackup(ref, dataDir, passphrase);
    const databases: string[] = [];
    for (const name of ["ops.db", "telemetry.db"]) {
      const file = path.join(dataDir, name);
      if (!existsSync(file)) continue;
      const db = new Database(file, { readonly: true });
      try {
        const rows = db.query("PRAGMA integrity_check").all() as Array<{ integrity_check: string }>;
        if (rows.length !== 1 || rows[0].integrity_check !== "ok") throw new OpsError("validation_failed", `${name} fails its integrity check: ${rows.map((x) => x.integrity_check).join("; ").slice(0, 500)}`);
      } finally {
        db.close(false);
      }
      databases.push(name);
    }
    if (!databases.includes("ops.db")) throw new OpsError("validation_failed", "The backup holds no ops.db.");
    const env = plainGitEnv(dir);
    for (const repo of r.manifest.repos) {
      const fsck = Bun.spawnSync(["git", `--git-dir=${path.join(dataDir, repo.path)}`, "fsck", "--full", "--strict", "--no-dangling", "--no-progress"], { env, stdout: "pipe", stderr: "pipe" });
      if (fsck.exitCode !== 0) throw new OpsError("validation_failed", `${repo.path} fails git fsck: ${`${fsck.stdout}${fsck.stderr}`.trim().slice(0, 500)}`);
    }
    const secrets = openSecrets(dataDir, keys);
    return { id: r.manifest.id, files: r.files, bytes: r.bytes, databases, repos: r.manifest.repos.length, secrets };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function openSecrets(dataDir: string, keys: Pick<Config, "secretsKey" | "secretsKeyFile">): { values: number; opened: number } {
  const sqlite = new Database(path.join(dataDir, "ops.db"), { readonly: true });
  try {
    const db = drizzle(sqlite) as unknown as Db;
    const ids = db.select({ id: sealedValues.id }).from(sealedValues).all();
    const hasKeyring = (sqlite.query("SELECT count(*) AS n FROM secrets_keyring").get() as { n: number }).n > 0;
    if (ids.length === 0 && !hasKeyring) return { values: 0, opened: 0 };
    const store = new SecretsStore(db, systemClock, { dataDir, secretsKey: keys.secretsKey, secretsKeyFile: keys.secretsKeyFile });
    const status = store.open();
    if (status.sealed) throw new OpsError("validation_failed", `The backup's keys do not open its secrets: ${status.reason}`);
    for (const { id } of ids) store.getBytes(db, id);
    return { values: ids.length, opened: ids.length };
  } finally {
    sqlite.close(false);
  }
}
