/**
 * GET /me from prepared JSON text (docs/decisions/0641): the same bytes and headers Elysia would
 * send, a body the response schema accepts, and text that never outlives the body it was made
 * from (a role change, a token revoked, a membership removed by another connection).
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { Database } from "bun:sqlite";
import path from "node:path";
import { Value } from "@sinclair/typebox/value";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, makeRole, mintToken } from "../../../test/fixtures";
import { MeResponse } from "./model-identity";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe("GET /me from prepared text", () => {
  test("JSON with Elysia's content type, the security headers and a request id; a body the schema accepts", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const tok = mintToken(t, p.principal, { role: "viewer", project: a.slug });
    for (let i = 0; i < 2; i++) {
      const res = await t.request("GET", "/api/v1/me", { token: tok });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json;charset=utf-8");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(res.headers.get("x-request-id")).toBeTruthy();
      const body = await res.json();
      expect(Value.Check(MeResponse, body)).toBe(true);
      expect(body).toMatchObject({ operator_id: p.operator.id, via: "token", token_project: a.slug });
    }
  });

  test("a role change, a membership removed elsewhere and a revoked token reach the next answer", async () => {
    const a = makeProject(t);
    const owner = await makePerson(t, [{ role: "owner", project: a.slug }]);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const first = await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
    expect(first.memberships.map((m: { role_slug: string }) => m.role_slug)).toEqual(["viewer"]);
    const role = makeRole(t, a.slug, "readers", ["project.read"]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/members/${p.operator.id}`, { token: owner.session, body: { operator_id: p.operator.id, role_id: role } }), 204);
    const second = await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
    expect(second.memberships.map((m: { role_slug: string }) => m.role_slug)).toEqual(["readers"]);

    const other = new Database(path.join(t.dataDir, "ops.db"));
    try {
      other.exec("PRAGMA busy_timeout = 5000");
      other.query("DELETE FROM memberships WHERE operator_id = ?").run(p.operator.id);
    } finally {
      other.close();
    }
    expect((await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200)).memberships).toEqual([]);

    const tok = mintToken(t, owner.principal, { role: "viewer", project: a.slug });
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 200);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${me.token_id}`, { token: owner.session }), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 401);
  });
});
