/**
 * A stamp of "the database as it is now": it moves whenever anything in the file changes, by this
 * connection or any other, in this process or another. Caches of rows read on a hot path compare
 * it instead of re-reading the rows (docs/decisions/0641-per-request-cost.md).
 *
 * Two numbers make it, each read by a statement with no table behind it:
 * - `total_changes()`: rows this connection inserted, updated or deleted since it opened,
 *   trigger programs and rolled-back transactions included (a rollback only moves it: a spurious
 *   invalidation, never a missed one);
 * - `PRAGMA data_version`: moves when another connection commits to the file.
 * (Two statements: the pragma as a table-valued function in one SELECT costs a third more than
 * both.) Coarse on purpose: any write anywhere invalidates, so a cache keyed by it never needs to know
 * which tables its rows came from.
 */
import type { Database, Statement } from "bun:sqlite";

export class ChangeStamp {
  private readonly changes: Statement<{ t: number }, []>;
  private readonly version: Statement<{ data_version: number }, []>;

  constructor(sqlite: Database) {
    this.changes = sqlite.query<{ t: number }, []>("SELECT total_changes() AS t");
    this.version = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  }

  /** The current stamp (a different one means "something in the database changed since"). */
  now(): string {
    return `${this.changes.get()?.t ?? ""}:${this.version.get()?.data_version ?? ""}`;
  }
}
