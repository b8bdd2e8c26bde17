/**
 * The console's idea of what a person may do (access.ts, over GET /me) against the server's: for
 * people and tokens shaped by every rule that narrows access (a custom role, an environment
 * policy, an estate-wide role, a token's scopes, a pin to another project), every
 * permission in every environment agrees with the server's evaluation, a route the console would
 * offer answers 2xx and one it would not answers 403, and the hover text names the audit log's
 * deny reason.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../test/harness";
import { makePerson, makeProject, makeRole, mintToken, principalOf } from "../../test/fixtures";
import { PERMISSION_KEYS } from "../core/authz/catalog";
import { evaluate } from "../core/authz/effective";
import { accessOf } from "./access";
import type { Me } from "./api";

setDefaultTimeout(60_000);

let t: TestApp;
let slug: string;
let other: string;
let roleId: string;

beforeAll(async () => {
  t = await createTestApp();
  slug = makeProject(t, "bakery").slug;
  other = makeProject(t, "florist").slug;
  roleId = makeRole(t, slug, "shipper", ["project.read", "resources.read", "resources.write", "deployments.read", "deployments.deploy", "audit.read"]);
  const owner = await makePerson(t, [{ role: "owner", project: null }]);
  await expectStatus(await t.request("PUT", `/api/v1/projects/${slug}/environment-policies/staging/${roleId}`, { token: owner.session, body: { allowed: ["project.read", "audit.read", "resources.read", "deployments.read"] } }), 200);
});
afterAll(() => t.close());

async function meOf(secret: string): Promise<Me> {
  return expectStatus(await t.request("GET", "/api/v1/me", { token: secret }), 200);
}

/** Every key in every environment (and none), in each project: the console and the server agree. */
async function agrees(secret: string): Promise<void> {
  const me = await meOf(secret);
  const principal = await principalOf(t, secret);
  const grants = t.core.access.grants(principal);
  for (const project of [slug, other]) {
    const access = accessOf(me, project);
    const id = t.core.access.findProject(project)!.id;
    for (const key of PERMISSION_KEYS) {
      for (const env of [null, "production", "staging"]) {
        const scope = key === "operators.manage" || key === "estate.manage" ? ({ kind: "estate" } as const) : ({ kind: "project", projectId: id, environment: env } as const);
        expect([project, key, env, access.can(key, env)]).toEqual([project, key, env, evaluate(principal, grants, scope).permissions.has(key)]);
      }
    }
  }
}

describe("the console's access agrees with the server's", () => {
  test("a custom role narrowed by an environment policy; an estate-wide viewer; a maintainer", async () => {
    const shipper = await makePerson(t, [{ role: roleId, project: slug }, { role: "viewer", project: null }]);
    await agrees(shipper.session);
    const maintainer = await makePerson(t, [{ role: "maintainer", project: slug }]);
    await agrees(maintainer.session);
    const owner = await makePerson(t, [{ role: "owner", project: null }]);
    await agrees(owner.session);
  });

  test("a minted token's scopes, and its pin to another project", async () => {
    const dev = await makePerson(t, [{ role: "developer", project: slug }, { role: "developer", project: other }]);
    await agrees(mintToken(t, dev.principal, { role: "viewer", project: null }));
    await agrees(mintToken(t, dev.principal, { role: "developer", project: other }));
  });

  test("what the console offers the API allows, what it withholds the API refuses, with the audit log's reason", async () => {
    const shipper = await makePerson(t, [{ role: roleId, project: slug }]);
    const access = accessOf(await meOf(shipper.session), slug);
    const create = (env: string) => t.request("POST", `/api/v1/projects/${slug}/resources/job?environment=${env}`, { token: shipper.session, body: { name: `j-${env}`, spec: { command: "true" } } });

    expect(access.can("resources.write", "production")).toBe(true);
    await expectStatus(await create("production"), 201);

    expect(access.can("resources.write", "staging")).toBe(false);
    await expectStatus(await create("staging"), 403);
    const denied = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/audit?outcome=denied&limit=1`, { token: shipper.session }), 200);
    expect(denied[0].reason).toBe("environment policy removes resources.write");
    expect(access.why("resources.write", "staging")).toBe("Needs “Change resources” (resources.write): environment policy removes resources.write.");

    expect(access.can("project.members", "production")).toBe(false);
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/members/candidates`, { token: shipper.session }), 403);
    expect(access.why("project.members", "production")).toBe("Needs “Manage members and roles” (project.members): role lacks project.members in bakery (production).");
    expect(access.why("estate.manage", null)).toBe("Needs “Manage the estate” (estate.manage): no role estate-wide.");
    expect(access.why("resources.read", "production")).toBe("");
  });
});
