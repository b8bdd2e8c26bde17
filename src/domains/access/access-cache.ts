/**
 * In-memory caches on the authentication hot path: principals by credential digest, grants by
 * operator, and `GET /me` bodies by credential. Every entry is valid for one value of the
 * `access_generation` counter, which SQLite triggers bump inside any transaction that changes
 * what these read (see tables.ts). Each lookup reads the counter (one prepared primary-key read)
 * and drops every cache when it moved — so a revocation, suspension or role change by any
 * connection or process takes effect on the very next request. Unknown credentials are never
 * cached (a new session or token needs no invalidation). Sizes are bounded.
 */
import type { Statement } from "bun:sqlite";
import type { Core } from "../../core/core";

const MAX_ENTRIES = 20_000;

export class GenerationCache {
  private gen = -1;
  private readonly maps: Array<Map<string, unknown>> = [];
  private readonly named = new Map<string, Map<string, unknown>>();
  private readonly read: Statement<{ n: number }, []>;

  constructor(core: Core) {
    this.read = core.sqlite.query<{ n: number }, []>("SELECT n FROM access_generation WHERE id = 1");
  }

  /** A map that is emptied whenever the generation moves. */
  map<V>(): Map<string, V> {
    const m = new Map<string, V>();
    this.maps.push(m as Map<string, unknown>);
    return m;
  }

  /** The map called `name`, created on first use (for caches outside authn.ts). */
  mapNamed<V>(name: string): Map<string, V> {
    let m = this.named.get(name);
    if (!m) {
      m = this.map<unknown>();
      this.named.set(name, m);
    }
    return m as Map<string, V>;
  }

  /** Check the generation; clears every map when it changed. Call once before using the maps. */
  sync(): void {
    const n = this.read.get()?.n ?? 0;
    if (n !== this.gen) {
      this.gen = n;
      for (const m of this.maps) m.clear();
    }
  }

  /** Store with a size bound (the oldest entries go first). */
  static put<V>(m: Map<string, V>, key: string, value: V): void {
    if (m.size >= MAX_ENTRIES) {
      const oldest = m.keys().next().value;
      if (oldest !== undefined) m.delete(oldest);
    }
    m.set(key, value);
  }
}

/** The access cache of `core` (one per Core). */
export function accessCache(core: Core): GenerationCache {
  let c = core.locals.get("access.cache") as GenerationCache | undefined;
  if (!c) {
    c = new GenerationCache(core);
    core.locals.set("access.cache", c);
  }
  return c;
}
