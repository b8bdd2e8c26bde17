/**
 * What a backup holds, read from a data dir while the server may be writing to it:
 *
 * - `ops.db` and `telemetry.db`: `VACUUM INTO` a file of their own, a transactionally consistent
 *   copy taken in one read transaction (the online backup of SQLite; writers keep going in WAL).
 * - `git/`: per repository, the refs first (`git for-each-ref`), then the files. Objects are never
 *   removed (ops runs git with `gc.auto=0`) and are written before any ref names them, so every
 *   object the snapshot's refs need is there when the files are read after; restore writes the
 *   refs back through `git update-ref`, which checks each object exists.
 * - `blobs/sha256/…`: content-addressed and immutable; read after `ops.db`'s snapshot, so every blob
 *   a snapshot row names was already written (blobs are written before their rows).
 * - everything else that is state (`keys/`, local `buckets/`, anything unknown): copied first.
 * - not backed up: `run/` and `cache/` (rebuilt from the above), `backups/`, temp files.
 */
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { OpsError } from "../../core/errors";
import type { ManifestRepo } from "./model";

export interface Source {
  /** Path under the data dir, `/`-separated. */
  path: string;
  /** Where to read the bytes now (the data dir itself, or a copy in the work dir). */
  file: string;
  size: number;
  mode: number;
  /** The SHA-256 the name already promises (content-addressed blobs). */
  knownSha: string | null;
  /** The bytes never change once written at this path: a hard link may stand in for a copy. */
  immutable: boolean;
}

export interface Snapshot {
  sources: Source[];
  repos: ManifestRepo[];
  migrations: { ops: string[]; telemetry: string[] };
}

const DATABASES = ["ops.db", "telemetry.db"] as const;
const SKIP_TOP = new Set(["run", "cache", "backups", "lost+found", ...DATABASES.flatMap((d) => [d, `${d}-wal`, `${d}-shm`, `${d}-journal`])]);
const SKIP_BLOBS = new Set(["tmp", "uploads"]);

/** A clean environment for git: no user or system configuration; any owner's repository readable. */
export function plainGitEnv(home: string): Record<string, string> {
  return {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: home,
    LANG: "C",
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "safe.directory",
    GIT_CONFIG_VALUE_0: "*",
  };
}

function snapshotDatabase(file: string, dest: string): string[] {
  const db = new Database(file, { readonly: false, create: false });
  try {
    db.exec("PRAGMA busy_timeout = 30000");
    db.query("VACUUM INTO ?").run(dest);
  } finally {
    db.close(false);
  }
  const copy = new Database(dest, { readonly: true });
  try {
    const has = copy.query("SELECT 1 FROM sqlite_master WHERE name = '_ops_migrations'").get();
    return has ? (copy.query("SELECT name FROM _ops_migrations ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name) : [];
  } finally {
    copy.close(false);
  }
}

function isRepo(dir: string): boolean {
  return existsSync(path.join(dir, "HEAD")) && existsSync(path.join(dir, "objects")) && statSync(path.join(dir, "objects")).isDirectory();
}

function refsOf(repo: string, env: Record<string, string>): Array<{ name: string; sha: string }> {
  const r = Bun.spawnSync(["git", `--git-dir=${repo}`, "for-each-ref", "--format=%(objectname) %(refname)"], { env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new OpsError("internal", `git could not list the refs of ${repo}: ${r.stderr.toString().trim().slice(0, 500)}`);
  return r.stdout
    .toString()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const [sha, name] = l.split(" ");
      return { name, sha };
    });
}

/** Skip what git rewrites from the refs, and what is in flight. */
function repoSkips(rel: string): boolean {
  const top = rel.split("/")[0];
  if (top === "refs" || top === "logs" || rel === "packed-refs") return true;
  if (rel.endsWith(".lock")) return true;
  return /^objects\/(incoming-|tmp_objdir)/.test(rel);
}

/** Take the snapshot of `dataDir`, copying what may change into `work`. */
export function takeSnapshot(dataDir: string, work: string): Snapshot {
  if (!existsSync(path.join(dataDir, "ops.db"))) throw new OpsError("not_found", `${dataDir} is not an ops data dir: it has no ops.db.`);
  const sources: Source[] = [];
  const migrations = { ops: [] as string[], telemetry: [] as string[] };
  const fileSource = (rel: string, file: string, immutable: boolean, knownSha: string | null = null) => {
    const st = statSync(file);
    sources.push({ path: rel, file, size: st.size, mode: st.mode & 0o7777, knownSha, immutable });
  };
  const copied = (rel: string, abs: string) => {
    const dest = path.join(work, "files", String(sources.length));
    mkdirSync(path.dirname(dest), { recursive: true });
    copyFileSync(abs, dest);
    const st = statSync(abs);
    sources.push({ path: rel, file: dest, size: statSync(dest).size, mode: st.mode & 0o7777, knownSha: null, immutable: true });
  };

  // Databases first: the blobs their rows name are read after.
  for (const name of DATABASES) {
    const file = path.join(dataDir, name);
    if (!existsSync(file)) continue;
    const dest = path.join(work, name);
    const applied = snapshotDatabase(file, dest);
    if (name === "ops.db") migrations.ops = applied;
    else migrations.telemetry = applied;
    fileSource(name, dest, true);
    sources[sources.length - 1].mode = 0o600;
  }

  const repos: ManifestRepo[] = [];
  const env = plainGitEnv(work);
  const walk = (abs: string, rel: string, inRepo: string | null) => {
    for (const e of readdirSync(abs, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const childAbs = path.join(abs, e.name);
      const childRel = rel === "" ? e.name : `${rel}/${e.name}`;
      if (rel === "" && SKIP_TOP.has(e.name)) continue;
      if (rel === "blobs" && SKIP_BLOBS.has(e.name)) continue;
      const st = lstatSync(childAbs);
      if (st.isDirectory()) {
        if (inRepo === null && childRel.startsWith("git/") && isRepo(childAbs)) {
          repos.push({ path: childRel, refs: refsOf(childAbs, env) });
          walk(childAbs, childRel, childRel);
        } else {
          walk(childAbs, childRel, inRepo);
        }
        continue;
      }
      if (!st.isFile()) continue; // links, sockets, FIFOs: not state ops writes
      if (inRepo !== null) {
        const inner = childRel.slice(inRepo.length + 1);
        if (repoSkips(inner)) continue;
        if (inner.startsWith("objects/")) fileSource(childRel, childAbs, true);
        else copied(childRel, childAbs);
        continue;
      }
      const blob = /^blobs\/sha256\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(childRel);
      if (blob) fileSource(childRel, childAbs, true, blob[1]);
      else copied(childRel, childAbs);
    }
  };
  // Keys and git before blobs, as the header says; the rest in name order.
  const order = (n: string) => (n === "keys" ? 0 : n === "git" ? 1 : n === "blobs" ? 2 : 3);
  const tops = readdirSync(dataDir, { withFileTypes: true }).filter((e) => !SKIP_TOP.has(e.name)).sort((a, b) => order(a.name) - order(b.name) || a.name.localeCompare(b.name));
  for (const e of tops) {
    const abs = path.join(dataDir, e.name);
    if (e.isDirectory()) {
      walk(abs, e.name, null);
    } else if (e.isFile()) {
      copied(e.name, abs);
    }
  }
  return { sources, repos, migrations };
}
