import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeRole, mintToken, type Person } from "../../../test/fixtures";
import { environmentPolicies } from "./tables";

let t: TestApp;
let owner: Person;
beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
});
afterAll(() => t.close());

describe("projects", () => {
  test("POST /projects 201 with default environments; audited as estate.manage; 409 slug taken; 422 bad slug", async () => {
    const res = await t.request("POST", "/api/v1/projects", { token: owner.session, body: { slug: "shop", name: "Shop" } });
    const p = await expectStatus(res, 201);
    expect(p).toMatchObject({ slug: "shop", name: "Shop", environments: ["production", "staging"], archived: false });
    const audit = t.core.sqlite.query("SELECT action, outcome, project FROM audit_log WHERE target = 'project:shop'").get();
    expect(audit).toEqual({ action: "estate.manage", outcome: "allowed", project: "shop" });
    await expectStatus(await t.request("POST", "/api/v1/projects", { token: owner.session, body: { slug: "shop", name: "Again" } }), 409);
    await expectStatus(await t.request("POST", "/api/v1/projects", { token: owner.session, body: { slug: "Bad Slug", name: "x" } }), 422);
    await expectStatus(await t.request("POST", "/api/v1/projects", { token: owner.session, body: { slug: "envs", name: "x", environments: ["prod", "prod"] } }), 422);
  });

  test("POST /projects 401 anonymous; 403 for a project maintainer", async () => {
    await expectStatus(await t.request("POST", "/api/v1/projects", { body: { slug: "x", name: "x" } }), 401);
    const a = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/projects", { token: m.session, body: { slug: "x", name: "x" } }), 403);
  });

  test("GET /projects: the caller's projects only (all for an estate-wide member; the pin for a pinned token); 401 anonymous", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }, { role: "viewer", project: b.slug }]);
    const slugs = (await expectStatus(await t.request("GET", "/api/v1/projects", { token: dev.session }), 200)).map((p: { slug: string }) => p.slug);
    expect(slugs.sort()).toEqual([a.slug, b.slug].sort());
    const pinned = mintToken(t, dev.principal, { role: "viewer", project: b.slug });
    expect((await expectStatus(await t.request("GET", "/api/v1/projects", { token: pinned }), 200)).map((p: { slug: string }) => p.slug)).toEqual([b.slug]);
    const all = await expectStatus(await t.request("GET", "/api/v1/projects", { token: owner.session }), 200);
    expect(all.length).toBeGreaterThanOrEqual(3);
    const nobody = await makePerson(t, []);
    expect(await expectStatus(await t.request("GET", "/api/v1/projects", { token: nobody.session }), 200)).toEqual([]);
    await expectStatus(await t.request("GET", "/api/v1/projects"), 401);
  });

  test("GET /projects/{slug}: 200 member; 403 non-member; 404 unknown; 401 anonymous", async () => {
    const a = makeProject(t);
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const other = await makePerson(t, []);
    expect((await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`, { token: v.session }), 200)).slug).toBe(a.slug);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`, { token: other.session }), 403);
    await expectStatus(await t.request("GET", "/api/v1/projects/no-such-project", { token: v.session }), 404);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`), 401);
  });

  test("PATCH /projects/{slug}: rename, environments (removed ones lose their policies), archive, unarchive; 409 while archived", async () => {
    const a = makeProject(t);
    const roleId = makeRole(t, a.slug, "ops", ["project.read"]);
    t.core.db.insert(environmentPolicies).values({ projectId: a.id, environment: "staging", roleId, allowed: "[]", updatedAt: 1 }).run();
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    const body = await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { token: m.session, body: { name: "Renamed", environments: ["production", "preview"] } }), 200);
    expect(body).toMatchObject({ name: "Renamed", environments: ["production", "preview"] });
    expect(t.core.sqlite.query("SELECT count(*) AS n FROM environment_policies WHERE project_id = ?").get(a.id)).toEqual({ n: 0 });
    expect((await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { token: m.session, body: { archived: true } }), 200)).archived).toBe(true);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { token: m.session, body: { name: "No" } }), 409);
    expect((await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { token: m.session, body: { archived: false, name: "Yes" } }), 200)).name).toBe("Yes");
    const audits = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'project.settings' AND project = ? AND outcome = 'allowed'").get(a.slug) as { n: number };
    expect(audits.n).toBe(3);
  });

  test("PATCH /projects/{slug}: 403 for a developer; 404 unknown; 422 bad environment; 401 anonymous", async () => {
    const a = makeProject(t);
    const d = await makePerson(t, [{ role: "developer", project: a.slug }]);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { token: d.session, body: { name: "x" } }), 403);
    await expectStatus(await t.request("PATCH", "/api/v1/projects/none-such", { token: owner.session, body: { name: "x" } }), 404);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { token: owner.session, body: { environments: [] } }), 422);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${a.slug}`, { body: { name: "x" } }), 401);
  });
});
