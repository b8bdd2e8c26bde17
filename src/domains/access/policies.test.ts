import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeRole, type Person } from "../../../test/fixtures";
import { fixedRole } from "./roles";
import { ESTATE_KEYS, PERMISSION_KEYS } from "../../core/authz/catalog";
import { environmentPolicies } from "./tables";
import { ENVIRONMENT_KEYS } from "./policies";

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

  test("422 naming each permission no environment narrows (translations.write, packages.publish): a policy cannot claim to remove what it would not enforce", async () => {
    const a = makeProject(t);
    const id = makeRole(t, a.slug, "releaser", ["project.read", "deployments.read", "deployments.deploy", "translations.write", "packages.publish"]);
    const member = await makePerson(t, [{ role: id, project: a.slug }]);
    const url = `/api/v1/projects/${a.slug}/environment-policies/production/${id}`;
    const refused = await expectStatus(await t.request("PUT", url, { token: owner.session, body: { allowed: ["project.read", "deployments.read"] } }), 422);
    expect(refused.error).toBe("refused");
    expect(refused.details.permissions).toEqual(["translations.write", "packages.publish"]);
    expect(refused.message).toContain("translations.write");
    expect(refused.message).toContain("packages.publish");
    expect(Object.keys(refused).sort()).toEqual(["details", "error", "message"]);
    expect(await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/environment-policies`, { token: owner.session }), 200)).toEqual([]);
    // Keeping them, the policy narrows what an environment can narrow, and says only that.
    const pol = await expectStatus(await t.request("PUT", url, { token: owner.session, body: { allowed: ["project.read", "deployments.read", "translations.write", "packages.publish"] } }), 200);
    expect(pol.removed).toEqual(["deployments.deploy"]);
    await expectStatus(await t.request("POST", `/api/v1/projects/${a.slug}/resources/service/web/deploy?environment=production`, { token: member.session, body: {} }), 403);
    // A role that gains a project-wide key keeps it under its policies too: nothing claims to remove it.
    const permissions = ["project.read", "sources.read", "deployments.read", "deployments.deploy", "translations.write", "packages.publish"];
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/roles/${id}`, { token: owner.session, body: { slug: "releaser", display_name: "releaser", permissions } }), 200);
    const [after] = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/environment-policies`, { token: owner.session }), 200);
    expect(after).toMatchObject({ allowed: ["project.read", "sources.read", "deployments.read", "translations.write", "packages.publish"], removed: ["deployments.deploy"] });
  });

  test("the keys a policy may remove are exactly those some route evaluates in an environment (besides secrets.reveal, obs.read and obs.ingest, narrowed per environment inside their services)", async () => {
    const a = makeProject(t);
    const keys = PERMISSION_KEYS.filter((k) => !ESTATE_KEYS.has(k));
    const id = makeRole(t, a.slug, "everything", [...keys]);
    const member = await makePerson(t, [{ role: id, project: a.slug }]);
    // Stored directly: the policy removes every key in production, narrowable or not.
    t.core.db.insert(environmentPolicies).values({ projectId: a.id, environment: "production", roleId: id, allowed: "[]", updatedAt: t.clock.now() }).run();
    const narrowed = new Set<string>();
    for (const r of t.app.routes) {
      const key = (r.hooks as { detail?: Record<string, unknown> }).detail?.["x-permission"] as string | undefined;
      if (!key || !keys.includes(key as never) || narrowed.has(key)) continue;
      const path = r.path.replace(":slug", a.slug).replace(":environment", "production").replace(/:[a-z_]+/g, "x").replace("*", "x");
      const before = t.core.sqlite.query("SELECT max(id) AS n FROM audit_log").get() as { n: number };
      const res = await t.app.handle(new Request(`${t.url}${path}?project=${a.slug}&environment=production`, { method: r.method, headers: { authorization: `Bearer ${member.session}`, "content-type": "application/json" }, body: ["GET", "HEAD"].includes(r.method) ? undefined : "{}" }));
      await res.arrayBuffer();
      if (res.status !== 403) continue;
      const rows = t.core.sqlite.query("SELECT reason FROM audit_log WHERE id > ? AND operator_id = ?").all(before.n ?? 0, member.operator.id) as Array<{ reason: string }>;
      if (rows.some((row) => row.reason === `environment policy removes ${key}`)) narrowed.add(key);
    }
    const inServices = ["secrets.reveal", "obs.read", "obs.ingest"];
    expect([...narrowed, ...inServices].sort()).toEqual([...ENVIRONMENT_KEYS].sort());
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
