/**
 * Our own migration runner over the embedded manifest (`migrations.generated.ts`, generated from
 * `migrations/` by `scripts/embed-migrations.ts`). drizzle's migrator reads a folder at run time,
 * which the compiled binary does not have; this reads strings compiled into it.
 *
 * Each migration runs in its own transaction and is recorded with a hash of its SQL. A recorded
 * migration whose SQL changed afterwards stops start-up: migrations are append-only.
 */
import type { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { MIGRATIONS, type EmbeddedMigration } from "./migrations.generated";

export type DatabaseName = keyof typeof MIGRATIONS;

export class MigrationError extends Error {
  override name = "MigrationError";
}

export function migrationHash(sql: string): string {
  return createHash("sha256").update(sql).digest("hex");
}

/** Apply every pending migration of `which` to `sqlite`. Returns the names applied now. */
export function runMigrations(sqlite: Database, which: DatabaseName, nowMs: number, list: readonly EmbeddedMigration[] = MIGRATIONS[which]): string[] {
  sqlite.exec(
    "CREATE TABLE IF NOT EXISTS _ops_migrations (name TEXT PRIMARY KEY NOT NULL, hash TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const applied = new Map<string, string>();
  for (const row of sqlite.query("SELECT name, hash FROM _ops_migrations").all() as Array<{ name: string; hash: string }>) {
    applied.set(row.name, row.hash);
  }
  const known = new Set(list.map((m) => m.name));
  for (const name of applied.keys()) {
    if (!known.has(name)) {
      throw new MigrationError(`${which}.db has migration "${name}" that this binary does not know: the data dir is newer than this ops.`);
    }
  }
  const done: string[] = [];
  for (const m of list) {
    const hash = migrationHash(m.sql);
    const prior = applied.get(m.name);
    if (prior !== undefined) {
      if (prior !== hash) throw new MigrationError(`migration "${m.name}" of ${which}.db changed after it was applied; migrations are append-only.`);
      continue;
    }
    const statements = m.sql.split("--> statement-breakpoint").map((s) => s.trim()).filter(Boolean);
    sqlite.transaction(() => {
      for (const s of statements) sqlite.exec(s);
      sqlite.query("INSERT INTO _ops_migrations (name, hash, applied_at) VALUES (?, ?, ?)").run(m.name, hash, nowMs);
    }).immediate();
    done.push(m.name);
  }
  return done;
}
