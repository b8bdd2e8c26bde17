/**
 * SQLite through drizzle-orm on bun:sqlite. Two files per data dir: `ops.db` (state; every write
 * is durable: synchronous=FULL) and `telemetry.db` (logs, spans, samples; synchronous=NORMAL so
 * ingestion never waits on fsync and never blocks state writes).
 *
 * Transactions are synchronous (bun:sqlite is): do async work (hashing, blob writes, network)
 * before `tx(...)`, then write rows and the audit row inside it. A thrown error rolls back.
 */
import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";

export type Db = BunSQLiteDatabase<Record<string, never>>;
/** The handle inside `tx(...)`; services that write take `Tx` so callers decide the transaction. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** Either: for reads that may run inside or outside a transaction. */
export type Queryable = Db | Tx;

export interface OpenedDb {
  sqlite: Database;
  db: Db;
}

export type Durability = "state" | "telemetry";

/** Open (creating if needed) a database file with the pragmas ops relies on, set explicitly. */
export function openDatabase(file: string, durability: Durability): OpenedDb {
  const sqlite = new Database(file, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec(`PRAGMA synchronous = ${durability === "state" ? "FULL" : "NORMAL"}`);
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  // Keep the WAL from growing without bound under steady writes.
  sqlite.exec("PRAGMA wal_autocheckpoint = 1000");
  const db = drizzle(sqlite) as unknown as Db;
  return { sqlite, db };
}

/**
 * Run `fn` in an IMMEDIATE transaction (takes the write lock up front, so two writers never
 * deadlock upgrading from a read lock). Returns what `fn` returns; `fn` must not be async.
 */
export function tx<T>(db: Db, fn: (t: Tx) => T): T {
  try {
    return db.transaction(fn, { behavior: "immediate" });
  } finally {
    writeEpoch++;
  }
}

let writeEpoch = 0;

/**
 * Counts transactions run through `tx` in this process. Caches that skip re-checking the
 * database within one synchronous stretch compare it to notice a write made in between.
 */
export function currentWriteEpoch(): number {
  return writeEpoch;
}

/** Close a database cleanly: checkpoint the WAL into the main file, then close. */
export function closeDatabase(sqlite: Database): void {
  try {
    sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch {
    // A busy checkpoint is fine: the WAL is replayed on next open.
  }
  sqlite.close(false);
}
