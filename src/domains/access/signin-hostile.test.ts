/**
 * Hostile sign-ins and password choices: a page on another site signing the victim's browser in
 * as the attacker (login CSRF), and passwords an attacker tries first.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson } from "../../../test/fixtures";
import { passwordProblem } from "./password-policy";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { OPS_PUBLIC_URL: "https://ops.example.test" } });
});
afterAll(() => t.close());

const deniedLogins = () => (t.core.sqlite.query("SELECT reason FROM audit_log WHERE action = 'auth.login' AND outcome = 'denied'").all() as Array<{ reason: string }>).map((r) => r.reason);

describe("login CSRF", () => {
  test("a form-encoded sign-in (what a cross-site form auto-submits) is refused and creates no session", async () => {
    const p = await makePerson(t, []);
    const form = new URLSearchParams({ email: p.email, password: p.password }).toString();
    for (const type of ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"]) {
      const body = type.startsWith("multipart") ? `--x\r\nContent-Disposition: form-data; name="email"\r\n\r\n${p.email}\r\n--x\r\nContent-Disposition: form-data; name="password"\r\n\r\n${p.password}\r\n--x--\r\n` : type === "text/plain" ? JSON.stringify({ email: p.email, password: p.password }) : form;
      const res = await t.request("POST", "/api/v1/auth/login", { raw: body, headers: { "content-type": type } });
      const err = await expectStatus(res, 415);
      expect(err.error).toBe("unsupported_media_type");
      expect(res.headers.get("set-cookie")).toBeNull();
    }
    const sessions = t.core.sqlite.query("SELECT count(*) AS n FROM sessions WHERE operator_id = ?").get(p.operator.id) as { n: number };
    expect(sessions.n).toBe(1);
    expect(deniedLogins().some((r) => r.includes("application/x-www-form-urlencoded"))).toBe(true);
  });

  test("a JSON sign-in from another origin is refused; the same origin and clients without Origin sign in", async () => {
    const p = await makePerson(t, []);
    const body = { email: p.email, password: p.password };
    const evil = await t.request("POST", "/api/v1/auth/login", { body, headers: { origin: "https://evil.example" } });
    expect((await expectStatus(evil, 403)).message).toContain("Cross-site");
    expect(evil.headers.get("set-cookie")).toBeNull();
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body, headers: { origin: "null" } }), 403);
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body, headers: { "sec-fetch-site": "cross-site" } }), 403);
    expect(deniedLogins()).toContain("sign-in from another site");
    const own = await t.request("POST", "/api/v1/auth/login", { body, headers: { origin: "https://ops.example.test", "sec-fetch-site": "same-origin" } });
    await expectStatus(own, 200);
    expect(own.headers.get("set-cookie")).toContain("ops_session=");
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { ...body, client: "cli" } }), 200);
  });
});

describe("password choice", () => {
  const change = (session: string, current: string, next: string) => t.request("POST", "/api/v1/auth/password", { token: session, body: { current_password: current, new_password: next } });

  test("the change route refuses repeats, runs, breached passwords and the account's own e-mail", async () => {
    const p = await makePerson(t, [], { email: "margaret.hamilton@ops.test" });
    for (const bad of ["aaaaaaaaaaaa", "abcdefghijklm", "Password1234!", "margaret.hamilton@ops.test", "xMargaret.Hamilton-2026"]) {
      const err = await expectStatus(await change(p.session, p.password, bad), 422);
      expect([bad, err.details.fields[0].path]).toEqual([bad, "new_password"]);
    }
    // Nothing changed: the old password still signs in.
    await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: p.password, client: "cli" } }), 200);
    await expectStatus(await change(p.session, p.password, "velvet-orbit-canyon-lantern"), 204);
  });

  test("creating an operator and an admin's reset apply the same rules", async () => {
    const owner = await makeOwner(t);
    const create = await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: "grace.hopper@ops.test", display_name: "Grace", password: "grace.hopper-1906" } });
    expect((await expectStatus(create, 422)).details.fields[0].path).toBe("password");
    const ok = await expectStatus<{ id: string }>(await t.request("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: "grace.hopper@ops.test", display_name: "Grace", password: "compiler-nanosecond-cobol" } }), 201);
    await expectStatus(await t.request("PATCH", `/api/v1/operators/${ok.id}`, { token: owner.session, body: { password: "iloveyou12345" } }), 422);
  });

  test("the rules on their own", async () => {
    expect(await passwordProblem("short", null)).toContain("at least 12");
    expect(await passwordProblem("zzzzzzzzzzzzzzzz", null)).toContain("repeats");
    expect(await passwordProblem("987654321098", null)).toContain("consecutive");
    expect(await passwordProblem("123456789012", null)).toBeTruthy();
    expect(await passwordProblem("abcabcabcabc", null)).toContain("repeats");
    expect(await passwordProblem("qwertyuiop123", null)).toContain("common");
    expect(await passwordProblem("password1234", null)).toContain("common");
    expect(await passwordProblem("sunshine2024!!", null)).toContain("common");
    expect(await passwordProblem("trustno1trustno1", null)).toContain("common");
    expect(await passwordProblem("correct horse battery staple", null)).toBeNull();
    expect(await passwordProblem("al-the-linguist-42", "al@ops.test")).toBeNull();
    expect(await passwordProblem("ada-lovelace-engine", "ada.lovelace@example.com")).toBeNull();
    expect(await passwordProblem("my-ada.lovelace-engine", "ada.lovelace@example.com")).toContain("e-mail");
  });
});
