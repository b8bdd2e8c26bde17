import { describe, test, expect, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import path from "node:path";
import { openDatabase, closeDatabase, tx } from "./client";
import { runMigrations, MigrationError, migrationHash } from "./migrate";
import { MIGRATIONS } from "./migrations.generated";
import { auditLog } from "../tables";
import { tempDir } from "../../../test/harness";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function freshDb(name = "ops.db") {
  const dir = tempDir("ops-migrate-");
  dirs.push(dir);
  return openDatabase(path.join(dir, name), name === "telemetry.db" ? "telemetry" : "state");
}

function tables(sqlite: ReturnType<typeof freshDb>["sqlite"]): string[] {
  return (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name);
}

describe("runMigrations", () => {
  test("migrates an empty database and records each migration with its hash", () => {
    const { sqlite } = freshDb();
    const applied = runMigrations(sqlite, "ops", 1234);
    expect(applied).toEqual(MIGRATIONS.ops.map((m) => m.name));
    expect(tables(sqlite)).toEqual(expect.arrayContaining(["_ops_migrations", "audit_log", "scheduler_items", "scheduler_tasks", "secrets_keyring", "sealed_values"]));
    const rows = sqlite.query("SELECT name, hash, applied_at FROM _ops_migrations ORDER BY name").all() as Array<{ name: string; hash: string; applied_at: number }>;
    expect(rows).toEqual(MIGRATIONS.ops.map((m) => ({ name: m.name, hash: migrationHash(m.sql), applied_at: 1234 })));
    expect(sqlite.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    closeDatabase(sqlite);
  });

  test("re-running is a no-op", () => {
    const { sqlite } = freshDb();
    runMigrations(sqlite, "ops", 1);
    const before = sqlite.query("SELECT * FROM _ops_migrations").all();
    expect(runMigrations(sqlite, "ops", 2)).toEqual([]);
    expect(sqlite.query("SELECT * FROM _ops_migrations").all()).toEqual(before);
    closeDatabase(sqlite);
  });

  test("the telemetry database migrates too (an empty list is fine)", () => {
    const { sqlite } = freshDb("telemetry.db");
    expect(runMigrations(sqlite, "telemetry", 1)).toEqual(MIGRATIONS.telemetry.map((m) => m.name));
    expect(runMigrations(sqlite, "telemetry", 2)).toEqual([]);
    closeDatabase(sqlite);
  });

  test("applies only what is pending, in order", () => {
    const { sqlite } = freshDb();
    const list = [
      { name: "0000_a", sql: "CREATE TABLE a (id INTEGER PRIMARY KEY);" },
      { name: "0001_b", sql: "CREATE TABLE b (id INTEGER PRIMARY KEY);\n--> statement-breakpoint\nCREATE INDEX b_id ON b (id);" },
    ];
    expect(runMigrations(sqlite, "ops", 1, list.slice(0, 1))).toEqual(["0000_a"]);
    expect(runMigrations(sqlite, "ops", 2, list)).toEqual(["0001_b"]);
    expect(tables(sqlite)).toEqual(expect.arrayContaining(["a", "b"]));
    closeDatabase(sqlite);
  });

  test("a migration whose SQL changed after it was applied stops start-up", () => {
    const { sqlite } = freshDb();
    runMigrations(sqlite, "ops", 1, [{ name: "0000_a", sql: "CREATE TABLE a (id INTEGER PRIMARY KEY);" }]);
    expect(() => runMigrations(sqlite, "ops", 2, [{ name: "0000_a", sql: "CREATE TABLE a (id INTEGER PRIMARY KEY, x TEXT);" }])).toThrow(MigrationError);
    expect(() => runMigrations(sqlite, "ops", 2, [{ name: "0000_a", sql: "CREATE TABLE a (id INTEGER PRIMARY KEY, x TEXT);" }])).toThrow(/append-only/);
    closeDatabase(sqlite);
  });

  test("an applied migration this binary does not know stops start-up", () => {
    const { sqlite } = freshDb();
    runMigrations(sqlite, "ops", 1);
    sqlite.query("INSERT INTO _ops_migrations (name, hash, applied_at) VALUES ('9999_from_the_future', 'x', 1)").run();
    expect(() => runMigrations(sqlite, "ops", 2)).toThrow(MigrationError);
    expect(() => runMigrations(sqlite, "ops", 2)).toThrow(/9999_from_the_future/);
    closeDatabase(sqlite);
  });

  test("a failing migration rolls back whole and is not recorded", () => {
    const { sqlite } = freshDb();
    const list = [{ name: "0000_bad", sql: "CREATE TABLE ok_one (id INTEGER);\n--> statement-breakpoint\nTHIS IS NOT SQL;" }];
    expect(() => runMigrations(sqlite, "ops", 1, list)).toThrow();
    expect(tables(sqlite)).not.toContain("ok_one");
    expect(sqlite.query("SELECT count(*) AS n FROM _ops_migrations").get()).toEqual({ n: 0 });
    closeDatabase(sqlite);
  });
});

describe("openDatabase", () => {
  test("sets the pragmas ops relies on", () => {
    const state = freshDb("ops.db");
    const telemetry = freshDb("telemetry.db");
    const get = (db: typeof state, p: string) => Object.values(db.sqlite.query(`PRAGMA ${p}`).get() as object)[0];
    expect(get(state, "journal_mode")).toBe("wal");
    expect(get(state, "synchronous")).toBe(2); // FULL
    expect(get(telemetry, "synchronous")).toBe(1); // NORMAL
    expect(get(state, "foreign_keys")).toBe(1);
    expect(get(state, "busy_timeout")).toBe(5000);
    closeDatabase(state.sqlite);
    closeDatabase(telemetry.sqlite);
  });

  test("tx commits together or rolls back together", () => {
    const { sqlite, db } = freshDb();
    runMigrations(sqlite, "ops", 1);
    const row = { at: 1, actor: "a", via: "system", action: "x", outcome: "allowed" as const };
    tx(db, (t) => {
      t.insert(auditLog).values(row).run();
    });
    expect(() =>
      tx(db, (t) => {
        t.insert(auditLog).values(row).run();
        throw new Error("abort");
      }),
    ).toThrow("abort");
    expect(db.select().from(auditLog).all()).toHaveLength(1);
    closeDatabase(sqlite);
  });
});

describe("the embedded manifest", () => {
  test("is current with migrations/ (scripts/embed-migrations.ts --check)", () => {
    const root = path.resolve(import.meta.dir, "../../..");
    const r = Bun.spawnSync([process.execPath, "scripts/embed-migrations.ts", "--check"], { cwd: root, stdout: "pipe", stderr: "pipe" });
    expect(`${r.stdout.toString()}${r.stderr.toString()}`).toContain("migration manifest is current");
    expect(r.exitCode).toBe(0);
  });
});
