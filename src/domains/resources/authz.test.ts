/**
 * The authorization matrix of the resources and secrets routes: every fixed role (and a
 * non-member) against every route, expecting 403 exactly when the role lacks the route's
 * permission (DESIGN.md §3), and never 401 for a signed-in caller. Allowed calls may answer
 * anything else (200, 404, 409 …): the matrix is about the permission gate.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeOwner, type Person } from "../../../test/fixtures";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { FIXED_ROLES } from "../../core/authz/catalog";

let t: TestApp;
let p: ProjectCtx;
const callers: Record<string, Person> = {};

/** [method, path under /api/v1 (with `{p}` for the project), permission, body?] */
const ROUTES: Array<[string, string, string, unknown?]> = [
  ["GET", "/catalog", "authenticated"],
  ["GET", "/projects/{p}/resources", "resources.read"],
  ["GET", "/projects/{p}/resources/job", "resources.read"],
  ["GET", "/projects/{p}/resources/job/nightly", "resources.read"],
  ["POST", "/projects/{p}/resources/job", "resources.write", { name: "made-by-matrix", spec: { command: "true" } }],
  ["PUT", "/projects/{p}/resources/job/nightly", "resources.write", { spec: { command: "true" } }],
  ["DELETE", "/projects/{p}/resources/job/absent", "resources.destroy"],
  ["POST", "/projects/{p}/resources/job/nightly/observe", "resources.read"],
  ["POST", "/projects/{p}/resources/bucket/files/check", "resources.read"],
  ["GET", "/projects/{p}/resources/bucket", "resources.read"],
  ["GET", "/projects/{p}/resources/database/absent/restore-runbook", "databases.manage"],
  ["POST", "/projects/{p}/resources/database/absent/rotate-password", "databases.manage"],
  ["POST", "/projects/{p}/resources/job/absent/run", "jobs.run"],
  ["GET", "/projects/{p}/resources/job/nightly/runs", "resources.read"],
  ["GET", "/projects/{p}/resources/job/nightly/runs/1/log", "resources.read"],
  ["POST", "/projects/{p}/resources/secret-group/env/rotate", "secrets.rotate"],
  ["GET", "/projects/{p}/resources/secret-group/env/variables", "secrets.read"],
  ["PUT", "/projects/{p}/resources/secret-group/env/variables/MATRIX", "secrets.write", { value: "v" }],
  ["DELETE", "/projects/{p}/resources/secret-group/env/variables/ABSENT", "secrets.write"],
  ["GET", "/projects/{p}/resources/secret-group/env/versions", "secrets.read"],
  ["GET", "/projects/{p}/secrets", "secrets.read"],
  ["GET", "/projects/{p}/secrets/web/env", "secrets.reveal"],
  ["PUT", "/projects/{p}/secrets/web/MATRIX", "secrets.write", { value: "v" }],
  ["DELETE", "/projects/{p}/secrets/web/ABSENT", "secrets.write"],
  ["GET", "/admin/secrets", "estate.manage"],
  ["POST", "/admin/secrets/unseal", "estate.manage", { key: "not-a-key" }],
];

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "env", spec: { variables: [] } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "web", spec: { image: "x", env_group: "env" } }), 201);
  await expectStatus(await p.req("POST", "/resources/job", { name: "nightly", spec: { command: "true" } }), 201);
  await expectStatus(await p.req("POST", "/resources/bucket", { name: "files", spec: {} }), 201);
  for (const r of FIXED_ROLES) callers[r.slug] = await makePerson(t, [{ role: r.slug, project: p.slug }]);
  callers["non-member"] = await makePerson(t, []);
  callers["estate-owner"] = await makeOwner(t);
});
afterAll(() => t.close());

function holds(role: string, key: string): boolean {
  if (key === "authenticated") return true;
  if (role === "non-member") return false;
  if (role === "estate-owner") return true;
  const perms = FIXED_ROLES.find((r) => r.slug === role)!.permissions as readonly string[];
  // Project memberships never grant the Estate keys.
  return perms.includes(key) && key !== "estate.manage" && key !== "operators.manage";
}

describe("authorization matrix: resources and secrets routes × roles", () => {
  for (const [method, path, key, body] of ROUTES) {
    test(`${method} ${path} (${key})`, async () => {
      const url = `/api/v1${path.replace("{p}", p.slug)}`;
      const anonymous = await t.request(method, url, { body });
      expect(anonymous.status).toBe(401);
      for (const [role, person] of Object.entries(callers)) {
        const res = await t.request(method, url, { token: person.session, body });
        const allowed = holds(role, key);
        expect({ role, status: res.status === 403 ? 403 : res.status === 401 ? 401 : "not denied" }).toEqual({ role, status: allowed ? "not denied" : 403 });
      }
    });
  }
});
