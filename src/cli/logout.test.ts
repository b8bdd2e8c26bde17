/**
 * `ops logout` against a live server: revoking the CLI's saved token revokes the MCP token
 * `ops login --client mcp` saved beside it too (an assistant keeps no access the person signed
 * out of), and forgets both; a saved MCP token the server no longer accepts is just forgotten.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../test/harness";
import { makeOwner, mintToken, type Person } from "../../test/fixtures";
import { logoutCommand } from "./session";
import { readConfigFile, writeConfigFile } from "./config";

let t: TestApp;
let owner: Person;
const homes: string[] = [];

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
});
afterAll(async () => {
  await t?.close();
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

async function logout(env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await logoutCommand.run({ env, cwd: "/", flags: {}, args: [], stdout: (s) => out.push(s), stderr: (s) => err.push(s) });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

function home(): Record<string, string> {
  const h = tempDir("ops-logout-");
  homes.push(h);
  return { HOME: h };
}

const accepted = async (token: string) => (await t.request("GET", "/api/v1/me", { token })).status;

describe("ops logout", () => {
  test("revokes the saved MCP token with the CLI's and forgets both", async () => {
    const env = home();
    const cli = mintToken(t, owner.principal, { role: "owner", kind: "cli", name: "laptop" });
    const mcp = mintToken(t, owner.principal, { role: "owner", kind: "mcp", name: "editor assistant" });
    writeConfigFile(env, { server: t.url, token: cli, project: "shop", mcp_server: t.url, mcp_token: mcp });
    await expectStatus(await t.request("GET", "/api/v1/me", { token: mcp }), 200);
    const r = await logout(env);
    expect(r.code).toBe(0);
    expect(await accepted(cli)).toBe(401);
    expect(await accepted(mcp)).toBe(401);
    expect(r.stderr).toContain("revoked the MCP client's token");
    const file = readConfigFile(env);
    expect(file.token ?? null).toBeNull();
    expect(file.mcp_token ?? null).toBeNull();
    expect(file.project).toBe("shop");
  });

  test("an MCP token the server no longer accepts is forgotten; the CLI's is still revoked", async () => {
    const env = home();
    const cli = mintToken(t, owner.principal, { role: "owner", kind: "cli", name: "laptop 2" });
    const mcp = mintToken(t, owner.principal, { role: "owner", kind: "mcp", name: "old assistant" });
    writeConfigFile(env, { server: t.url, token: cli, mcp_server: t.url, mcp_token: mcp });
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: mcp }), 200);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${me.token_id}`, { token: owner.session }), 204);
    const r = await logout(env);
    expect(r.code).toBe(0);
    expect(await accepted(cli)).toBe(401);
    expect(readConfigFile(env).mcp_token ?? null).toBeNull();
  });
});
