import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeMachine, makeRole, mintToken } from "../../../test/fixtures";
import { fixedRole } from "../access/service";
import { newUserCode, normaliseUserCode, USER_CODE_ALPHABET } from "./codes";
import { DEVICE_GRANT_TYPE } from "./grants";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

interface Started {
  device_code: string;
  user_code: string;
  interval: number;
  expires_in: number;
  verification_uri: string;
  verification_uri_complete: string;
}

/** Start a grant; moves the clock a minute first so the per-address start limit never bites. */
async function start(body: unknown = { client: "cli", client_name: "laptop" }): Promise<Started> {
  t.clock.advance(61_000);
  return expectStatus<Started>(await t.request("POST", "/api/v1/auth/device", { body }), 200);
}

function poll(deviceCode: string, grantType: string | null = DEVICE_GRANT_TYPE) {
  return t.request("POST", "/api/v1/auth/device/token", { body: grantType === null ? { device_code: deviceCode } : { device_code: deviceCode, grant_type: grantType } });
}

function auditRows(action: string): Array<{ actor: string; target: string; project: string | null; outcome: string; context: string }> {
  return t.core.sqlite.query("SELECT actor, target, project, outcome, context FROM audit_log WHERE action = ? ORDER BY id").all(action) as never;
}

describe("user codes", () => {
  test("8 letters of the consonant alphabet, uniform enough, normalised case- and dash-insensitively", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      const c = newUserCode();
      expect(c).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
      for (const ch of c) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    // 16,000 letters over 20 symbols: each near 800; modulo bias would push the last four far below.
    for (const ch of USER_CODE_ALPHABET) expect(counts.get(ch) ?? 0).toBeGreaterThan(600);
    expect(normaliseUserCode("bcdf-ghjk")).toBe("BCDFGHJK");
    expect(normaliseUserCode(" BCDF GHJK ")).toBe("BCDFGHJK");
    expect(normaliseUserCode("ABCD-EFGH")).toBeNull();
    expect(normaliseUserCode("BCDF-GHJ")).toBeNull();
  });

  test("rejection sampling throws away bytes that would bias the draw", () => {
    const bytes = [255, 250, 240, 0, 1, 2, 3, 4, 5, 6, 7, 239, 20, 21, 22, 23];
    const code = newUserCode(() => Uint8Array.from(bytes));
    expect(code).toBe("BCDFGHJK");
  });
});

