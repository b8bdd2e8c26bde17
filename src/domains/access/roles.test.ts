import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeRole, type Person } from "../../../test/fixtures";
import { fixedRole } from "./roles";

let t: TestApp;
let owner: Person;
beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
});
afterAll(() => t.close());
const NO_ID = "0190a0a0-0000-7000-8000-000000000000";
const body = (slug: string, permissions: string[], extra: Record<string, unknown> = {}) => ({ slug, display_name: `Role ${slug}`, permissions, ...extra });

describe("GET /projects/{slug}/roles", () => {
  test("200: the four fixed roles then the project's own, with member counts", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    makeRole(t, a.slug, "deployer", ["project.read", "deployments.deploy"]);
    makeRole(t, b.slug, "elsewhere", ["project.read"]);
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/roles`, { token: v.session }), 200);
    expect(list.map((r: { slug: string }) => r.slug)).toEqual(["owner", "maintainer", "developer", "viewer", "deployer"]);
    expect(list[0]).toMatchObject({ fixed: true, project: null });
    expect(list[3].members).toBeGreaterThanOrEqual(1);
    expect(list[4]).toMatchObject({ fixed: false, project: a.slug, members: 0, permissions: ["project.read", "deployments.deploy"] });
  });
  test("401 anonymous; 403 non-member", async () => {
    const a = makeProject(t);
    const x = await makePerson(t, []);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/roles`), 401);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/roles`, { token: x.session }), 403);
  });
});

describe("POST /projects/{slug}/roles", () => {
  test("201: the path decides the project (body project ignored); permissions in catalog order; audited", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    const role = await expectStatus(await t.request("POST", `/api/v1/projects/${a.slug}/roles`, { token: m.session, body: body("releaser", ["deployments.deploy", "project.read", "project.read"], { project: b.slug, description: "Ships" }) }), 201);
    expect(role).toMatchObject({ slug: "releaser", display_name: "Role releaser", description: "Ships", fixed: false, members: 0, project: a.slug, permissions: ["project.read", "deployments.deploy"] });
    const audit = t.core.sqlite.query("SELECT outcome, project FROM audit_log WHERE target = ?").get(`role:${role.id}`);
    expect(audit).toEqual({ outcome: "allowed", project: a.slug });
  });
  test("409 slug taken (own or fixed); 422 unknown permission, an Estate key; 404 unknown project", async () => {
    const a = makeProject(t);
    makeRole(t, a.slug, "taken", ["project.read"]);
    const url = `/api/v1/projects/${a.slug}/roles`;
    await expectStatus(await t.request("POST", url, { token: owner.session, body: body("taken", ["project.read"]) }), 409);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: body("viewer", ["project.read"]) }), 409);
    const unknown = await expectStatus(await t.request("POST", url, { token: owner.session, body: body("x1", ["project.read", "cats.feed"]) }), 422);
    expect(unknown.error).toBe("refused");
    expect(unknown.details.permissions).toEqual(["cats.feed"]);
    await expectStatus(await t.request("POST", url, { token: owner.session, body: body("x2", ["estate.manage"]) }), 422);
    await expectStatus(await t.request("POST", "/api/v1/projects/no-such/roles", { token: owner.session, body: body("x3", []) }), 404);
  });
  test("403 for a developer; 403 putting in what the caller lacks; 401 anonymous", async () => {
    const a = makeProject(t);
    const people = makeRole(t, a.slug, "people", ["project.read", "project.members"]);
    const lead = await makePerson(t, [{ role: people, project: a.slug }]);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const url = `/api/v1/projects/${a.slug}/roles`;
    await expectStatus(await t.request("POST", url, { token: dev.session, body: body("y", ["project.read"]) }), 403);
    await expectStatus(await t.request("POST", url, { token: lead.session, body: body("y", ["secrets.reveal"]) }), 403);
    await expectStatus(await t.request("POST", url, { token: lead.session, body: body("y", ["project.read"]) }), 201);
    await expectStatus(await t.request("POST", url, { body: body("z", []) }), 401);
  });
});

describe("PUT /projects/{slug}/roles/{id}", () => {
  test("200 changes names and permissions; policies are trimmed to what the role keeps", async () => {
    const a = makeProject(t);
    const id = makeRole(t, a.slug, "ops", ["project.read", "deployments.read", "deployments.deploy"]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/environment-policies/production/${id}`, { token: owner.session, body: { allowed: ["project.read", "deployments.read"] } }), 200);
    const r = await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/roles/${id}`, { token: owner.session, body: body("operations", ["project.read", "deployments.deploy"]) }), 200);
    expect(r).toMatchObject({ id, slug: "operations", permissions: ["project.read", "deployments.deploy"] });
    const [pol] = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/environment-policies`, { token: owner.session }), 200);
    expect(pol).toMatchObject({ allowed: ["project.read"], removed: ["deployments.deploy"] });
  });
  test("409 fixed role or slug taken; 404 unknown or another project's; 422 unknown permission; 403; 401", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const id = makeRole(t, a.slug, "one", ["project.read"]);
    makeRole(t, a.slug, "two", ["project.read"]);
    const foreign = makeRole(t, b.slug, "three", ["project.read"]);
    const base = `/api/v1/projects/${a.slug}/roles`;
    await expectStatus(await t.request("PUT", `${base}/${fixedRole(t.core, "viewer").id}`, { token: owner.session, body: body("viewer", ["project.read"]) }), 409);
    await expectStatus(await t.request("PUT", `${base}/${id}`, { token: owner.session, body: body("two", ["project.read"]) }), 409);
    await expectStatus(await t.request("PUT", `${base}/${NO_ID}`, { token: owner.session, body: body("x", []) }), 404);
    await expectStatus(await t.request("PUT", `${base}/${foreign}`, { token: owner.session, body: body("x", []) }), 404);
    await expectStatus(await t.request("PUT", `${base}/${id}`, { token: owner.session, body: body("one", ["nope.nope"]) }), 422);
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("PUT", `${base}/${id}`, { token: v.session, body: body("one", []) }), 403);
    await expectStatus(await t.request("PUT", `${base}/${id}`, { body: body("one", []) }), 401);
  });
});

describe("DELETE /projects/{slug}/roles/{id}", () => {
  test("204; 409 while it has members or for a fixed role; 404 unknown; 403; 401", async () => {
    const a = makeProject(t);
    const busy = makeRole(t, a.slug, "busy", ["project.read"]);
    const idle = makeRole(t, a.slug, "idle", ["project.read"]);
    await makePerson(t, [{ role: busy, project: a.slug }]);
    const base = `/api/v1/projects/${a.slug}/roles`;
    const conflict = await expectStatus(await t.request("DELETE", `${base}/${busy}`, { token: owner.session }), 409);
    expect(conflict.details.members).toBe(1);
    await expectStatus(await t.request("DELETE", `${base}/${fixedRole(t.core, "developer").id}`, { token: owner.session }), 409);
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("DELETE", `${base}/${idle}`, { token: v.session }), 403);
    await expectStatus(await t.request("DELETE", `${base}/${idle}`), 401);
    await expectStatus(await t.request("DELETE", `${base}/${idle}`, { token: owner.session }), 204);
    await expectStatus(await t.request("DELETE", `${base}/${idle}`, { token: owner.session }), 404);
  });
});
