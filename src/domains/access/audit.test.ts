import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, type Person } from "../../../test/fixtures";
import { writeAudit } from "../../core/audit";
import type { ProjectRow } from "./rows";

let t: TestApp;
let owner: Person;
let a: ProjectRow;
beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  a = makeProject(t);
  const base = { via: "console" as const, ip: "10.0.0.1", target: "x", project: a.slug };
  const day = 86_400_000;
  t.clock.advance(-3 * day);
  writeAudit(t.core, t.core.db, { ...base, actor: "Ada@ops.test", action: "secrets.write", outcome: "allowed", environment: "production" });
  t.clock.advance(2 * day);
  writeAudit(t.core, t.core.db, { ...base, actor: "bob@ops.test", action: "secrets.reveal", outcome: "denied", reason: "role lacks secrets.reveal", environment: "staging" });
  writeAudit(t.core, t.core.db, { ...base, actor: "api-token", via: "api-token", action: "deployments.deploy", outcome: "allowed", environment: "production" });
  writeAudit(t.core, t.core.db, { ...base, actor: "ada@ops.test", action: "secrets_write", outcome: "allowed", environment: null });
  writeAudit(t.core, t.core.db, { ...base, project: "other", actor: "ada@ops.test", action: "secrets.write", outcome: "allowed" });
  t.clock.advance(day);
});
afterAll(() => t.close());

const get = async (qs: string, token = owner.session) => expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/audit${qs}`, { token }), 200);

describe("GET /projects/{slug}/audit", () => {
  test("200 newest first, only this project, AuditResponse fields", async () => {
    const rows = await get("?action=*");
    expect(rows.every((r: { project: string }) => r.project === a.slug)).toBe(true);
    const ids = rows.map((r: { id: number }) => r.id);
    expect([...ids].sort((x, y) => y - x)).toEqual(ids);
    const denied = rows.find((r: { outcome: string }) => r.outcome === "denied");
    expect(denied).toMatchObject({ actor: "bob@ops.test", via: "console", ip: "10.0.0.1", action: "secrets.reveal", target: "x", reason: "role lacks secrets.reveal", environment: "staging" });
    expect(typeof denied.id).toBe("number");
    expect(denied.at).toMatch(/Z$/);
  });
  test("filters: actor (case-insensitive, exact), environment, action (exact or prefix*), outcome, since (RFC 3339 and relative), project ignored", async () => {
    expect((await get("?actor=ADA@ops.test")).map((r: { action: string }) => r.action).sort()).toEqual(["secrets.write", "secrets_write"]);
    expect((await get("?environment=staging")).map((r: { actor: string }) => r.actor)).toEqual(["bob@ops.test"]);
    expect((await get("?action=secrets.write")).length).toBe(1);
    expect((await get("?action=secrets.*")).map((r: { action: string }) => r.action).sort()).toEqual(["secrets.reveal", "secrets.write"]);
    expect((await get("?outcome=denied")).length).toBe(1);
    expect((await get("?action=secrets*&outcome=allowed&since=36h")).map((r: { action: string }) => r.action)).toEqual(["secrets_write"]);
    const since = new Date(t.clock.now() - 2 * 86_400_000).toISOString();
    expect((await get(`?action=secrets*&since=${since}`)).length).toBe(2);
    expect((await get("?actor=ada@ops.test&project=other")).length).toBe(2);
  });
  test("limit and integer cursor (the last id); limit capped at 500", async () => {
    const first = await get("?limit=2&action=*");
    expect(first).toHaveLength(2);
    const next = await get(`?limit=2&action=*&cursor=${first[1].id}`);
    expect(next[0].id).toBeLessThan(first[1].id);
    expect((await get("?limit=100000")).length).toBeGreaterThan(0);
  });
  test("422 for a bad since, a bad outcome, a non-integer cursor", async () => {
    for (const qs of ["?since=yesterday", "?outcome=maybe", "?cursor=abc"]) {
      await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/audit${qs}`, { token: owner.session }), 422);
    }
  });
  test("403 without audit.read (a developer; a maintainer has it); 404 no such project; 401", async () => {
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/audit`, { token: dev.session }), 403);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/audit`, { token: m.session }), 200);
    await expectStatus(await t.request("GET", "/api/v1/projects/none-such/audit", { token: owner.session }), 404);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/audit`), 401);
    // the developer's denial is itself in the log
    const rows = await get(`?actor=${dev.email}&outcome=denied`);
    expect(rows[0]).toMatchObject({ action: "audit.read", outcome: "denied" });
  });
});
