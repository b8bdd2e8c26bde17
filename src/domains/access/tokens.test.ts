import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeMachine, mintToken, type Person } from "../../../test/fixtures";
import { fixedRole } from "./roles";
import { flushTouches } from "./authn";

let t: TestApp;
let owner: Person;
beforeAll(async () => {
  t = await createTestApp({ env: { OPS_TOKEN_TTL_DAYS: "30" } });
  owner = await makeOwner(t);
});
afterAll(() => t.close());
const role = (slug: string) => fixedRole(t.core, slug).id;
const NO_ID = "0190a0a0-0000-7000-8000-000000000000";

describe("POST /api/v1/tokens", () => {
  test("201: the secret once (opst_), only its digest stored; scope snapshot; pin; default expiry from OPS_TOKEN_TTL_DAYS; 0 = never; audited", async () => {
    const a = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const res = await expectStatus(await t.request("POST", "/api/v1/tokens", { token: dev.session, body: { name: "deploy bot", role_id: role("viewer"), project: a.slug, kind: "cli" } }), 201);
    expect(res.secret).toStartWith("opst_");
    expect(res.token).toMatchObject({ name: "deploy bot", kind: "cli", operator: dev.email, operator_id: dev.operator.id, project: a.slug, role_id: role("viewer"), role_name: "Viewer", revoked: false, last_used: null });
    expect(res.token.scopes).toContain("resources.read");
    expect(Date.parse(res.token.expires_at) - t.clock.now()).toBe(30 * 86_400_000);
    const stored = t.core.sqlite.query("SELECT digest FROM tokens WHERE id = ?").get(res.token.id) as { digest: string };
    expect(stored.digest).not.toContain(res.secret);
    expect(JSON.stringify(await expectStatus(await t.request("GET", "/api/v1/tokens", { token: dev.session }), 200))).not.toContain(res.secret);
    const never = await expectStatus(await t.request("POST", "/api/v1/tokens", { token: dev.session, body: { name: "forever", role_id: role("viewer"), expires_in_days: 0 } }), 201);
    expect(never.token.expires_at).toBeNull();
    expect(never.token.kind).toBe("api");
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: res.secret }), 200);
    expect(me.token_id).toBe(res.token.id);
    const audit = t.core.sqlite.query("SELECT outcome, project FROM audit_log WHERE action = 'token.mint' AND target = ?").get(`token:${res.token.id}`);
    expect(audit).toEqual({ outcome: "allowed", project: a.slug });
  });

  test("422 more than the caller holds (audited as denied); 403 machine (audited); 404 unknown role or project; 401", async () => {
    const a = makeProject(t);
    const viewer = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const over = await expectStatus(await t.request("POST", "/api/v1/tokens", { token: viewer.session, body: { name: "x", role_id: role("developer"), project: a.slug } }), 422);
    expect(over.error).toBe("refused");
    const denied = t.core.sqlite.query("SELECT outcome FROM audit_log WHERE action = 'token.mint' AND operator_id = ?").get(viewer.operator.id);
    expect(denied).toEqual({ outcome: "denied" });
    const m = await makeMachine(t, [{ role: "developer", project: a.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: m.token, body: { name: "x", role_id: role("viewer"), project: a.slug } }), 403);
    expect(t.core.sqlite.query("SELECT outcome FROM audit_log WHERE action = 'token.mint' AND operator_id = ?").get(m.operator.id)).toEqual({ outcome: "denied" });
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: viewer.session, body: { name: "x", role_id: NO_ID } }), 404);
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: viewer.session, body: { name: "x", role_id: role("viewer"), project: "no-such" } }), 404);
    await expectStatus(await t.request("POST", "/api/v1/tokens", { body: { name: "x", role_id: role("viewer") } }), 401);
  });

  test("a pinned token can mint only tokens pinned to its project (422 otherwise)", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }, { role: "developer", project: b.slug }]);
    const pinned = mintToken(t, dev.principal, { role: "developer", project: a.slug });
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: pinned, body: { name: "escape", role_id: role("viewer") } }), 422);
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: pinned, body: { name: "sideways", role_id: role("viewer"), project: b.slug } }), 422);
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: pinned, body: { name: "ok", role_id: role("viewer"), project: a.slug } }), 201);
  });
});

describe("GET /api/v1/tokens and /projects/{slug}/tokens", () => {
  test("own tokens for a person; all for operators.manage; last_used batched without a write per request", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const q = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const mine = mintToken(t, p.principal, { role: "viewer", project: a.slug, name: "p's" });
    mintToken(t, q.principal, { role: "viewer", name: "q's" });
    t.clock.advance(5000);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: mine }), 200);
    const before = t.core.sqlite.query("SELECT last_used_at FROM tokens WHERE name = ?").get("p's") as { last_used_at: number | null };
    expect(before.last_used_at).toBeNull();
    const list = await expectStatus(await t.request("GET", "/api/v1/tokens", { token: p.session }), 200);
    expect(list.map((x: { name: string }) => x.name)).toEqual(["p's"]);
    expect(list[0].last_used).toBe(new Date(t.clock.now()).toISOString());
    flushTouches(t.core);
    expect((t.core.sqlite.query("SELECT last_used_at FROM tokens WHERE name = ?").get("p's") as { last_used_at: number }).last_used_at).toBe(t.clock.now());
    const all = await expectStatus(await t.request("GET", "/api/v1/tokens", { token: owner.session }), 200);
    expect(all.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(["p's", "q's"]));
    await expectStatus(await t.request("GET", "/api/v1/tokens"), 401);
  });

  test("project tokens: 200 the pinned ones for project.members; 403 developer; 401; 404", async () => {
    const a = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    mintToken(t, dev.principal, { role: "viewer", project: a.slug, name: "pinned" });
    mintToken(t, dev.principal, { role: "viewer", name: "free" });
    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/tokens`, { token: owner.session }), 200);
    expect(list.map((x: { name: string }) => x.name)).toEqual(["pinned"]);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/tokens`, { token: dev.session }), 403);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/tokens`), 401);
    await expectStatus(await t.request("GET", "/api/v1/projects/none-such/tokens", { token: owner.session }), 404);
  });
});

describe("DELETE /api/v1/tokens/{id}", () => {
  test("204 own token: the next request with it is 401 at once; operators.manage revokes anyone's; 404 someone else's; 401", async () => {
    const p = await makePerson(t, [{ role: "viewer", project: null }]);
    const q = await makePerson(t, [{ role: "viewer", project: null }]);
    const minted = await expectStatus(await t.request("POST", "/api/v1/tokens", { token: p.session, body: { name: "t", role_id: role("viewer") } }), 201);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: minted.secret }), 200);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${minted.token.id}`, { token: q.session }), 404);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${minted.token.id}`), 401);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${minted.token.id}`, { token: p.session }), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: minted.secret }), 401);
    const listed = (await expectStatus(await t.request("GET", "/api/v1/tokens", { token: p.session }), 200)).find((x: { id: string }) => x.id === minted.token.id);
    expect(listed.revoked).toBe(true);
    const other = await expectStatus(await t.request("POST", "/api/v1/tokens", { token: q.session, body: { name: "t2", role_id: role("viewer") } }), 201);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${other.token.id}`, { token: owner.session }), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: other.secret }), 401);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${NO_ID}`, { token: owner.session }), 404);
    expect(t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'token.revoke'").get()).toEqual({ n: 2 });
  });
});
