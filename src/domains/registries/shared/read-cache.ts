/**
 * The registries' read cache: the package a protocol path names and its stored documents (cargo
 * index files, npm packuments), kept in memory for as long as the database has not changed at
 * all (`ChangeStamp`: any write by any connection or process empties it). A claim, release,
 * publish, yank, unyank or dist-tag change is a write, so a cached row or document never outlives
 * what it was read from (docs/decisions/0641-per-request-cost.md).
 *
 * The stamp is read once per GET or HEAD request (the first lookup; later ones in the same
 * request reuse it unless a transaction ran in between) and on every lookup of any other request,
 * so a write request always sees its own writes. Only rows that exist are cached; sizes are bounded.
 */
import type { Core } from "../../../core/core";
import { ChangeStamp } from "../../../core/db/change-stamp";
import { currentWriteEpoch } from "../../../core/db/client";

const MAX_ENTRIES = 10_000;

export class RegistryReadCache {
  private readonly stamp: ChangeStamp;
  private current = "";
  /** Safe-method requests already checked, with the write epoch at the check. */
  private readonly checked = new WeakMap<Request, number>();
  private readonly maps = new Map<string, Map<string, unknown>>();

  private readonly sqlite: Core["sqlite"];

  constructor(core: Core) {
    this.sqlite = core.sqlite;
    this.stamp = new ChangeStamp(core.sqlite);
  }

  /**
   * Empty the maps if the database changed since the last check. Call before using them; false
   * inside a transaction, where the caller reads the database itself (what a transaction sees may
   * yet be rolled back, and a rollback does not move the stamp past what was read).
   */
  sync(request?: Request): boolean {
    if (this.sqlite.inTransaction) {
      this.current = "";
      return false;
    }
    const epoch = currentWriteEpoch();
    if (request && this.checked.get(request) === epoch) return true;
    const now = this.stamp.now();
    if (now !== this.current) {
      this.current = now;
      for (const m of this.maps.values()) m.clear();
    }
    if (request && (request.method === "GET" || request.method === "HEAD")) this.checked.set(request, epoch);
    return true;
  }

  /** The map called `name` (packages, documents), emptied with the others. */
  map<V>(name: string): Map<string, V> {
    let m = this.maps.get(name);
    if (!m) {
      m = new Map();
      this.maps.set(name, m);
    }
    return m as Map<string, V>;
  }

  /** Store with a size bound (the oldest entry goes first). */
  static put<V>(m: Map<string, V>, key: string, value: V): void {
    if (m.size >= MAX_ENTRIES) {
      const oldest = m.keys().next().value;
      if (oldest !== undefined) m.delete(oldest);
    }
    m.set(key, value);
  }
}

const byCore = new WeakMap<Core, RegistryReadCache>();

/** The read cache of `core` (one per Core). */
export function registryReadCache(core: Core): RegistryReadCache {
  let c = byCore.get(core);
  if (!c) {
    c = new RegistryReadCache(core);
    byCore.set(core, c);
  }
  return c;
}
