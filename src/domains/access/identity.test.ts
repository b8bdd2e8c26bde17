import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, makeMachine, makeRole, mintToken } from "../../../test/fixtures";
import { environmentPolicies } from "./tables";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe("GET /api/v1/me", () => {
  test("200 for a session: via console, token_scopes null, memberships with Estate keys only estate-wide, policies that apply", async () => {
    const a = makeProject(t);
    const roleId = makeRole(t, a.slug, "deployer", ["project.read", "deployments.read", "deployments.deploy"]);
    t.core.db.insert(environmentPolicies).values({ projectId: a.id, environment: "production", roleId, allowed: JSON.stringify(["project.read", "deployments.read"]), updatedAt: t.clock.now() }).run();
    const p = await makePerson(t, [
      { role: "owner", project: a.slug },
      { role: "viewer", project: null },
    ]);
    const other = await makePerson(t, [{ role: roleId, project: a.slug }]);
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
    expect(me).toMatchObject({ operator_id: p.operator.id, actor: p.email, kind: "person", machine: false, suspended: false, mfa: false, via: "console", token_scopes: null, token_id: null, token_project: null });
    const owner = me.memberships.find((m: { project: string | null }) => m.project === a.slug);
    expect(owner.role_slug).toBe("owner");
    expect(owner.fixed).toBe(true);
    expect(owner.permissions).not.toContain("estate.manage");
    expect(me.memberships.find((m: { project: string | null }) => m.project === null).role_slug).toBe("viewer");
    expect(me.policies).toEqual([]);
    const me2 = await expectStatus(await t.request("GET", "/api/v1/me", { token: other.session }), 200);
    expect(me2.policies).toEqual([{ project: a.slug, environment: "production", role_id: roleId, allowed: ["project.read", "deployments.read"] }]);
  });

  test("200 for a person's minted token: via token, its id, pin and scopes; a machine's: via api-token, actor api-token", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const tok = mintToken(t, p.principal, { role: "viewer", project: a.slug });
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 200);
    expect(me.via).toBe("token");
    expect(me.token_project).toBe(a.slug);
    expect(me.token_id).toBeString();
    expect(me.token_scopes).toContain("resources.read");
    expect(me.token_scopes).not.toContain("resources.write");
    const m = await makeMachine(t, [{ role: "viewer", project: a.slug }]);
    const mm = await expectStatus(await t.request("GET", "/api/v1/me", { token: m.token }), 200);
    expect(mm).toMatchObject({ via: "api-token", actor: "api-token", kind: "machine", machine: true });
  });

  test("401 without a credential, with a malformed one, and with a revoked session", async () => {
    await expectStatus(await t.request("GET", "/api/v1/me"), 401);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: "opss_nope" }), 401);
    const p = await makePerson(t, []);
    await expectStatus(await t.request("POST", "/api/v1/auth/logout", { token: p.session }), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 401);
  });
});

describe("sessions", () => {
  test("GET /me/sessions 200: live sessions with current; expired ones are gone", async () => {
    const p = await makePerson(t, []);
    const second = await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: p.password, client: "cli" } }), 200);
    const list = await expectStatus(await t.request("GET", "/api/v1/me/sessions", { token: p.session }), 200);
    expect(list).toHaveLength(2);
    expect(list.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    expect(list.find((s: { current: boolean }) => s.current).kind).toBe("console");
    t.clock.advance(13 * 3_600_000); // console sessions end after 12 h idle
    const later = await expectStatus(await t.request("GET", "/api/v1/me/sessions", { token: second.token }), 200);
    expect(later.map((s: { id: string }) => s.id)).toEqual([second.session.id]);
  });

  test("GET /me/sessions 401 without a credential", async () => {
    await expectStatus(await t.request("GET", "/api/v1/me/sessions"), 401);
  });

  test("DELETE /me/sessions/{id} 204 ends one's own session; 404 for another's or an ended one; 401 anonymous", async () => {
    const p = await makePerson(t, []);
    const q = await makePerson(t, []);
    const second = await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: p.password } }), 200);
    await expectStatus(await t.request("DELETE", `/api/v1/me/sessions/${second.session.id}`, { token: q.session }), 404);
    await expectStatus(await t.request("DELETE", `/api/v1/me/sessions/${second.session.id}`, { token: p.session }), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: second.token }), 401);
    await expectStatus(await t.request("DELETE", `/api/v1/me/sessions/${second.session.id}`, { token: p.session }), 404);
    await expectStatus(await t.request("DELETE", `/api/v1/me/sessions/${second.session.id}`), 401);
    const audit = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'session.revoke' AND operator_id = ?").get(p.operator.id) as { n: number };
    expect(audit.n).toBe(1);
  });
});
