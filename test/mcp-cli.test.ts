/**
 * `ops login --client mcp` and `ops mcp` in the built binary against a live server, driven as a
 * person and an MCP client would: the device grant with client `mcp` approved by a person in the
 * console (the API its approval page calls), the token saved apart from the CLI's login, then the
 * SDK's stdio client starting `ops mcp` — the tool list, every tool as an owner, a viewer's deploy
 * refused and audited, and a secret's value nowhere in what came back or what ops printed.
 *
 * The server follows the wall clock: the CLI really waits its poll interval.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, principalOf, type Person } from "./fixtures";
import { startLogin as startLoginAt } from "./support/cli";
import { FixedClock } from "../src/core/clock";
import { fixedRole } from "../src/domains/access/service";
import { ROOT, call, callEveryTool, connectStdio, mcpWorld, type McpWorld } from "./mcp-fixtures";

class WallClock extends FixedClock {
  override now(): number {
    return Date.now();
  }
}

const SECRET = "whsec_stdio-4c8e1a7f0b3d9265";
const dirs: string[] = [];
const dir = (prefix: string) => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
};
const binDir = dir("ops-mcp-bin-");
const bin = path.join(binDir, "ops");

let t: TestApp;
let w: McpWorld;

beforeAll(async () => {
  const built = Bun.spawnSync([process.execPath, "build.ts", "--outfile", bin], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(`build failed:\n${built.stdout}${built.stderr}`);
  t = await createTestApp({ clock: new WallClock() });
  w = await mcpWorld(t);
}, 180_000);
afterAll(async () => {
  w?.local.remove();
  await t?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const envFor = (home: string, extra: Record<string, string> = {}) => ({ HOME: home, PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", ...extra });
const configOf = (home: string) => JSON.parse(readFileSync(path.join(home, ".config", "ops", "config.json"), "utf8"));

/** Start `ops login` with `args` as `home`'s person; resolves with the user code it printed and its end (test/support/cli.ts). */
function startLogin(home: string, args: string[]) {
  return startLoginAt(bin, t.url, envFor(home), args);
}

describe("ops login --client mcp (built binary)", () => {
  let home: string;

  test("prints the code, the console approves an MCP client, and the stored token is of kind mcp, apart from the CLI's login", async () => {
    home = dir("ops-mcp-home-");
    mkdirSync(path.join(home, ".config", "ops"), { recursive: true, mode: 0o700 });
    // An earlier `ops login` (the CLI's own token) must stay as it is.
    writeFileSync(path.join(home, ".config", "ops", "config.json"), JSON.stringify({ server: t.url, token: w.ctx.owner.session, project: null }), { mode: 0o600 });
    const login = await startLogin(home, ["--client", "mcp"]);
    const grant = await expectStatus(await t.request("GET", `/api/v1/auth/device/${login.userCode}`, { token: w.ctx.owner.session }), 200);
    expect(grant.client).toBe("mcp");
    await expectStatus(
      await t.request("POST", `/api/v1/auth/device/${login.userCode}/approve`, { token: w.ctx.owner.session, body: { role_id: fixedRole(t.core, "maintainer").id, project: w.slug, name: "editor assistant" } }),
      204,
    );
    const done = await login.finished;
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("ops mcp");
    const cfg = configOf(home);
    expect(cfg.token).toBe(w.ctx.owner.session);
    expect(cfg.mcp_server).toBe(t.url);
    expect(cfg.mcp_token).toMatch(/^opst_/);
    expect(statSync(path.join(home, ".config", "ops", "config.json")).mode & 0o777).toBe(0o600);
    expect(done.stdout + done.stderr).not.toContain(cfg.mcp_token);
    const principal = await principalOf(t, cfg.mcp_token);
    expect(principal).toMatchObject({ tokenKind: "mcp", tokenProjectSlug: w.slug, email: w.ctx.owner.email });
    // What an mcp token is for: it may not mint another.
    await expectStatus(await t.request("POST", "/api/v1/tokens", { token: cfg.mcp_token, body: { name: "x", role_id: fixedRole(t.core, "viewer").id } }), 403);
  }, 60_000);

  test("ops mcp with the saved token (the project owner's, approved as maintainer): initialize, every tool has an input schema, every tool answers; no secret value anywhere", async () => {
    const { client, stderr } = await connectStdio(t, { HOME: home }, [bin]);
    try {
      expect(client.getServerVersion()?.name).toBe("ops");
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThanOrEqual(24);
      for (const tool of tools) expect(tool.inputSchema.type).toBe("object");
      const results = await callEveryTool(client, w, SECRET);
      for (const [name, r] of results) expect(`${name}: ${r.isError ? r.content[0]?.text : "ok"}`).toBe(`${name}: ok`);
      expect(results.get("whoami")!.structuredContent).toMatchObject({ via: "token", token_project: w.slug });
      // Audited as the token's person, through the token.
      const row = t.core.sqlite.query("SELECT actor, via FROM audit_log WHERE action = 'deployments.deploy' AND outcome = 'allowed' AND project = ? ORDER BY id DESC").get(w.slug) as { actor: string; via: string };
      expect(row).toEqual({ actor: w.ctx.owner.email, via: "token" });
      expect(JSON.stringify([...results.values()])).not.toContain(SECRET);
      expect(stderr()).not.toContain(SECRET);
      expect(t.logs.join("\n")).not.toContain(SECRET);
    } finally {
      await client.close();
    }
  }, 120_000);

  test("a viewer's deploy through ops mcp (OPS_TOKEN) is a tool error, in the audit log as denied", async () => {
    const viewer: Person = await makePerson(t, [{ role: "viewer", project: w.slug }]);
    const { client } = await connectStdio(t, { HOME: dir("ops-mcp-empty-"), OPS_TOKEN: viewer.session }, [bin]);
    try {
      const r = await call(client, "deploy", { project: w.slug, service: "web", digest: w.digest });
      expect(r.isError).toBe(true);
      expect(r.content[0].text).toContain("deployments.deploy");
      const rows = t.core.sqlite.query("SELECT environment, reason FROM audit_log WHERE action = 'deployments.deploy' AND outcome = 'denied' AND actor = ?").all(viewer.email) as Array<{ environment: string; reason: string }>;
      expect(rows).toHaveLength(1);
      expect(rows[0].environment).toBe("production");
    } finally {
      await client.close();
    }
  }, 60_000);

  test("ops mcp with a refused token exits 3 with one line on stderr, and nothing on stdout", async () => {
    const p = Bun.spawn([bin, "mcp", "--server", t.url], { env: envFor(dir("ops-mcp-bad-"), { OPS_TOKEN: "opst_" + "0".repeat(49) }), stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(3);
    expect(out).toBe("");
    expect(err).toContain("refused the token");
  });
});
