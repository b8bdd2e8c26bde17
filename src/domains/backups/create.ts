/**
 * `createBackup`: snapshot a data dir and store it at a backup place. Objects are named by
 * content, so a second backup to the same place uploads only what the first did not have; the
 * manifest, written last, is what makes a backup exist (a backup cut short leaves unreferenced
 * objects, which the next `pruneBackups` sweeps).
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { OpsError } from "../../core/errors";
import { chunksOf, newKeyWrap, objectName, openKeyWrap, sealBytes, sealFile, type KeyWrap } from "./crypt";
import { MANIFEST_FORMAT, type Manifest, type ManifestFile, type StoredManifest } from "./model";
import { takeSnapshot, type Source } from "./snapshot";
import { objectKey, type BackupTarget } from "./target";

export interface CreateOptions {
  /** Encrypt with this passphrase (null: in the clear). */
  passphrase?: string | null;
  /** Hard-link immutable files instead of copying (a backup place on the data dir's file system). */
  link?: boolean;
  version: string;
  now?: Date;
}

/** The SHA-256 of a file, read in chunks. */
export async function hashFile(file: string): Promise<string> {
  const h = new Bun.CryptoHasher("sha256");
  for await (const chunk of chunksOf(Bun.file(file))) h.update(chunk);
  return h.digest("hex");
}

/** `20261127T133000123Z-k3x9q1` (milliseconds): sorts by time, unique enough for one place. */
export function backupId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:.]/g, "");
  const rand = [...randomBytes(6)].map((b) => "0123456789abcdefghijklmnopqrstuvwxyz"[b % 36]).join("");
  return `${stamp}-${rand}`;
}

/** The place's data key under `passphrase`: opened from `keyring.json`, or made and stored there. */
export async function placeKey(target: BackupTarget, passphrase: string): Promise<{ key: Buffer; wrap: KeyWrap }> {
  const stored = await target.getBytes("keyring.json");
  if (stored) {
    const wrap = JSON.parse(Buffer.from(stored).toString("utf8")) as KeyWrap;
    return { key: await openKeyWrap(wrap, passphrase), wrap };
  }
  const made = await newKeyWrap(passphrase);
  await target.putBytes("keyring.json", Buffer.from(JSON.stringify(made.wrap, null, 2)));
  return made;
}

async function inPool<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

/** Back up `dataDir` to `target`. Returns the manifest written. */
export async function createBackup(dataDir: string, target: BackupTarget, opts: CreateOptions): Promise<Manifest> {
  const t0 = performance.now();
  const now = opts.now ?? new Date();
  const id = backupId(now);
  const work = path.join(dataDir, "run", `backup-${id}`);
  mkdirSync(work, { recursive: true, mode: 0o700 });
  try {
    const keyed = opts.passphrase ? await placeKey(target, opts.passphrase) : null;
    const key = keyed?.key ?? null;
    const existing = new Set((await target.list("objects/")).map((k) => k.slice(k.lastIndexOf("/") + 1)));
    const snap = takeSnapshot(dataDir, work);
    const files: ManifestFile[] = [];
    let newObjects = 0;
    let newBytes = 0;
    let bytes = 0;
    const pending = new Set<string>();
    await inPool(snap.sources, 4, async (s: Source) => {
      const sha = s.knownSha ?? (await hashFile(s.file));
      const name = objectName(key, sha);
      files.push({ path: s.path, sha256: sha, size: s.size, mode: s.mode, object: name });
      bytes += s.size;
      if (existing.has(name) || pending.has(name)) return;
      pending.add(name);
      if (key) {
        const sealed = path.join(work, `seal-${name}`);
        try {
          const got = await sealFile(key, s.file, sealed, name);
          if (got !== sha) throw new OpsError("conflict", `${s.path} changed while it was being backed up.`);
          await target.putFile(objectKey(name), sealed);
        } finally {
          rmSync(sealed, { force: true });
        }
      } else {
        if (s.knownSha !== null && (await hashFile(s.file)) !== sha) throw new OpsError("internal", `The data dir's blob ${s.path} does not match its name: it is damaged.`);
        await target.putFile(objectKey(name), s.file, { link: opts.link === true && s.immutable });
      }
      existing.add(name);
      newObjects++;
      newBytes += s.size;
    });
    files.sort((a, b) => a.path.localeCompare(b.path));
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      id,
      created_at: now.toISOString(),
      ops_version: opts.version,
      migrations: snap.migrations,
      files,
      repos: snap.repos,
      stats: { files: files.length, bytes, new_objects: newObjects, new_bytes: newBytes, ms: Math.round(performance.now() - t0) },
    };
    const stored: StoredManifest = keyed
      ? { format: MANIFEST_FORMAT, id, created_at: manifest.created_at, encryption: keyed.wrap, sealed: sealBytes(keyed.key, Buffer.from(JSON.stringify(manifest)), `manifest:${id}`).toString("base64") }
      : { format: MANIFEST_FORMAT, id, created_at: manifest.created_at, encryption: null, manifest };
    await target.putBytes(`manifests/${id}.json`, Buffer.from(JSON.stringify(stored, null, 1)));
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
