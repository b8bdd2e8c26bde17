import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { OPS_PUBLIC_URL: "https://ops.example.test" } });
});
afterAll(() => t.close());

const login = (body: unknown, headers: Record<string, string> = {}) => t.request("POST", "/api/v1/auth/login", { body, headers });

describe("POST /api/v1/auth/login", () => {
  test("200: a console sign-in returns the bearer, the session and an HttpOnly SameSite=Strict Secure cookie", async () => {
    const p = await makePerson(t, [{ role: "viewer", project: null }]);
    const res = await login({ email: p.email.toUpperCase(), password: p.password });
    const cookie = res.headers.get("set-cookie") ?? "";
    const body = await expectStatus(res, 200);
    expect(body.token).toStartWith("opss_");
    expect(body.session.kind).toBe("console");
    expect(body.session.current).toBe(true);
    // Served over HTTPS: the __Host- name no other host can set (decision 0520).
    expect(cookie).toStartWith(`__Host-ops_session=${body.token}; Path=/;`);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Secure");
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: body.token }), 200);
    expect(me.operator_id).toBe(p.operator.id);
    const rows = t.core.sqlite.query("SELECT outcome FROM audit_log WHERE action = 'auth.login' AND operator_id = ?").all(p.operator.id) as Array<{ outcome: string }>;
    expect(rows.map((r) => r.outcome)).toEqual(["allowed"]);
  });

  test("200: a cli sign-in gets a cli session and no cookie; the cookie alone authenticates a console", async () => {
    const p = await makePerson(t, []);
    const res = await login({ email: p.email, password: p.password, client: "cli" });
    expect(res.headers.get("set-cookie")).toBeNull();
    const body = await expectStatus(res, 200);
    expect(body.session.kind).toBe("cli");
    const c = await expectStatus(await login({ email: p.email, password: p.password }), 200);
    const viaCookie = await t.request("GET", "/api/v1/me", { headers: { cookie: `__Host-ops_session=${c.token}` } });
    expect((await expectStatus(viaCookie, 200)).via).toBe("console");
  });

  test("401 invalid_credentials: unknown email and wrong password answer the same, both audited", async () => {
    const p = await makePerson(t, []);
    const a = await expectStatus(await login({ email: "nobody-here@ops.test", password: "whatever-password" }), 401);
    const b = await expectStatus(await login({ email: p.email, password: "wrong-password-123" }), 401);
    expect(a).toEqual(b);
    expect(a.error).toBe("invalid_credentials");
    const rows = t.core.sqlite.query("SELECT actor, outcome, reason FROM audit_log WHERE action = 'auth.login' AND outcome = 'denied' ORDER BY id DESC LIMIT 2").all() as Array<{ actor: string; reason: string }>;
    expect(rows.map((r) => r.reason).sort()).toEqual(["unknown account", "wrong password"]);
  });

  test("401: unknown email and wrong password take a similar time (argon2 runs for both)", async () => {
    const p = await makePerson(t, []);
    const time = async (email: string) => {
      const t0 = performance.now();
      await (await login({ email, password: "not-the-password-x" })).text();
      return performance.now() - t0;
    };
    await time("warm-up@ops.test");
    const unknown: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < 3; i++) {
      unknown.push(await time(`ghost${i}@ops.test`));
      wrong.push(await time(p.email));
    }
    const med = (xs: number[]) => xs.sort((x, y) => x - y)[1];
    // Both pay for one argon2id verify; without it the unknown path would be ~100x faster.
    expect(med(unknown)).toBeGreaterThan(med(wrong) / 3);
  });

  test("401 for a suspended person, with the same answer", async () => {
    const p = await makePerson(t, []);
    t.core.sqlite.query("UPDATE operators SET suspended_at = 1 WHERE id = ?").run(p.operator.id);
    expect((await expectStatus(await login({ email: p.email, password: p.password }), 401)).error).toBe("invalid_credentials");
  });

  test("422 for a body without a password", async () => {
    await expectStatus(await login({ email: "a@b.c" }), 422);
  });
});

describe("POST /api/v1/auth/logout", () => {
  test("204: ends the session and clears the cookie; the bearer then gets 401", async () => {
    const p = await makePerson(t, []);
    const res = await t.request("POST", "/api/v1/auth/logout", { token: p.session });
    expect(res.headers.get("set-cookie")).toContain("Max-Age=0");
    await expectStatus(res, 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 401);
    const row = t.core.sqlite.query("SELECT outcome FROM audit_log WHERE action = 'auth.logout' AND operator_id = ?").get(p.operator.id) as { outcome: string };
    expect(row.outcome).toBe("allowed");
  });

  test("401 without a credential", async () => {
    await expectStatus(await t.request("POST", "/api/v1/auth/logout"), 401);
  });

  test("403 for a cookie request without a matching Origin", async () => {
    const p = await makePerson(t, []);
    await expectStatus(await t.request("POST", "/api/v1/auth/logout", { headers: { cookie: `__Host-ops_session=${p.session}`, origin: "https://evil.example" } }), 403);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
  });
});

describe("POST /api/v1/auth/password", () => {
  test("204: changes the password and ends the other sessions, keeps this one", async () => {
    const p = await makePerson(t, []);
    const other = await expectStatus(await login({ email: p.email, password: p.password, client: "cli" }), 200);
    await expectStatus(await t.request("POST", "/api/v1/auth/password", { token: p.session, body: { current_password: p.password, new_password: "a-brand-new-password" } }), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: other.token }), 401);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
    await expectStatus(await login({ email: p.email, password: p.password }), 401);
    await expectStatus(await login({ email: p.email, password: "a-brand-new-password" }), 200);
  });

  test("422 for a wrong current password or a short new one", async () => {
    const p = await makePerson(t, []);
    const a = await expectStatus(await t.request("POST", "/api/v1/auth/password", { token: p.session, body: { current_password: "nope-nope-nope", new_password: "a-brand-new-password" } }), 422);
    expect(a.details.fields[0].path).toBe("current_password");
    const b = await expectStatus(await t.request("POST", "/api/v1/auth/password", { token: p.session, body: { current_password: p.password, new_password: "short" } }), 422);
    expect(b.details.fields[0].path).toBe("new_password");
  });

  test("401 without a credential; 403 with a minted token (only a session changes the password)", async () => {
    await expectStatus(await t.request("POST", "/api/v1/auth/password", { body: { current_password: "x", new_password: "y" } }), 401);
    const p = await makePerson(t, [{ role: "viewer", project: null }]);
    const { mintToken } = await import("../../../test/fixtures");
    const tok = mintToken(t, p.principal, { role: "viewer" });
    await expectStatus(await t.request("POST", "/api/v1/auth/password", { token: tok, body: { current_password: p.password, new_password: "a-brand-new-password" } }), 403);
  });
});
