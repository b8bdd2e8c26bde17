/**
 * Scheduled backups on the scheduler: a run stores a backup at OPS_BACKUP_TO and keeps
 * OPS_BACKUP_KEEP; GET /api/v1/backups shows the newest good one; when it is older than two
 * periods the estate's managers get one `backup.failing` notice (not one per watch), a developer
 * none; a place that cannot be written is reported with its error.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, type Person } from "../../../test/fixtures";
import { tx } from "../../core/db/client";
import { FixedClock } from "../../core/clock";
import { insertSession } from "../access/service";
import { BACKUP_TASK, WATCH_TASK } from "./jobs";

const DAY = 24 * 60 * 60 * 1000;
let t: TestApp;
let place: string;
let owner: Person;
let dev: Person;

beforeAll(async () => {
  place = tempDir("ops-scheduled-");
  // Backups run as a child `ops backup create`, which names them by the wall clock.
  t = await createTestApp({ clock: new FixedClock(Date.now()), env: { OPS_BACKUP_TO: place, OPS_BACKUP_KEEP: "2", OPS_BACKUP_SCHEDULE: "0 3 * * *" } });
  makeProject(t, "shop");
  owner = await makeOwner(t);
  dev = await makePerson(t, [{ role: "developer", project: "shop" }]);
});

afterAll(async () => {
  await t.close();
  rmSync(place, { recursive: true, force: true });
});

/** A fresh session of `p` (the test's clock moves days ahead, past a session's idle limit). */
function sessionOf(p: Person): string {
  return tx(t.core.db, (q) => insertSession(t.core, q, p.operator.id, "console", { ip: "127.0.0.1", userAgent: "test" }).secret);
}

async function failingNotices(p: Person): Promise<number> {
  const list = await expectStatus(await t.request("GET", "/api/v1/notifications", { token: sessionOf(p) }), 200);
  return list.filter((n: { kind: string }) => n.kind === "backup.failing").length;
}

describe("scheduled backups", () => {
  test("each run stores a backup; the place keeps OPS_BACKUP_KEEP; the status shows the newest", async () => {
    for (let i = 0; i < 3; i++) {
      await t.core.scheduler.runNow(BACKUP_TASK);
      t.clock.advance(DAY);
    }
    const manifests = readdirSync(path.join(place, "manifests")).sort();
    expect(manifests).toHaveLength(2);
    t.clock.advance(-DAY);
    const s = await expectStatus(await t.request("GET", "/api/v1/backups", { token: sessionOf(owner) }), 200);
    expect(s).toMatchObject({ target: place, schedule: "0 3 * * *", keep: 2, encrypted: false, last_error: null, failing: false });
    expect(`${s.last_good.id}.json`).toBe(manifests[1]);
    expect(s.last_good.files).toBeGreaterThan(3);
    await expectStatus(await t.request("GET", "/api/v1/backups", { token: sessionOf(dev) }), 403);
    await expectStatus(await t.request("GET", "/api/v1/backups"), 401);
  }, 60_000);

  test("older than two periods: one backup.failing notice for the estate's managers, none for a developer", async () => {
    await t.core.scheduler.runNow(WATCH_TASK);
    expect(await failingNotices(owner)).toBe(0);
    t.clock.advance(2 * DAY + 60_000);
    await t.core.scheduler.runNow(WATCH_TASK);
    await t.core.scheduler.runNow(WATCH_TASK);
    expect(await failingNotices(owner)).toBe(1);
    expect(await failingNotices(dev)).toBe(0);
    const s = await expectStatus(await t.request("GET", "/api/v1/backups", { token: sessionOf(owner) }), 200);
    expect(s.failing).toBe(true);
    // A good backup ends the stretch; the next failing stretch notifies again.
    t.clock.advance(60_000);
    await t.core.scheduler.runNow(BACKUP_TASK);
    expect((await expectStatus(await t.request("GET", "/api/v1/backups", { token: sessionOf(owner) }), 200)).failing).toBe(false);
    t.clock.advance(3 * DAY);
    await t.core.scheduler.runNow(WATCH_TASK);
    expect(await failingNotices(owner)).toBe(2);
  }, 60_000);

  test("a place that cannot be written: the run fails and says why", async () => {
    const file = path.join(tempDir("ops-not-a-dir-"), "file");
    writeFileSync(file, "not a directory");
    const bad = await createTestApp({ env: { OPS_BACKUP_TO: file } });
    try {
      const o = await makeOwner(bad);
      await bad.core.scheduler.runNow(BACKUP_TASK);
      const s = await expectStatus(await bad.request("GET", "/api/v1/backups", { token: o.session }), 200);
      expect(s.last_good).toBeNull();
      expect(s.last_error).toMatch(/ENOTDIR|not a directory/i);
      expect(s.last_attempt_at).not.toBeNull();
    } finally {
      await bad.close();
      rmSync(path.dirname(file), { recursive: true, force: true });
    }
  }, 60_000);
});
