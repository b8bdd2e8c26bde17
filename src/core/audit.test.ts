import { describe, test, expect, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import path from "node:path";
import { openDatabase, tx } from "./db/client";
import { runMigrations } from "./db/migrate";
import { FixedClock } from "./clock";
import { writeAudit, auditAllowed, SYSTEM_ACTOR } from "./audit";
import { auditLog } from "./tables";
import { tempDir } from "../../test/harness";

const dir = tempDir("ops-audit-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const { sqlite, db } = openDatabase(path.join(dir, "ops.db"), "state");
runMigrations(sqlite, "ops", 0);
const core = { clock: new FixedClock(Date.UTC(2026, 10, 21, 12, 0, 0)) };

describe("audit", () => {
  test("writeAudit stores the row at the clock's time and returns its id", () => {
    const id = writeAudit(core, db, {
      actor: "ada@ops.test",
      operatorId: "op-1",
      via: "token",
      ip: "127.0.0.1",
      action: "secrets.reveal",
      target: "shop/production/api",
      outcome: "denied",
      reason: "token scopes lack secrets.reveal",
      project: "shop",
      environment: "production",
      context: { token: "t-1", request: "r-1" },
    });
    const row = db.select().from(auditLog).all().find((r) => r.id === id)!;
    expect(row).toMatchObject({
      at: core.clock.now(),
      actor: "ada@ops.test",
      via: "token",
      action: "secrets.reveal",
      outcome: "denied",
      reason: "token scopes lack secrets.reveal",
      project: "shop",
      environment: "production",
    });
    expect(JSON.parse(row.context!)).toEqual({ token: "t-1", request: "r-1" });
  });

  test("an allowed row never carries a reason", () => {
    const id = writeAudit(core, db, { actor: "a", via: "console", action: "x", outcome: "allowed", reason: "should not be kept" });
    expect(db.select().from(auditLog).all().find((r) => r.id === id)!.reason).toBe("");
  });

  test("the row commits or rolls back with the mutation's transaction", () => {
    const before = db.select().from(auditLog).all().length;
    expect(() =>
      tx(db, (t) => {
        auditAllowed(core, t, SYSTEM_ACTOR, "retention.sweep", "logs");
        throw new Error("the mutation failed");
      }),
    ).toThrow("the mutation failed");
    expect(db.select().from(auditLog).all().length).toBe(before);
    tx(db, (t) => auditAllowed(core, t, { ...SYSTEM_ACTOR, context: { run: "r-9" } }, "retention.sweep", "logs", { project: "shop" }, { deleted: 3 }));
    const row = db.select().from(auditLog).all().at(-1)!;
    expect(row).toMatchObject({ actor: "system", via: "system", action: "retention.sweep", target: "logs", outcome: "allowed", project: "shop", environment: null });
    expect(JSON.parse(row.context!)).toEqual({ run: "r-9", deleted: 3 });
  });
});