describe("POST /api/v1/auth/device (start)", () => {
  test("200: codes, interval, expiry and verification URIs", async () => {
    const s = await start();
    expect(s.device_code.startsWith("opsd_")).toBe(true);
    expect(s.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(s.interval).toBe(5);
    expect(s.expires_in).toBe(900);
    expect(s.verification_uri).toBe(`${t.url}/device`);
    expect(s.verification_uri_complete).toBe(`${t.url}/device?user_code=${s.user_code}`);
    const stored = t.core.sqlite.query("SELECT device_digest FROM device_grants WHERE user_code = ?").get(normaliseUserCode(s.user_code)!) as { device_digest: string };
    expect(stored.device_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(t.core.sqlite.query("SELECT * FROM device_grants").all())).not.toContain(s.device_code);
  });

  test("200: {} and a missing body are valid; a form-encoded body works too", async () => {
    await start({});
    t.clock.advance(61_000);
    await expectStatus(await t.request("POST", "/api/v1/auth/device"), 200);
    t.clock.advance(61_000);
    const res = await t.request("POST", "/api/v1/auth/device", { raw: "client=mcp&client_name=editor", headers: { "content-type": "application/x-www-form-urlencoded" } });
    const s = await expectStatus<Started>(res, 200);
    const owner = await makeOwner(t);
    const g = await expectStatus(await t.request("GET", `/api/v1/auth/device/${s.user_code}`, { token: owner.session }), 200);
    expect(g.client).toBe("mcp");
    expect(g.client_name).toBe("editor");
  });

  test("the untrusted client name is cut to 80 characters and stripped of control characters", async () => {
    const s = await start({ client_name: "x\u001b[31m" + "é".repeat(100), project: "wanted" });
    const owner = await makeOwner(t);
    const g = await expectStatus(await t.request("GET", `/api/v1/auth/device/${s.user_code}`, { token: owner.session }), 200);
    expect(Array.from(g.client_name as string)).toHaveLength(80);
    expect(g.client_name).not.toContain("\u001b");
    expect(g.requested_project).toBe("wanted");
    expect(g.default_project).toBeNull();
  });

  test("422 when client is neither cli nor mcp", async () => {
    const body = await expectStatus(await t.request("POST", "/api/v1/auth/device", { body: { client: "web" } }), 422);
    expect(body.error).toBe("validation_failed");
  });

  test("429 past 10 grants per 10 minutes from one address, with retry-after", async () => {
    t.clock.advance(11 * 60_000);
    for (let i = 0; i < 10; i++) await expectStatus(await t.request("POST", "/api/v1/auth/device", { body: {} }), 200);
    const res = await t.request("POST", "/api/v1/auth/device", { body: {} });
    const body = await expectStatus(res, 429);
    expect(body.error).toBe("rate_limited");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    t.clock.advance(11 * 60_000);
    await expectStatus(await t.request("POST", "/api/v1/auth/device", { body: {} }), 200);
  });
});

describe("POST /api/v1/auth/device/token (poll)", () => {
  test("400 authorization_pending, then slow_down adding 5 s to the interval for good", async () => {
    const s = await start();
    let e = await expectStatus(await poll(s.device_code), 400);
    expect(e).toEqual({ error: "authorization_pending", error_description: expect.any(String) });
    e = await expectStatus(await poll(s.device_code), 400);
    expect(e.error).toBe("slow_down");
    t.clock.advance(5_000);
    e = await expectStatus(await poll(s.device_code), 400);
    expect(e.error).toBe("slow_down");
    expect(e.error_description).toContain("15");
    t.clock.advance(15_000);
    e = await expectStatus(await poll(s.device_code), 400);
    expect(e.error).toBe("authorization_pending");
  });

  test("200 after approval: a cli token for the approver, which redeems once", async () => {
    const p = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const s = await start({ client: "cli", client_name: "build-box", project: p.slug });
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code.toLowerCase().replace("-", "")}/approve`, { token: dev.session, body: { role_id: fixedRole(t.core, "viewer").id, project: p.slug } }), 204);
    const res = await poll(s.device_code, null);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const tok = await expectStatus(res, 200);
    expect(tok.token_type).toBe("Bearer");
    expect(tok.access_token.startsWith("opst_")).toBe(true);
    expect(tok.operator).toBe(dev.email);
    expect(tok.project).toBe(p.slug);
    expect(tok.role).toBe("Viewer");
    expect(tok.scope.split(" ")).toContain("resources.read");
    expect(tok.expires_in).toBe(90 * 86400);
    const row = t.core.sqlite.query("SELECT kind, name, project_id FROM tokens WHERE operator_id = ?").get(dev.operator.id) as { kind: string; name: string; project_id: string };
    expect(row).toEqual({ kind: "cli", name: "ops CLI on build-box", project_id: p.id });
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: tok.access_token }), 200);
    const again = await expectStatus(await poll(s.device_code), 400);
    expect(again.error).toBe("expired_token");
    const redeemed = auditRows("device.redeem").at(-1)!;
    expect(redeemed.actor).toBe(dev.email);
    expect(JSON.stringify(auditRows("device.redeem"))).not.toContain(tok.access_token);
  });

  test("an mcp grant mints an mcp token; name and expiry from the approver", async () => {
    const owner = await makeOwner(t);
    const s = await start({ client: "mcp", client_name: "editor" });
    await expectStatus(
      await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: owner.session, body: { role_id: fixedRole(t.core, "developer").id, name: "my editor", expires_in_days: 0 } }),
      204,
    );
    const tok = await expectStatus(await poll(s.device_code), 200);
    expect(tok.expires_in).toBeNull();
    expect(tok.project).toBeNull();
    const row = t.core.sqlite.query("SELECT kind, name, expires_at FROM tokens WHERE name = 'my editor'").get() as { kind: string; expires_at: number | null };
    expect(row.kind).toBe("mcp");
    expect(row.expires_at).toBeNull();
  });

  test("400 access_denied after a denial", async () => {
    const owner = await makeOwner(t);
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`, { token: owner.session }), 204);
    const e = await expectStatus(await poll(s.device_code), 400);
    expect(e.error).toBe("access_denied");
  });

  test("400 expired_token once the 900 s are up, and for an unknown or malformed code", async () => {
    const s = await start();
    t.clock.advance(901_000);
    expect((await expectStatus(await poll(s.device_code), 400)).error).toBe("expired_token");
    expect((await expectStatus(await poll("opsd_" + "0".repeat(49)), 400)).error).toBe("expired_token");
    expect((await expectStatus(await poll("garbage"), 400)).error).toBe("expired_token");
  });

  test("400 unsupported_grant_type for another grant type", async () => {
    const s = await start();
    const e = await expectStatus(await poll(s.device_code, "authorization_code"), 400);
    expect(e.error).toBe("unsupported_grant_type");
  });

  test("form-encoded polls work; malformed bodies still answer DeviceErrorResponse", async () => {
    const s = await start();
    const form = await t.request("POST", "/api/v1/auth/device/token", {
      raw: `grant_type=${encodeURIComponent(DEVICE_GRANT_TYPE)}&device_code=${s.device_code}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect((await expectStatus(form, 400)).error).toBe("authorization_pending");
    const bad = await t.request("POST", "/api/v1/auth/device/token", { raw: "{not json", headers: { "content-type": "application/json" } });
    expect(Object.keys(await expectStatus(bad, 400)).sort()).toEqual(["error", "error_description"]);
    const missing = await t.request("POST", "/api/v1/auth/device/token", { body: {} });
    expect(Object.keys(await expectStatus(missing, 400)).sort()).toEqual(["error", "error_description"]);
  });
});

describe("GET /api/v1/auth/device/{user_code}", () => {
  test("200: the grant with roles, mintable advice and a preselected role", async () => {
    const p = makeProject(t);
    const custom = makeRole(t, p.slug, "auditor", ["project.read", "audit.read"]);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const s = await start({ client_name: "laptop", project: p.slug });
    const g = await expectStatus(await t.request("GET", `/api/v1/auth/device/${s.user_code}`, { token: dev.session }), 200);
    expect(g.status).toBe("pending");
    expect(g.client).toBe("cli");
    expect(g.ip).toBe("127.0.0.1");
    expect(g.user_code).toBe(s.user_code);
    expect(g.default_project).toBe(p.slug);
    const byName = Object.fromEntries((g.roles as Array<{ name: string; mintable: boolean; project: string | null; id: string }>).map((r) => [r.name, r]));
    expect(byName.Owner.mintable).toBe(false);
    expect(byName.Maintainer.mintable).toBe(false);
    expect(byName.Developer.mintable).toBe(true);
    expect(byName.Viewer.mintable).toBe(true);
    expect(byName.auditor).toEqual({ id: custom, name: "auditor", project: p.slug, mintable: false });
    expect(g.default_role_id).toBe(fixedRole(t.core, "developer").id);
  });

  test("a viewer gets viewer preselected", async () => {
    const p = makeProject(t);
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    const s = await start({ project: p.slug });
    const g = await expectStatus(await t.request("GET", `/api/v1/auth/device/${s.user_code}`, { token: viewer.session }), 200);
    expect(g.default_role_id).toBe(fixedRole(t.core, "viewer").id);
  });

  test("401 without a credential", async () => {
    const s = await start();
    await expectStatus(await t.request("GET", `/api/v1/auth/device/${s.user_code}`), 401);
  });

  test("404 for a code nobody issued", async () => {
    const owner = await makeOwner(t);
    await expectStatus(await t.request("GET", "/api/v1/auth/device/BBBB-BBBB", { token: owner.session }), 404);
    await expectStatus(await t.request("GET", "/api/v1/auth/device/not-a-code", { token: owner.session }), 404);
  });

  test("429 past 20 lookups per minute from one address", async () => {
    const owner = await makeOwner(t);
    t.clock.advance(61_000);
    for (let i = 0; i < 20; i++) await t.request("GET", "/api/v1/auth/device/BBBB-BBBB", { token: owner.session });
    const res = await t.request("GET", "/api/v1/auth/device/BBBB-BBBB", { token: owner.session });
    await expectStatus(res, 429);
    expect(res.headers.get("retry-after")).not.toBeNull();
    t.clock.advance(61_000);
  });

  test("an expired grant reads as expired; the scheduler task moves it to expired", async () => {
    const owner = await makeOwner(t);
    const s = await start();
    t.clock.advance(900_000);
    const g = await expectStatus(await t.request("GET", `/api/v1/auth/device/${s.user_code}`, { token: owner.session }), 200);
    expect(g.status).toBe("expired");
    await t.core.scheduler.runNow("device.expire-grants");
    const row = t.core.sqlite.query("SELECT status FROM device_grants WHERE user_code = ?").get(normaliseUserCode(s.user_code)!) as { status: string };
    expect(row.status).toBe("expired");
  });
});

describe("POST /api/v1/auth/device/{user_code}/approve", () => {
  test("204, audited as device.approve with no secret in the row", async () => {
    const owner = await makeOwner(t);
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: owner.session, body: { role_id: fixedRole(t.core, "viewer").id } }), 204);
    const row = auditRows("device.approve").at(-1)!;
    expect(row.actor).toBe(owner.email);
    // Approvals raise no notification (nor mail).
    expect((t.core.sqlite.query("SELECT count(*) AS n FROM notices").get() as { n: number }).n).toBe(0);
    expect((t.core.sqlite.query("SELECT count(*) AS n FROM mail_outbox").get() as { n: number }).n).toBe(0);
    expect(row.outcome).toBe("allowed");
    expect(row.context).not.toContain("opsd_");
  });

  test("401 without a credential", async () => {
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { body: { role_id: fixedRole(t.core, "viewer").id } }), 401);
  });

  test("403 for a machine operator", async () => {
    const p = makeProject(t);
    const m = await makeMachine(t, [{ role: "developer", project: p.slug }]);
    const s = await start();
    const body = await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: m.token, body: { role_id: fixedRole(t.core, "viewer").id } }), 403);
    expect(body.message).toContain("machine");
    // Every denial is audited (DESIGN.md §3), in the grant's name.
    const row = auditRows("device.approve").at(-1)!;
    expect(row).toMatchObject({ actor: "api-token", outcome: "denied" });
    expect(row.target).toStartWith("device-grant:");
  });

  test("404 for an unknown code, role or project", async () => {
    const owner = await makeOwner(t);
    await expectStatus(await t.request("POST", "/api/v1/auth/device/BBBB-BBBB/approve", { token: owner.session, body: { role_id: fixedRole(t.core, "viewer").id } }), 404);
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: owner.session, body: { role_id: "0190a0a0-0000-7000-8000-000000000000" } }), 404);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: owner.session, body: { role_id: fixedRole(t.core, "viewer").id, project: "no-such-project" } }), 404);
  });

  test("409 once decided (approved or denied) or expired", async () => {
    const owner = await makeOwner(t);
    const viewer = { role_id: fixedRole(t.core, "viewer").id };
    const a = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${a.user_code}/approve`, { token: owner.session, body: viewer }), 204);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${a.user_code}/approve`, { token: owner.session, body: viewer }), 409);
    const d = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${d.user_code}/deny`, { token: owner.session }), 204);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${d.user_code}/approve`, { token: owner.session, body: viewer }), 409);
    const e = await start();
    t.clock.advance(901_000);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${e.user_code}/approve`, { token: owner.session, body: viewer }), 409);
  });

  test("422 when the token would carry more than the approver, pinned or not", async () => {
    const p = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const s = await start();
    const body = await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: dev.session, body: { role_id: fixedRole(t.core, "maintainer").id, project: p.slug } }), 422);
    expect(body.error).toBe("refused");
    // The refusal is audited as a denied device.approve in the project; the grant stays pending.
    expect(auditRows("device.approve").at(-1)!).toMatchObject({ actor: dev.email, project: p.slug, outcome: "denied" });
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: dev.session, body: { role_id: fixedRole(t.core, "owner").id } }), 422);
    // A token-authenticated approver is limited by its own scopes.
    const narrow = mintToken(t, dev.principal, { role: "viewer", project: p.slug });
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: narrow, body: { role_id: fixedRole(t.core, "developer").id, project: p.slug } }), 422);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: narrow, body: { role_id: fixedRole(t.core, "viewer").id, project: p.slug } }), 204);
  });

  test("422 for a malformed body (no role_id)", async () => {
    const owner = await makeOwner(t);
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/approve`, { token: owner.session, body: {} }), 422);
  });
});

describe("guessing codes through approve and deny", () => {
  test("429 past 20 uses of user codes a minute per person (approve and deny count with lookups), audited; another person is not held up", async () => {
    const guesser = await makeOwner(t);
    const other = await makeOwner(t);
    const viewer = fixedRole(t.core, "viewer").id;
    const s = await start();
    const guess = (i: number) => `BBBB-BB${USER_CODE_ALPHABET[i % USER_CODE_ALPHABET.length]}${USER_CODE_ALPHABET[Math.floor(i / USER_CODE_ALPHABET.length)]}`;
    for (let i = 0; i < 10; i++) await expectStatus(await t.request("POST", `/api/v1/auth/device/${guess(i)}/approve`, { token: guesser.session, body: { role_id: viewer } }), 404);
    for (let i = 10; i < 20; i++) await expectStatus(await t.request("POST", `/api/v1/auth/device/${guess(i)}/deny`, { token: guesser.session }), 404);
    const approve = await t.request("POST", `/api/v1/auth/device/${guess(20)}/approve`, { token: guesser.session, body: { role_id: viewer } });
    expect((await expectStatus(approve, 429)).error).toBe("rate_limited");
    expect(approve.headers.get("retry-after")).not.toBeNull();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${guess(21)}/deny`, { token: guesser.session }), 429);
    await expectStatus(await t.request("GET", `/api/v1/auth/device/${guess(22)}`, { token: guesser.session }), 429);
    // A real grant is not decided by a throttled caller.
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`, { token: guesser.session }), 429);
    const denied = t.core.sqlite.query("SELECT action, reason FROM audit_log WHERE operator_id = ? AND outcome = 'denied' ORDER BY id").all(guesser.operator.id) as Array<{ action: string; reason: string }>;
    expect(denied.map((r) => r.action)).toEqual(["device.approve", "device.deny", "device.lookup", "device.deny"]);
    expect(denied[0].reason).toContain("rate limited");
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`, { token: other.session }), 204);
    t.clock.advance(61_000);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${guess(23)}/deny`, { token: guesser.session }), 404);
  });
});

describe("POST /api/v1/auth/device/{user_code}/deny", () => {
  test("204, audited as device.deny", async () => {
    const owner = await makeOwner(t);
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`, { token: owner.session }), 204);
    expect(auditRows("device.deny").at(-1)!.actor).toBe(owner.email);
    expect((t.core.sqlite.query("SELECT count(*) AS n FROM notices").get() as { n: number }).n).toBe(0);
  });

  test("401 without a credential", async () => {
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`), 401);
  });

  test("404 for an unknown code", async () => {
    const owner = await makeOwner(t);
    await expectStatus(await t.request("POST", "/api/v1/auth/device/BBBB-BBBB/deny", { token: owner.session }), 404);
  });

  test("409 once decided", async () => {
    const owner = await makeOwner(t);
    const s = await start();
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`, { token: owner.session }), 204);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${s.user_code}/deny`, { token: owner.session }), 409);
  });
});
