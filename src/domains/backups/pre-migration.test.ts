/**
 * Upgrades: a binary that finds pending migrations backs the data dir up into
 * `backups/pre-<version>` first (restorable to the state before the migration) and keeps the three
 * newest; a fresh data dir gets no such backup, and a data dir newer than the binary is still
 * refused, with no backup made.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync } from "node:fs";
import path from "node:path";
import { Database } from "bun:sqlite";
import { tempDir } from "../../../test/harness";
import { openDatabase, closeDatabase } from "../../core/db/client";
import { runMigrations } from "../../core/db/migrate";
import { MIGRATIONS } from "../../core/db/migrations.generated";
import { runCli } from "../../main";
import { VERSION } from "../../version";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function ops(args: string[]) {
  let out = "";
  let err = "";
  const code = await runCli(args, { stdout: (s) => (out += s), stderr: (s) => (err += s), env: {}, cwd: "/" });
  return { code, out, err };
}

/** A data dir whose ops.db lacks this binary's newest migration. */
function behindByOne(): string {
  const dir = tempDir("ops-premig-");
  dirs.push(dir);
  const s = openDatabase(path.join(dir, "ops.db"), "state");
  runMigrations(s.sqlite, "ops", 1, MIGRATIONS.ops.slice(0, -1));
  closeDatabase(s.sqlite);
  const t = openDatabase(path.join(dir, "telemetry.db"), "telemetry");
  runMigrations(t.sqlite, "telemetry", 1);
  closeDatabase(t.sqlite);
  return dir;
}

function appliedIn(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.query("SELECT name FROM _ops_migrations ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name);
  } finally {
    db.close(false);
  }
}

describe("the pre-migration backup", () => {
  test("appears when a migration is pending, and restores the data dir as it was before", async () => {
    const dir = behindByOne();
    const last = MIGRATIONS.ops[MIGRATIONS.ops.length - 1].name;
    const r = await ops(["migrate", "--data-dir", dir]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain(`backups/pre-${VERSION}`);
    expect(r.out).toContain(`ops.db: applied ${last}`);
    expect(appliedIn(path.join(dir, "ops.db"))).toContain(last);
    const place = path.join(dir, "backups", `pre-${VERSION}`);
    expect(readdirSync(path.join(place, "manifests"))).toHaveLength(1);
    const restored = path.join(tempDir("ops-premig-restore-"), "data");
    dirs.push(path.dirname(restored));
    expect((await ops(["restore", place, "--data-dir", restored])).code).toBe(0);
    expect(appliedIn(path.join(restored, "ops.db"))).not.toContain(last);
    expect(appliedIn(path.join(restored, "ops.db"))).toEqual(MIGRATIONS.ops.slice(0, -1).map((m) => m.name).sort());
    // Migrated now: a second run has nothing pending and makes no backup.
    const again = await ops(["migrate", "--data-dir", dir]);
    expect(again.out).not.toContain("backed up");
    expect(readdirSync(path.join(place, "manifests"))).toHaveLength(1);
  }, 60_000);

  test("keeps the three newest pre-<version> backups", async () => {
    const dir = behindByOne();
    const root = path.join(dir, "backups");
    const old = ["pre-0.0.1", "pre-0.0.2", "pre-0.0.3"];
    old.forEach((n, i) => {
      mkdirSync(path.join(root, n), { recursive: true });
      utimesSync(path.join(root, n), 1000 + i, 1000 + i);
    });
    expect((await ops(["migrate", "--data-dir", dir])).code).toBe(0);
    expect(readdirSync(root).sort()).toEqual(["pre-0.0.2", "pre-0.0.3", `pre-${VERSION}`].sort());
  }, 60_000);

  test("a fresh data dir gets none; a data dir newer than the binary is refused, with none", async () => {
    const fresh = tempDir("ops-premig-fresh-");
    dirs.push(fresh);
    expect((await ops(["migrate", "--data-dir", fresh])).code).toBe(0);
    expect(existsSync(path.join(fresh, "backups"))).toBe(false);
    const s = new Database(path.join(fresh, "ops.db"));
    s.query("INSERT INTO _ops_migrations (name, hash, applied_at) VALUES ('9999_from_the_future', 'x', 1)").run();
    s.close();
    const r = await ops(["migrate", "--data-dir", fresh]);
    expect(r.code).toBe(1);
    expect(r.err).toContain("newer than this ops");
    expect(existsSync(path.join(fresh, "backups"))).toBe(false);
  }, 60_000);
});
