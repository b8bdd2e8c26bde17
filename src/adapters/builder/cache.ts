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
 *
 * The services' caches of one project share a cap (`OPS_CACHE_MAX_MB`, DESIGN §6; decision 0507):
 * `cache/deps/<project>/` is an ext4 image of that size on a loop device while any build of the
 * project runs (a write past it fails with ENOSPC), and when the last one ends the caches are
 * trimmed least recently used first to three quarters of it (cache-trim.ts), so the next build has
 * room to add, before the image is unmounted. It is kept (sparse, mounted `discard`: the data disk
 * holds what the caches hold). Not root, or no loop devices: no cap while a build runs, the trim
 * still bounds what is kept, and the build log says so.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { attachDisk, detachDisk, mountsUnder } from "../sandbox/disk";
import type { LimitLine } from "./limits";
import type { CacheCap } from "./types";
import { trimCaches } from "./cache-trim";

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

/**
 * The service's cache folder inside its project's (`<root>/<environment>/<service>`) and the cap
 * they share. The service's folder of before the cap (`cache/builds/<project>/<environment>/<service>`)
 * is removed: what it held would stay on the data disk uncapped.
 */
export function projectCache(dataDir: string, projectId: string, environment: string, service: string, capMb: number): { cacheDir: string; cacheCap: CacheCap } {
  rmSync(path.join(dataDir, "cache", "builds", projectId, environment, service), { recursive: true, force: true });
  const root = path.join(dataDir, "cache", "deps", projectId);
  return { cacheDir: path.join(root, environment, service), cacheCap: { root, capMb } };
}

/** The share of the cap the caches are trimmed to after the last build: the rest is room to add. */
export const KEEP_SHARE = 0.75;

interface Shared {
  users: number;
  line: LimitLine;
  /** Opens and closes of one project's caches run one after another. */
  tail: Promise<unknown>;
}

const shared = new Map<string, Shared>();

function serial<T>(st: Shared, fn: () => Promise<T>): Promise<T> {
  const next = st.tail.then(fn, fn);
  st.tail = next.catch(() => {});
  return next;
}

const MiB = 1024 * 1024;

/** Mount the project's image (made, or made again when its size is not the cap's or it does not mount); the log line. */
async function mountCaches(cap: CacheCap): Promise<LimitLine> {
  const image = `${cap.root}.img`;
  const keep = Math.floor(cap.capMb * KEEP_SHARE);
  const what = `dependency caches (npm, cargo, pip, buildah's layers): ${cap.capMb} MiB for the project`;
  mkdirSync(cap.root, { recursive: true, mode: 0o700 });
  if (mountsUnder(cap.root).includes(cap.root)) return { level: "info", text: `${what} (an ext4 image on a loop device, left mounted by a stopped ops), trimmed to ${keep} MiB after its builds` };
  if (existsSync(image) && statSync(image).size !== cap.capMb * MiB) rmSync(image, { force: true });
  const options = ["discard", "strictatime"];
  let attempt = await attachDisk(cap.root, image, cap.capMb, { reuse: true, options });
  if (!attempt.how && existsSync(image)) {
    rmSync(image, { force: true });
    attempt = await attachDisk(cap.root, image, cap.capMb, { options });
  }
  if (attempt.how) return { level: "info", text: `${what} (an ext4 image on a loop device), trimmed to ${keep} MiB after its builds` };
  return { level: "warn", text: `${what} is NOT enforced while a build runs: ${attempt.reason}; trimmed to ${keep} MiB after its builds` };
}

export interface OpenCache {
  /** The build log's line about the cap (null: the caller named none, as the builder's own tests do). */
  line: LimitLine | null;
  /** The build is done with the caches: the last one out trims and unmounts them. */
  close(): Promise<void>;
}

/** Open a service's caches under its project's cap for one build (see the file comment). */
export async function openCache(cacheDir: string, cap: CacheCap | null): Promise<OpenCache> {
  if (!cap || cap.capMb <= 0) {
    prepareCache(cacheDir);
    return { line: cap ? { level: "info", text: "no cap is set for the dependency caches (OPS_CACHE_MAX_MB=0)" } : null, close: async () => {} };
  }
  let st = shared.get(cap.root);
  if (!st) shared.set(cap.root, (st = { users: 0, line: { level: "info", text: "" }, tail: Promise.resolve() }));
  const own = st;
  await serial(own, async () => {
    if (own.users === 0) own.line = await mountCaches(cap);
    own.users++;
  });
  prepareCache(cacheDir);
  let closed = false;
  return {
    line: own.line,
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      return serial(own, async () => {
        if (--own.users > 0) return;
        try {
          trimCaches(cap.root, Math.floor(cap.capMb * KEEP_SHARE) * MiB);
        } finally {
          await detachDisk(cap.root, null);
        }
      });
    },
  };
}
