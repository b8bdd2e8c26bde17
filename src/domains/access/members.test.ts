import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeMachine, makeRole, type Person } from "../../../test/fixtures";
import { fixedRole } from "./roles";

let t: TestApp;
let owner: Person;
beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
});
afterAll(() => t.close());
const role = (slug: string) => fixedRole(t.core, slug).id;
const NO_ID = "0190a0a0-0000-7000-8000-000000000000";

describe("GET /projects/{slug}/members", () => {
  test("200: project members, then estate-wide ones with project null", async () => {
    const a = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members`, { token: dev.session }), 200);
    expect(list[0]).toMatchObject({ operator_id: dev.operator.id, email: dev.email, kind: "person", project: a.slug, project_name: a.name, role_slug: "developer", role_name: "Developer" });
    const estate = list.find((m: { operator_id: string }) => m.operator_id === owner.operator.id);
    expect(estate).toMatchObject({ project: null, project_name: null, role_slug: "owner" });
  });
  test("401 anonymous; 403 non-member", async () => {
    const a = makeProject(t);
    const other = await makePerson(t, []);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members`), 401);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members`, { token: other.session }), 403);
  });
});

describe("POST /projects/{slug}/members", () => {
  test("204 adds; adding again changes the role (one membership per project); audited", async () => {
    const a = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    const p = await makePerson(t, []);
    await expectStatus(await t.request("POST", `/api/v1/projects/${a.slug}/members`, { token: m.session, body: { operator_id: p.operator.id, role_id: role("viewer") } }), 204);
    await expectStatus(await t.request("POST", `/api/v1/projects/${a.slug}/members`, { token: m.session, body: { operator_id: p.operator.id, role_id: role("developer") } }), 204);
    const mine = (await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members`, { token: m.session }), 200)).filter((x: { operator_id: string }) => x.operator_id === p.operator.id);
    expect(mine).toHaveLength(1);
    expect(mine[0].role_slug).toBe("developer");
    const n = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'project.members' AND target = ? AND outcome = 'allowed'").get(`member:${p.operator.id}`) as { n: number };
    expect(n.n).toBe(2);
  });
  test("404 unknown operator, unknown role, another project's role; 409 suspended operator, archived project", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const foreign = makeRole(t, b.slug, "b-only", ["project.read"]);
    const p = await makePerson(t, []);
    const url = `/api/v1/projects/${a.slug}/members`;
    await expectStatus(await t.request("POST", url, { token: owner.session, body: { operator_id: NO_ID, role_id: role("viewer") } }), 404);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: { operator_id: p.operator.id, role_id: NO_ID } }), 404);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: { operator_id: p.operator.id, role_id: foreign } }), 404);
    const s = await makePerson(t, []);
    t.core.sqlite.query("UPDATE operators SET suspended_at = 1 WHERE id = ?").run(s.operator.id);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: { operator_id: s.operator.id, role_id: role("viewer") } }), 409);
    t.core.sqlite.query("UPDATE projects SET archived_at = 1 WHERE id = ?").run(a.id);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: { operator_id: p.operator.id, role_id: role("viewer") } }), 409);
  });
  test("403 for a developer; 403 (audited) granting more than the caller holds; 401 anonymous; machines can be members", async () => {
    const a = makeProject(t);
    const custom = makeRole(t, a.slug, "people", ["project.read", "project.members"]);
    const lead = await makePerson(t, [{ role: custom, project: a.slug }]);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const p = await makePerson(t, []);
    const url = `/api/v1/projects/${a.slug}/members`;
    await expectStatus(await t.request("POST", url, { token: dev.session, body: { operator_id: p.operator.id, role_id: role("viewer") } }), 403);
    await expectStatus(await t.request("POST", url, { token: lead.session, body: { operator_id: lead.operator.id, role_id: role("maintainer") } }), 403);
    const row = t.core.sqlite.query("SELECT outcome, reason FROM audit_log WHERE operator_id = ? ORDER BY id DESC").get(lead.operator.id) as { outcome: string; reason: string };
    expect(row.outcome).toBe("denied");
    expect(row.reason).toContain("more than the caller holds");
    await expectStatus(await t.request("POST", url, { token: lead.session, body: { operator_id: p.operator.id, role_id: custom } }), 204);
    await expectStatus(await t.request("POST", url, { body: { operator_id: p.operator.id, role_id: role("viewer") } }), 401);
    const m = await makeMachine(t, []);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: { operator_id: m.operator.id, role_id: role("viewer") } }), 204);
  });
});

describe("GET /projects/{slug}/members/candidates", () => {
  test("200 identity only, without current members or suspended operators; 403 for a viewer; 401", async () => {
    const a = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    const free = await makePerson(t, []);
    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members/candidates`, { token: m.session }), 200);
    expect(list.some((c: { id: string }) => c.id === m.operator.id)).toBe(false);
    expect(list.find((c: { id: string }) => c.id === free.operator.id)).toEqual({ id: free.operator.id, email: free.email, display_name: free.operator.displayName, kind: "person" });
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members/candidates`, { token: v.session }), 403);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members/candidates`), 401);
  });
});

describe("PUT and DELETE /projects/{slug}/members/{operator_id}", () => {
  test("PUT 204 changes the role, ignoring a differing body operator_id; 404 non-member; 409 archived; 403; 401", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const q = await makePerson(t, []);
    const url = `/api/v1/projects/${a.slug}/members/${p.operator.id}`;
    await expectStatus(await t.request("PUT", url, { token: owner.session, body: { operator_id: q.operator.id, role_id: role("developer") } }), 204);
    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/members`, { token: owner.session }), 200);
    expect(list.find((x: { operator_id: string }) => x.operator_id === p.operator.id).role_slug).toBe("developer");
    expect(list.some((x: { operator_id: string }) => x.operator_id === q.operator.id)).toBe(false);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/members/${q.operator.id}`, { token: owner.session, body: { operator_id: q.operator.id, role_id: role("viewer") } }), 404);
    await expectStatus(await t.request("PUT", url, { token: p.session, body: { operator_id: p.operator.id, role_id: role("owner") } }), 403);
    await expectStatus(await t.request("PUT", url, { body: { operator_id: p.operator.id, role_id: role("viewer") } }), 401);
    t.core.sqlite.query("UPDATE projects SET archived_at = 1 WHERE id = ?").run(a.id);
    await expectStatus(await t.request("PUT", url, { token: owner.session, body: { operator_id: p.operator.id, role_id: role("viewer") } }), 409);
  });
  test("DELETE 204 removes (their access ends at once); 404 non-member; 403; 401", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const url = `/api/v1/projects/${a.slug}/members/${p.operator.id}`;
    await expectStatus(await t.request("DELETE", url, { token: v.session }), 403);
    await expectStatus(await t.request("DELETE", url), 401);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`, { token: p.session }), 200);
    await expectStatus(await t.request("DELETE", url, { token: owner.session }), 204);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`, { token: p.session }), 403);
    await expectStatus(await t.request("DELETE", url, { token: owner.session }), 404);
  });
});
