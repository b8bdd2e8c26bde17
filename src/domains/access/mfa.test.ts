/**
 * MFA against an independent TOTP implementation: every code comes from `oathtool` (Debian
 * package oathtool; CI installs it — a missing client fails here, it is not skipped).
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import * as OTPAuth from "otpauth";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, mintToken, type Person } from "../../../test/fixtures";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** The TOTP code oathtool computes for `seed` at `ms` (default: the app's clock). */
function oath(seed: string, ms = t.clock.now()): string {
  const r = Bun.spawnSync(["oathtool", "--totp", "-b", seed, "--now", `@${Math.floor(ms / 1000)}`]);
  if (r.exitCode !== 0) throw new Error(`oathtool failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

const STEP = 30_000;
const enrol = (p: Person) => t.request("POST", "/api/v1/me/mfa/enrol", { token: p.session });
const confirm = (p: Person, code: string) => t.request("POST", "/api/v1/me/mfa/confirm", { token: p.session, body: { code } });
const login = (p: Person, code?: string) => t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: p.password, code, client: "cli" } });
const mfaOf = async (p: Person) => (await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200)).mfa;

async function inForce(): Promise<{ p: Person; seed: string }> {
  const p = await makePerson(t, []);
  const { secret } = await expectStatus(await enrol(p), 200);
  await expectStatus(await confirm(p, oath(secret)), 204);
  t.clock.advance(STEP);
  return { p, seed: secret };
}

describe("POST /me/mfa/enrol", () => {
  test("200: a base32 seed and an otpauth URI for it, returned once; the account is not yet protected; a repeat stages a fresh seed", async () => {
    const p = await makePerson(t, []);
    const first = await expectStatus(await enrol(p), 200);
    expect(first.secret).toMatch(/^[A-Z2-7]{32}$/);
    const parsed = OTPAuth.URI.parse(first.uri) as OTPAuth.TOTP;
    expect(parsed.secret.base32).toBe(first.secret);
    expect(parsed.issuer).toBe("ops");
    expect(parsed.label).toBe(p.email);
    expect(first.uri).toContain("algorithm=SHA1&digits=6&period=30");
    expect(await mfaOf(p)).toBe(false);
    await expectStatus(await login(p), 200); // staged: no code asked for
    const second = await expectStatus(await enrol(p), 200);
    expect(second.secret).not.toBe(first.secret);
    // the first seed is gone: its code no longer confirms
    await expectStatus(await confirm(p, oath(first.secret)), 401);
    await expectStatus(await confirm(p, oath(second.secret)), 204);
    expect(await mfaOf(p)).toBe(true);
    const rows = t.core.sqlite.query("SELECT action, outcome FROM audit_log WHERE operator_id = ? AND action LIKE 'mfa.%' ORDER BY id").all(p.operator.id);
    expect(rows).toEqual([
      { action: "mfa.enrol", outcome: "allowed" },
      { action: "mfa.enrol", outcome: "allowed" },
      { action: "mfa.confirm", outcome: "denied" },
      { action: "mfa.confirm", outcome: "allowed" },
    ]);
  });

  test("409 already enrolled; 401 anonymous; 403 with a minted token", async () => {
    const { p } = await inForce();
    expect((await expectStatus(await enrol(p), 409)).error).toBe("conflict");
    await expectStatus(await t.request("POST", "/api/v1/me/mfa/enrol"), 401);
    const q = await makePerson(t, [{ role: "viewer", project: null }]);
    await expectStatus(await t.request("POST", "/api/v1/me/mfa/enrol", { token: mintToken(t, q.principal, { role: "viewer" }) }), 403);
  });
});

describe("POST /me/mfa/confirm", () => {
  test("204 with the current code, and with the previous step's code (±1 step window)", async () => {
    const p = await makePerson(t, []);
    const { secret } = await expectStatus(await enrol(p), 200);
    await expectStatus(await confirm(p, oath(secret, t.clock.now() - STEP)), 204);
  });

  test("401 for a wrong code, a code from two steps ago, and a replayed step, all with the same answer", async () => {
    const p = await makePerson(t, []);
    const { secret } = await expectStatus(await enrol(p), 200);
    const right = oath(secret);
    const wrong = right === "000000" ? "111111" : "000000";
    const a = await expectStatus(await confirm(p, wrong), 401);
    const b = await expectStatus(await confirm(p, oath(secret, t.clock.now() - 2 * STEP)), 401);
    const c = await expectStatus(await confirm(p, oath(secret, t.clock.now() + 2 * STEP)), 401);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(a.error).toBe("invalid_code");
    await expectStatus(await confirm(p, right), 204);
    // A fresh seed confirmed in the same 30 s step: that step was already used once → replay.
    await expectStatus(await t.request("DELETE", "/api/v1/me/mfa", { token: p.session }), 204);
    const again = await expectStatus(await enrol(p), 200);
    const replayed = await expectStatus(await confirm(p, oath(again.secret)), 401);
    expect(replayed).toEqual(a);
    t.clock.advance(STEP);
    await expectStatus(await confirm(p, oath(again.secret)), 204);
  });

  test("409 nothing waiting (none, and in force); 401 anonymous; 503 while the secrets store is sealed", async () => {
    const p = await makePerson(t, []);
    expect((await expectStatus(await confirm(p, "123456"), 409)).error).toBe("conflict");
    const { p: q } = await inForce();
    await expectStatus(await confirm(q, "123456"), 409);
    await expectStatus(await t.request("POST", "/api/v1/me/mfa/confirm", { body: { code: "123456" } }), 401);
    const r = await makePerson(t, []);
    const { secret } = await expectStatus(await enrol(r), 200);
    t.core.secrets.seal("test");
    try {
      expect((await expectStatus(await confirm(r, oath(secret)), 503)).error).toBe("sealed");
      expect((await expectStatus(await enrol(r), 503)).error).toBe("sealed");
      // everything else keeps working
      await expectStatus(await t.request("GET", "/api/v1/me", { token: r.session }), 200);
    } finally {
      t.core.secrets.unseal(readFileSync(path.join(t.dataDir, "keys", "secrets.key"), "utf8"));
    }
    await expectStatus(await confirm(r, oath(secret)), 204);
  });

  test("429 after repeated wrong codes, with Retry-After; the real user is let in again after the window", async () => {
    const p = await makePerson(t, []);
    const { secret } = await expectStatus(await enrol(p), 200);
    for (let i = 0; i < 5; i++) await expectStatus(await confirm(p, "000001"), 401);
    const res = await confirm(p, oath(secret));
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    await expectStatus(res, 429);
    t.clock.advance(5 * 60_000 + 1000);
    await expectStatus(await confirm(p, oath(secret)), 204);
  });
});

describe("DELETE /me/mfa", () => {
  test("204 drops the enrolment (sign-in asks for no code again); 409 when none; 401", async () => {
    const { p } = await inForce();
    await expectStatus(await t.request("DELETE", "/api/v1/me/mfa", { token: p.session }), 204);
    expect(await mfaOf(p)).toBe(false);
    await expectStatus(await login(p), 200);
    await expectStatus(await t.request("DELETE", "/api/v1/me/mfa", { token: p.session }), 409);
    await expectStatus(await t.request("DELETE", "/api/v1/me/mfa"), 401);
    const kept = t.core.sqlite.query("SELECT mfa_secret_id, mfa_staged_id FROM operators WHERE id = ?").get(p.operator.id);
    expect(kept).toEqual({ mfa_secret_id: null, mfa_staged_id: null });
  });
});

describe("removing a second factor in force needs a recent sign-in or the current code", () => {
  const remove = (token: string, code?: string) => t.request("DELETE", "/api/v1/me/mfa", { token, body: code === undefined ? undefined : { code } });
  const deniedRows = (p: Person) => t.core.sqlite.query("SELECT reason FROM audit_log WHERE operator_id = ? AND action = 'mfa.delete' AND outcome = 'denied' ORDER BY id").all(p.operator.id) as Array<{ reason: string }>;

  test("a session signed in more than 10 minutes ago alone gets 401 mfa_required (audited); a wrong or replayed code 401 invalid_code; the current code 204", async () => {
    const { p, seed } = await inForce();
    t.clock.advance(10 * 60_000 + 1000);
    const stale = await expectStatus(await remove(p.session), 401);
    expect(stale.error).toBe("mfa_required");
    expect(await mfaOf(p)).toBe(true);
    expect(deniedRows(p).map((r) => r.reason)).toEqual(["needs a sign-in within the last 10 minutes or the current code"]);
    const right = oath(seed);
    expect((await expectStatus(await remove(p.session, right === "000000" ? "111111" : "000000"), 401)).error).toBe("invalid_code");
    // A code already accepted (here by a sign-in) is not accepted again.
    await expectStatus(await login(p, right), 200);
    expect((await expectStatus(await remove(p.session, right), 401)).error).toBe("invalid_code");
    expect(await mfaOf(p)).toBe(true);
    t.clock.advance(STEP);
    await expectStatus(await remove(p.session, oath(seed)), 204);
    expect(await mfaOf(p)).toBe(false);
    const allowed = t.core.sqlite.query("SELECT context FROM audit_log WHERE operator_id = ? AND action = 'mfa.delete' AND outcome = 'allowed'").get(p.operator.id) as { context: string };
    expect(JSON.parse(allowed.context).proof).toBe("code");
  });

  test("a sign-in within the last 10 minutes removes it without a code; a staged seed needs neither", async () => {
    const { p, seed } = await inForce();
    t.clock.advance(10 * 60_000 + 1000);
    const { token } = await expectStatus(await login(p, oath(seed)), 200);
    t.clock.advance(9 * 60_000);
    await expectStatus(await remove(token), 204);
    expect(await mfaOf(p)).toBe(false);
    await expectStatus(await enrol(p), 200);
    t.clock.advance(10 * 60_000 + 1000);
    await expectStatus(await remove(p.session), 204);
  });

  test("wrong codes count against the MFA limit: 429 with Retry-After", async () => {
    const { p, seed } = await inForce();
    t.clock.advance(10 * 60_000 + 1000);
    const wrong = oath(seed) === "000001" ? "000002" : "000001";
    for (let i = 0; i < 5; i++) await expectStatus(await remove(p.session, wrong), 401);
    const res = await remove(p.session, oath(seed));
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    await expectStatus(res, 429);
    expect(await mfaOf(p)).toBe(true);
  });

  test("turning MFA on ends the person's other sessions, not the one that turned it on", async () => {
    const p = await makePerson(t, []);
    const other = (await expectStatus(await login(p), 200)).token as string;
    await expectStatus(await t.request("GET", "/api/v1/me", { token: other }), 200);
    const { secret } = await expectStatus(await enrol(p), 200);
    await expectStatus(await confirm(p, oath(secret)), 204);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: other }), 401);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
    const row = t.core.sqlite.query("SELECT context FROM audit_log WHERE operator_id = ? AND action = 'mfa.confirm' AND outcome = 'allowed'").get(p.operator.id) as { context: string };
    expect(JSON.parse(row.context).sessions_ended).toBe(1);
  });
});

describe("sign-in once MFA is in force", () => {
  test("no code → 401 mfa_required; wrong → 401 invalid_credentials; right → 200; the same code again → 401 (accepted once); two steps ago → 401", async () => {
    const { p, seed } = await inForce();
    expect((await expectStatus(await login(p), 401)).error).toBe("mfa_required");
    expect((await expectStatus(await login(p, "000000" === oath(seed) ? "111111" : "000000"), 401)).error).toBe("invalid_credentials");
    const code = oath(seed);
    await expectStatus(await login(p, code), 200);
    expect((await expectStatus(await login(p, code), 401)).error).toBe("invalid_credentials");
    t.clock.advance(3 * STEP);
    expect((await expectStatus(await login(p, oath(seed, t.clock.now() - 2 * STEP)), 401)).error).toBe("invalid_credentials");
    await expectStatus(await login(p, oath(seed, t.clock.now() + STEP)), 200);
    // a wrong password with MFA on never reveals that MFA is on
    expect((await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: p.email, password: "wrong-password-1" } }), 401)).error).toBe("invalid_credentials");
  });

  test("503 when the secrets store is sealed", async () => {
    const { p, seed } = await inForce();
    t.core.secrets.seal("test");
    try {
      await expectStatus(await login(p, oath(seed)), 503);
    } finally {
      t.core.secrets.unseal(readFileSync(path.join(t.dataDir, "keys", "secrets.key"), "utf8"));
    }
  });
});
