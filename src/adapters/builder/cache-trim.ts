/**
 * Trimming a project's dependency caches (cache.ts; decision 0507): least recently used first,
 * until they hold at most a given size. An entry is a file, except where a tool treats a folder as
 * one whole: cargo's unpacked crates (`cargo-registry/src/<index>/<crate>/`, complete once cargo
 * wrote its `.cargo-ok`, never checked again), its git checkouts and databases
 * (`cargo-git/checkouts/<repo>/<rev>/`, `cargo-git/db/<repo>/`) and a container build's buildah
 * storage (`buildah/`, layers and the database that lists them). Removing part of one would leave
 * a crate cargo trusts with files missing, or layers buildah lists without their files; a whole
 * one is fetched again. npm's and pip's caches are content-addressed files whose loss is a miss.
 *
 * Last use is the newest access or change time in the entry: the cache's file system is mounted
 * `strictatime`, so a build that only read an entry renews it.
 */
import { lstatSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";

interface Entry {
  path: string;
  bytes: number;
  lastUse: number;
}

/** Folders (relative to a service's cache, `/`-separated) that are entries as a whole. */
const WHOLE = [/^buildah$/, /^cargo-registry\/src\/[^/]+\/[^/]+$/, /^cargo-git\/checkouts\/[^/]+\/[^/]+$/, /^cargo-git\/db\/[^/]+$/];

function measure(p: string): { bytes: number; lastUse: number } {
  const st = lstatSync(p);
  let bytes = st.blocks * 512;
  let lastUse = Math.max(st.atimeMs, st.mtimeMs);
  if (st.isDirectory()) {
    for (const name of readdirSync(p)) {
      const m = measure(path.join(p, name));
      bytes += m.bytes;
      lastUse = Math.max(lastUse, m.lastUse);
    }
  }
  return { bytes, lastUse };
}

/** The entries of one service's cache folder (`rel` is the path inside it). */
function entriesOf(dir: string, rel: string, out: Entry[]): void {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, d.name);
    const r = rel ? `${rel}/${d.name}` : d.name;
    if (d.isDirectory() && !WHOLE.some((w) => w.test(r))) entriesOf(p, r, out);
    else out.push({ path: p, ...measure(p) });
  }
}

/** Every entry under a project's cache root (`<root>/<environment>/<service>/…`). */
export function cacheEntries(root: string): Entry[] {
  const out: Entry[] = [];
  const dirs = (p: string) => readdirSync(p, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => path.join(p, d.name));
  for (const env of dirs(root)) for (const service of dirs(env)) entriesOf(service, "", out);
  return out;
}

/** Remove the least recently used entries under `root` until they hold at most `maxBytes`; returns the bytes removed. */
export function trimCaches(root: string, maxBytes: number): number {
  const entries = cacheEntries(root);
  let total = entries.reduce((n, e) => n + e.bytes, 0);
  let removed = 0;
  for (const e of entries.sort((a, b) => a.lastUse - b.lastUse)) {
    if (total <= maxBytes) break;
    rmSync(e.path, { recursive: true, force: true });
    total -= e.bytes;
    removed += e.bytes;
  }
  return removed;
}
