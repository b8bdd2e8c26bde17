/**
 * No secret handed to or chosen by a user — password, session bearer, minted token, TOTP seed —
 * appears in a log line, an error body, any column of any table, or the raw database files.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Database } from "bun:sqlite";
import { createTestApp, expectStatus, type TestApp, type RequestOptions } from "./harness";
import { makeOwner, makeProject } from "./fixtures";
import { fixedRole } from "../src/domains/access/service";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const bodies: string[] = [];
async function call(method: string, p: string, opts: RequestOptions = {}): Promise<Response> {
  const res = await t.request(method, p, opts);
  const text = await res.text();
  if (res.status >= 400) bodies.push(text);
  return new Response(text, { status: res.status, headers: res.headers });
}

function oath(seed: string): string {
  const r = Bun.spawnSync(["oathtool", "--totp", "-b", seed, "--now", `@${Math.floor(t.clock.now() / 1000)}`]);
  if (r.exitCode !== 0) throw new Error(`oathtool failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

function everyCell(db: Database): string[] {
  const out: string[] = [];
  const tables = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all();
  for (const { name } of tables) {
    for (const row of db.query<Record<string, unknown>, []>(`SELECT * FROM "${name}"`).all()) {
      for (const v of Object.values(row)) {
        if (v === null || v === undefined) continue;
        if (v instanceof Uint8Array) out.push(Buffer.from(v).toString("latin1"), Buffer.from(v).toString("hex"));
        else out.push(String(v));
      }
    }
  }
  return out;
}

describe("no secret leaks", () => {
  test("passwords, bearers, tokens and seeds stay out of logs, error bodies and the databases", async () => {
    const secrets: string[] = [];
    const owner = await makeOwner(t);
    const project = makeProject(t);

    // A person created over the API with a password, who signs in, fails, changes it, enrols MFA.
    const password = "correct-horse-battery-staple-1";
    const newPassword = "correct-horse-battery-staple-2";
    secrets.push(password, newPassword);
    const created = await expectStatus(await call("POST", "/api/v1/operators", { token: owner.session, body: { kind: "person", email: "leak@ops.test", display_name: "Leak", password } }), 201);
    await expectStatus(await call("POST", `/api/v1/projects/${project.slug}/members`, { token: owner.session, body: { operator_id: created.id, role_id: fixedRole(t.core, "developer").id } }), 204);
    const typo = "hunter2-typed-into-the-email-box";
    secrets.push(typo);
    await expectStatus(await call("POST", "/api/v1/auth/login", { body: { email: typo, password } }), 401);
    await expectStatus(await call("POST", "/api/v1/auth/login", { body: { email: "leak@ops.test", password: `${password}-wrong` } }), 401);
    const login = await expectStatus(await call("POST", "/api/v1/auth/login", { body: { email: "leak@ops.test", password } }), 200);
    secrets.push(login.token);
    await expectStatus(await call("POST", "/api/v1/auth/password", { token: login.token, body: { current_password: `${password}-nope`, new_password: newPassword } }), 422);
    await expectStatus(await call("POST", "/api/v1/auth/password", { token: login.token, body: { current_password: password, new_password: "short" } }), 422);
    await expectStatus(await call("POST", "/api/v1/auth/password", { token: login.token, body: { current_password: password, new_password: newPassword } }), 204);

    const enrol = await expectStatus(await call("POST", "/api/v1/me/mfa/enrol", { token: login.token }), 200);
    secrets.push(enrol.secret);
    await expectStatus(await call("POST", "/api/v1/me/mfa/confirm", { token: login.token, body: { code: "000000" === oath(enrol.secret) ? "111111" : "000000" } }), 401);
    await expectStatus(await call("POST", "/api/v1/me/mfa/confirm", { token: login.token, body: { code: oath(enrol.secret) } }), 204);
    t.clock.advance(30_000);
    const second = await expectStatus(await call("POST", "/api/v1/auth/login", { body: { email: "leak@ops.test", password: newPassword, code: oath(enrol.secret), client: "cli" } }), 200);
    secrets.push(second.token);

    // Minted tokens: used, refused, revoked, and used after revocation.
    const minted = await expectStatus(await call("POST", "/api/v1/tokens", { token: second.token, body: { name: "ci", role_id: fixedRole(t.core, "viewer").id, project: project.slug } }), 201);
    secrets.push(minted.secret);
    await expectStatus(await call("GET", "/api/v1/me", { token: minted.secret }), 200);
    await expectStatus(await call("GET", `/api/v1/projects/${project.slug}/audit`, { token: minted.secret }), 403);
    await expectStatus(await call("POST", "/api/v1/tokens", { token: minted.secret, body: { name: "wider", role_id: fixedRole(t.core, "owner").id, project: project.slug } }), 422);
    await expectStatus(await call("DELETE", `/api/v1/tokens/${minted.token.id}`, { token: second.token }), 204);
    await expectStatus(await call("GET", "/api/v1/me", { token: minted.secret }), 401);
    await expectStatus(await call("GET", "/api/v1/me", { headers: { cookie: `ops_session=${second.token}x` } }), 401);
    await expectStatus(await call("POST", "/api/v1/auth/logout", { token: login.token }), 204);
    await expectStatus(await call("GET", "/api/v1/me", { token: login.token }), 401);
    // An operator admin resets the password and MFA.
    const reset = "reset-by-the-estate-owner";
    secrets.push(reset);
    await expectStatus(await call("PATCH", `/api/v1/operators/${created.id}`, { token: owner.session, body: { password: reset, reset_mfa: true } }), 200);
    secrets.push(owner.session, owner.password);

    const { flushTouches } = await import("../src/domains/access/service");
    flushTouches(t.core);
    t.core.sqlite.exec("PRAGMA wal_checkpoint(PASSIVE)");

    const logs = t.logs.join("\n");
    const errors = bodies.join("\n");
    const cells = [...everyCell(t.core.sqlite), ...everyCell(t.core.telemetrySqlite)].join("\n");
    const files = readdirSync(t.dataDir)
      .filter((f) => /\.db(-wal)?$/.test(f))
      .map((f) => readFileSync(path.join(t.dataDir, f)).toString("latin1"))
      .join("\n");
    expect(bodies.length).toBeGreaterThan(8);
    expect(logs.length).toBeGreaterThan(0);
    for (const s of secrets) {
      const where = [logs.includes(s) && "a log line", errors.includes(s) && "an error body", cells.includes(s) && "a database cell", files.includes(s) && "a database file"].filter(Boolean);
      expect(where, `secret ${s.slice(0, 6)}… found in ${where.join(", ")}`).toEqual([]);
    }
    // Handed-out secrets are stored as digests only.
    const digests = t.core.sqlite.query("SELECT digest FROM sessions UNION ALL SELECT digest FROM tokens").all() as Array<{ digest: string }>;
    expect(digests.every((d) => /^[0-9a-f]{64}$/.test(d.digest))).toBe(true);
  });
});
