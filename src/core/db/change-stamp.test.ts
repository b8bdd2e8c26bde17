/** The change stamp moves on every write: this connection's, another connection's, a rolled-back one's. */
import { describe, test, expect, afterAll } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import path from "node:path";
import { tempDir } from "../../../test/harness";
import { openDatabase } from "./client";
import { ChangeStamp } from "./change-stamp";

const dir = tempDir("ops-stamp-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ChangeStamp", () => {
  test("unchanged by reads; moved by own writes, rollbacks and other connections' commits", () => {
    const file = path.join(dir, "ops.db");
    const { sqlite } = openDatabase(file, "state");
    sqlite.run("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)");
    sqlite.run("INSERT INTO t VALUES (1, 0)");
    const stamp = new ChangeStamp(sqlite);
    const s0 = stamp.now();
    sqlite.query("SELECT n FROM t").all();
    expect(stamp.now()).toBe(s0);

    sqlite.run("UPDATE t SET n = n + 1");
    const s1 = stamp.now();
    expect(s1).not.toBe(s0);

    sqlite.run("BEGIN");
    sqlite.run("UPDATE t SET n = n + 1");
    sqlite.run("ROLLBACK");
    const s2 = stamp.now();
    expect(s2).not.toBe(s1);

    const other = new Database(file);
    other.run("UPDATE t SET n = 42");
    other.close();
    expect(stamp.now()).not.toBe(s2);
    sqlite.close();
  });
});
