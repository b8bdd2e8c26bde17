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

describe("environment policies", () => {
  test("PUT 200 with removed computed; the policy narrows the member in that environment only; GET lists it; DELETE 204 restores", async () => {
    const a = makeProject(t);
    const id = makeRole(t, a.slug, "shipper", ["project.read", "deployments.read", "deployments.deploy"]);
    const member = await makePerson(t, [{ role: id, project: a.slug }]);
    const url = `/api/v1/projects/${a.slug}/environment-policies/production/${id}`;
    const pol = await expectStatus(await t.request("PUT", url, { token: owner.session, body: { allowed: ["deployments.read", "project.read"] } }), 200);
    expect(pol).toMatchObject({ environment: "production", role_id: id, role_name: "shipper", allowed: ["project.read", "deployments.read"], removed: ["deployments.deploy"] });
    expect(pol.updated_at).toBeString();
    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/environment-policies`, { token: member.session }), 200);
    expect(list).toEqual([pol]);
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: member.session }), 200);
    expect(me.policies).toEqual([{ project: a.slug, environment: "production", role_id: id, allowed: ["project.read", "deployments.read"] }]);
    const { evaluate } = await import("../../core/authz/effective");
    const g = t.core.access.grants(member.principal);
    expect(evaluate(member.principal, g, { kind: "project", projectId: a.id, environment: "production" }).permissions.has("deployments.deploy")).toBe(false);
    expect(evaluate(member.principal, g, { kind: "project", projectId: a.id, environment: "staging" }).permissions.has("deployments.deploy")).toBe(true);
    const audit = t.core.sqlite.query("SELECT environment FROM audit_log WHERE target = ? AND outcome = 'allowed'").get(`policy:production/${id}`);
    expect(audit).toEqual({ environment: "production" });
    await expectStatus(await t.request("DELETE", url, { token: owner.session }), 204);
    expect(await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/environment-policies`, { token: owner.session }), 200)).toEqual([]);
    expect(evaluate(member.principal, t.core.access.grants(member.principal), { kind: "project", projectId: a.id, environment: "production" }).permissions.has("deployments.deploy")).toBe(true);
  });

  test("PUT 409 fixed role; 404 unknown environment, unknown role, another project's role; 422 a key the role lacks or no such key", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const id = makeRole(t, a.slug, "r", ["project.read"]);
    const foreign = makeRole(t, b.slug, "r", ["project.read"]);
    const base = `/api/v1/projects/${a.slug}/environment-policies`;
    await expectStatus(await t.request("PUT", `${base}/production/${fixedRole(t.core, "developer").id}`, { token: owner.session, body: { allowed: [] } }), 409);
    await expectStatus(await t.request("PUT", `${base}/moon/${id}`, { token: owner.session, body: { allowed: [] } }), 404);
    await expectStatus(await t.request("PUT", `${base}/production/${NO_ID}`, { token: owner.session, body: { allowed: [] } }), 404);
    await expectStatus(await t.request("PUT", `${base}/production/${foreign}`, { token: owner.session, body: { allowed: [] } }), 404);
    const lacks = await expectStatus(await t.request("PUT", `${base}/production/${id}`, { token: owner.session, body: { allowed: ["project.read", "secrets.reveal"] } }), 422);
    expect(lacks.details.permissions).toEqual(["secrets.reveal"]);
    await expectStatus(await t.request("PUT", `${base}/production/${id}`, { token: owner.session, body: { allowed: ["x.y"] } }), 422);
  });

  test("401 anonymous and 403 without project.members (a viewer), on every policy route; DELETE 404 when there is no policy", async () => {
    const a = makeProject(t);
    const id = makeRole(t, a.slug, "r", ["project.read"]);
    const v = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const outsider = await makePerson(t, []);
    const base = `/api/v1/projects/${a.slug}/environment-policies`;
    await expectStatus(await t.request("GET", base), 401);
    await expectStatus(await t.request("GET", base, { token: outsider.session }), 403);
    await expectStatus(await t.request("PUT", `${base}/production/${id}`, { body: { allowed: [] } }), 401);
    await expectStatus(await t.request("PUT", `${base}/production/${id}`, { token: v.session, body: { allowed: [] } }), 403);
    await expectStatus(await t.request("DELETE", `${base}/production/${id}`), 401);
    await expectStatus(await t.request("DELETE", `${base}/production/${id}`, { token: v.session }), 403);
    await expectStatus(await t.request("DELETE", `${base}/production/${id}`, { token: owner.session }), 404);
    await expectStatus(await t.request("DELETE", `${base}/moon/${id}`, { token: owner.session }), 404);
  });
});
