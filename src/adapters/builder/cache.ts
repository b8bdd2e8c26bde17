/**
 * The dependency cache: one directory per service, whose subfolders are mounted at the cache
 * paths of the package managers (npm's `~/.npm`, cargo's `~/.cargo/registry` and `~/.cargo/git`,
 * pip's `~/.cache/pip`), so the next build of the service downloads only what changed.
 *
 * `cache_hit` is whole-cache reuse, the form DESIGN allows when reads cannot be counted: ops sees
 * which files a build added to the cache, not which ones the tools read. A build that found cached
 * entries and added none (everything it needed was there) is 1; a build that had to add entries
 * (a cold cache, or a new dependency) is 0; a build that neither found nor added anything (no
 * package manager ran) is null. Files that only record activity (npm's logs and index journal,
 * cargo's registry index, pip's self-check) are not entries: tools rewrite them on every run.
 */
import { mkdirSync, readdirSync } from "node:fs";
import path from "node:path";

export interface CacheMount {
  /** Subfolder of the service's cache directory. */
  name: string;
  /** Where it is mounted, relative to the build user's home. */
  inside: string;
}

export const CACHE_MOUNTS: readonly CacheMount[] = [
  { name: "npm", inside: ".npm" },
  { name: "cargo-registry", inside: ".cargo/registry" },
  { name: "cargo-git", inside: ".cargo/git" },
  { name: "pip", inside: ".cache/pip" },
];

/** Paths (relative to the cache dir, `/`-separated) that change on every run without caching anything. */
const VOLATILE: readonly RegExp[] = [
  /^npm\/_logs\//,
  /^npm\/_update-notifier-last-checked$/,
  /^npm\/_cacache\/index-v5\//,
  /^npm\/_cacache\/tmp\//,
  /^npm\/_npx\//,
  /^cargo-registry\/index\//,
  /^cargo-registry\/CACHEDIR\.TAG$/,
  /^cargo-git\/CACHEDIR\.TAG$/,
  /^pip\/selfcheck/,
];

/** Stop counting past this many files: a snapshot must stay cheap beside the build it measures. */
export const MAX_CACHE_ENTRIES = 200_000;

export interface CacheSnapshot {
  entries: Set<string>;
  /** More than MAX_CACHE_ENTRIES files: the comparison is not trusted. */
  truncated: boolean;
}

/** Create the cache's subfolders (so each mount has a source). */
export function prepareCache(cacheDir: string): void {
  for (const m of CACHE_MOUNTS) mkdirSync(path.join(cacheDir, m.name), { recursive: true, mode: 0o700 });
}

/** The cache's entries now. */
export function snapshotCache(cacheDir: string): CacheSnapshot {
  const entries = new Set<string>();
  let truncated = false;
  const walk = (dir: string, rel: string) => {
    let list;
    try {
      list = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of list) {
      if (entries.size >= MAX_CACHE_ENTRIES) {
        truncated = true;
        return;
      }
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(path.join(dir, d.name), r);
      else if (d.isFile() && !VOLATILE.some((v) => v.test(r))) entries.add(r);
    }
  };
  walk(cacheDir, "");
  return { entries, truncated };
}

export interface CacheUse {
  /** 1, 0 or null: see the file comment. */
  hit: number | null;
  reused: number;
  added: number;
}

/** Compare the snapshots taken before and after a build. */
export function cacheUse(before: CacheSnapshot, after: CacheSnapshot): CacheUse {
  let added = 0;
  for (const e of after.entries) if (!before.entries.has(e)) added++;
  const reused = before.entries.size;
  if (before.truncated || after.truncated) return { hit: null, reused, added };
  if (reused === 0 && added === 0) return { hit: null, reused, added };
  return { hit: reused > 0 && added === 0 ? 1 : 0, reused, added };
}
