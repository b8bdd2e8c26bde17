/**
 * Before a binary migrates a data dir it backs it up into `<data>/backups/pre-<version>` (a place
 * like any other: `ops restore <data>/backups/pre-<version> --data-dir NEW` goes back), keeping
 * the three newest such places (docs/decisions/0385). Immutable files (blobs, git objects, the
 * database snapshots) are hard links when the file system allows, so the copy costs little space.
 * A data dir that is fresh (nothing applied) or newer than the binary (an applied migration it does
 * not know) is left alone: the first needs no copy, the second is refused by the migration runner.
 */
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { MIGRATIONS, type EmbeddedMigration } from "../../core/db/migrations.generated";
import { createBackup } from "./create";
import { DirTarget } from "./target";
import type { Manifest } from "./model";

export const PRE_MIGRATION_KEEP = 3;

type Lists = { ops: readonly EmbeddedMigration[]; telemetry: readonly EmbeddedMigration[] };

function applied(file: string): string[] | null {
  if (!existsSync(file)) return null;
  const db = new Database(file, { readonly: true });
  try {
    if (!db.query("SELECT 1 FROM sqlite_master WHERE name = '_ops_migrations'").get()) return null;
    return (db.query("SELECT name FROM _ops_migrations").all() as Array<{ name: string }>).map((r) => r.name);
  } finally {
    db.close(false);
  }
}

/** The migrations this binary would apply to `dataDir`; empty for a fresh or a newer data dir. */
export function pendingMigrations(dataDir: string, lists: Lists = MIGRATIONS): string[] {
  const pending: string[] = [];
  for (const which of ["ops", "telemetry"] as const) {
    const done = applied(path.join(dataDir, `${which}.db`));
    if (done === null || done.length === 0) continue;
    const known = new Set(lists[which].map((m) => m.name));
    if (done.some((n) => !known.has(n))) return [];
    const have = new Set(done);
    pending.push(...lists[which].filter((m) => !have.has(m.name)).map((m) => `${which}:${m.name}`));
  }
  return pending;
}

/** Back up `dataDir` when migrations are pending; returns the manifest, or null when none are. */
export async function backupBeforeMigrating(dataDir: string, version: string, lists: Lists = MIGRATIONS): Promise<Manifest | null> {
  if (pendingMigrations(dataDir, lists).length === 0) return null;
  const root = path.join(dataDir, "backups");
  const manifest = await createBackup(dataDir, new DirTarget(path.join(root, `pre-${version.replace(/[^0-9A-Za-z.+-]/g, "_")}`)), { version, link: true });
  const places = readdirSync(root)
    .filter((n) => n.startsWith("pre-"))
    .map((n) => ({ n, at: statSync(path.join(root, n)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const old of places.slice(PRE_MIGRATION_KEEP)) rmSync(path.join(root, old.n), { recursive: true, force: true });
  return manifest;
}
