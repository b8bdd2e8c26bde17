/**
 * An `mcp` token is an AI client's credential: on the whole API (not only through the MCP tools)
 * it may do what its scopes allow, but it never mints a token, creates an install code (which
 * mints one) or approves a device. Each refusal is a 403 audited as denied, and nothing is minted.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, mintToken, type Person } from "../../../test/fixtures";
import { fixedRole } from "../access/service";

let t: TestApp;
let owner: Person;
let project: string;
let mcpToken: string;
let cliToken: string;

const count = (sql: string) => (t.core.sqlite.query(sql).get() as { n: number }).n;
const denied = (action: string) => t.core.sqlite.query("SELECT actor, reason FROM audit_log WHERE action = ? AND outcome = 'denied' ORDER BY id").all(action) as Array<{ actor: string; reason: string }>;

beforeAll(async () => {
  t = await createTestApp();
  project = makeProject(t).slug;
  owner = await makePerson(t, [{ role: "owner", project: null }]);
  mcpToken = mintToken(t, owner.principal, { role: "owner", kind: "mcp", name: "editor" });
  cliToken = mintToken(t, owner.principal, { role: "owner", kind: "cli", name: "laptop" });
});
afterAll(() => t.close());

describe("an mcp token on the HTTP API", () => {
  test("reads what its scopes allow", async () => {
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: mcpToken }), 200);
    expect(me.via).toBe("token");
    await expectStatus(await t.request("GET", `/api/v1/projects/${project}/resources`, { token: mcpToken }), 200);
  });

  test("cannot mint a token: 403, audited as denied, no token row", async () => {
    const before = count("SELECT count(*) AS n FROM tokens");
    const res = await t.request("POST", "/api/v1/tokens", { token: mcpToken, body: { name: "more", role_id: fixedRole(t.core, "viewer").id, kind: "api" } });
    const body = await expectStatus(res, 403);
    expect(body.message).toContain("MCP client");
    expect(count("SELECT count(*) AS n FROM tokens")).toBe(before);
    expect(denied("token.mint").at(-1)?.reason).toContain("MCP client");
  });

  test("cannot create an install code", async () => {
    const before = count("SELECT count(*) AS n FROM install_codes");
    await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: mcpToken, body: { project } }), 403);
    expect(count("SELECT count(*) AS n FROM install_codes")).toBe(before);
    expect(denied("install-code.create").at(-1)?.reason).toContain("MCP client");
  });

  test("cannot approve a device; the grant stays pending and the approval page offers no role", async () => {
    const start = await expectStatus(await t.request("POST", "/api/v1/auth/device", { body: { client: "cli", client_name: "laptop" } }), 200);
    const grant = await expectStatus(await t.request("GET", `/api/v1/auth/device/${start.user_code}`, { token: mcpToken }), 200);
    expect(grant.roles.every((r: { mintable: boolean }) => r.mintable === false)).toBe(true);
    const res = await t.request("POST", `/api/v1/auth/device/${start.user_code}/approve`, { token: mcpToken, body: { role_id: fixedRole(t.core, "viewer").id } });
    await expectStatus(res, 403);
    const after = await expectStatus(await t.request("GET", `/api/v1/auth/device/${start.user_code}`, { token: owner.session }), 200);
    expect(after.status).toBe("pending");
    expect(denied("device.approve").at(-1)?.reason).toContain("MCP client");
  });

  test("a cli token of the same person still mints (the rule is the kind, not the person)", async () => {
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: cliToken, body: { name: "ci", role_id: fixedRole(t.core, "viewer").id } }), 201);
  });
});
