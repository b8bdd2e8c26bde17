/**
 * Keeping `OPS_BACKUP_KEEP` backups at a place: the oldest manifests past the count go, then the
 * objects no remaining manifest names. An object younger than a day is never swept, so a backup
 * another process is writing (objects first, manifest last) keeps what it stored. When a remaining
 * manifest cannot be read (encrypted under another passphrase, damaged), no object is swept.
 */
import type { BackupTarget } from "./target";
import { listManifests, readManifest } from "./restore";

const OBJECT_GRACE_MS = 24 * 60 * 60 * 1000;

export interface PruneResult {
  manifests: number;
  objects: number;
  /** Why no object was swept, when none was for a reason. */
  skipped: string | null;
}

export async function pruneBackups(target: BackupTarget, keep: number, passphrase: string | null, nowMs: number): Promise<PruneResult> {
  const all = await listManifests(target);
  const gone = all.slice(0, Math.max(0, all.length - keep));
  for (const key of gone) await target.delete(key);
  const kept = all.slice(gone.length);
  const named = new Set<string>();
  for (const key of kept) {
    try {
      const { manifest } = await readManifest({ target, key }, passphrase);
      for (const f of manifest.files) named.add(f.object);
    } catch (e) {
      return { manifests: gone.length, objects: 0, skipped: `${key}: ${(e as Error).message}` };
    }
  }
  let objects = 0;
  for (const o of await target.listAged("objects/")) {
    const name = o.key.slice(o.key.lastIndexOf("/") + 1);
    if (named.has(name) || nowMs - o.modifiedMs < OBJECT_GRACE_MS) continue;
    await target.delete(o.key);
    objects++;
  }
  return { manifests: gone.length, objects, skipped: null };
}
