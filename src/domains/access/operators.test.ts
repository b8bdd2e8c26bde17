import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, mintToken, type Person } from "../../../test/fixtures";
import { fixedRole } from "./roles";

let t: TestApp;
let owner: Person;
beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
});
afterAll(() => t.close());

describe("GET /api/v1/operators", () => {
  test("200 for operators.manage", async () => {
    const list = await expectStatus(await t.request("GET", "/api/v1/operators", { token: owner.session }), 200);
    expect(list.find((o: { id: string }) => o.id === owner.operator.id)).toMatchObject({ kind: "person", name: owner.email, suspended: false, mfa: false, estate_role_id: fixedRole(t.core, "owner").id });
  });
  test("401 anonymous; 403 (audited) for a project maintainer", async () => {
    await expectStatus(await t.request("GET", "/api/v1/operators"), 401);
    const a = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    await expectStatus(await t.request("GET", "/api/v1/operators", { token: m.session }), 403);
    const row = t.core.sqlite.query("SELECT outcome, action FROM audit_log WHERE operator_id = ? ORDER BY id DESC").get(m.operator.id) as { outcome: string; action: string };
    expect(row).toEqual({ outcome: "denied", action: "operators.manage" });
  });
});

describe("POST /api/v1/operators", () => {
  test("201 a person with a password (who can then sign in) and a machine; audited", async () => {
    const res = await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: "New.Person@ops.test", display_name: "New Person", password: "a-long-enough-password" } });
    const person = await expectStatus(res, 201);
    expect(person).toMatchObject({ kind: "person", email: "new.person@ops.test", handle: null, display_name: "New Person", estate_role_id: null });
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: "new.person@ops.test", password: "a-long-enough-password" } }), 200);
    const machine = await expectStatus(await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "machine", handle: "ci-bot", display_name: "CI", estate_role_id: fixedRole(t.core, "viewer").id } }), 201);
    expect(machine).toMatchObject({ kind: "machine", name: "ci-bot", email: null, estate_role_id: fixedRole(t.core, "viewer").id });
    const audit = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'operators.manage' AND outcome = 'allowed' AND target IN (?, ?)").get(`operator:${person.id}`, `operator:${machine.id}`) as { n: number };
    expect(audit.n).toBe(2);
  });
  test("409 for an email taken; 422 for a machine with an email, a short password, a project role estate-wide; 404 unknown role", async () => {
    await expectStatus(await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: owner.email, display_name: "x" } }), 409);
    await expectStatus(await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "machine", email: "m@ops.test", handle: "m", display_name: "x" } }), 422);
    await expectStatus(await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: "short@ops.test", display_name: "x", password: "short" } }), 422);
    await expectStatus(await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: "r@ops.test", display_name: "x", estate_role_id: "0190a0a0-0000-7000-8000-000000000000" } }), 404);
  });
  test("401 anonymous; 403 for a viewer", async () => {
    await expectStatus(await t.request("POST", "/api/v1/operators", { body: { kind: "machine", handle: "z", display_name: "z" } }), 401);
    const v = await makePerson(t, [{ role: "viewer", project: null }]);
    await expectStatus(await t.request("POST", "/api/v1/operators", { token: v.session, body: { kind: "machine", handle: "z", display_name: "z" } }), 403);
  });
});

describe("PATCH /api/v1/operators/{id}", () => {
  test("200 suspend ends every session and token at once; unsuspend does not revive them; sign-in works again", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const tok = mintToken(t, p.principal, { role: "viewer", project: a.slug });
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 200);
    const body = await expectStatus(await t.request("PATCH", `/api/v1/operators/${p.operator.id}`, { token: owner.session, body: { suspended: true } }), 200);
    expect(body.suspended).toBe(true);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 401);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 401);
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: p.password } }), 401);
    await expectStatus(await t.request("PATCH", `/api/v1/operators/${p.operator.id}`, { token: owner.session, body: { suspended: false, display_name: "Back Again" } }), 200);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 401);
    const fresh = await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: p.password } }), 200);
    expect((await expectStatus(await t.request("GET", "/api/v1/me", { token: fresh.token }), 200)).display_name).toBe("Back Again");
  });
  test("200 reset MFA and set a password (ends their sessions)", async () => {
    const p = await makePerson(t, []);
    t.core.sqlite.query("UPDATE operators SET mfa_secret_id = 'x' WHERE id = ?").run(p.operator.id);
    const body = await expectStatus(await t.request("PATCH", `/api/v1/operators/${p.operator.id}`, { token: owner.session, body: { reset_mfa: true, password: "reset-by-the-owner" } }), 200);
    expect(body.mfa).toBe(false);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 401);
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: "reset-by-the-owner" } }), 200);
  });
  test("404 unknown operator; 422 suspending yourself; 401 anonymous; 403 for a maintainer", async () => {
    await expectStatus(await t.request("PATCH", "/api/v1/operators/0190a0a0-0000-7000-8000-000000000000", { token: owner.session, body: { suspended: true } }), 404);
    await expectStatus(await t.request("PATCH", `/api/v1/operators/${owner.operator.id}`, { token: owner.session, body: { suspended: true } }), 422);
    await expectStatus(await t.request("PATCH", `/api/v1/operators/${owner.operator.id}`, { body: { suspended: true } }), 401);
    const m = await makePerson(t, [{ role: "maintainer", project: null }]);
    await expectStatus(await t.request("PATCH", `/api/v1/operators/${owner.operator.id}`, { token: m.session, body: { suspended: true } }), 403);
  });
});
