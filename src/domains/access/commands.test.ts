import { describe, test, expect, afterAll } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { runCli } from "../../main";
import { createTestApp, expectStatus, tempDir } from "../../../test/harness";

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function ops(...argv: string[]) {
  let out = "";
  let err = "";
  const code = await runCli(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s), env: { OPS_DATA_DIR: dir }, cwd: dir });
  return { code, out, err };
}

describe("ops admin create-operator / create-project", () => {
  test("create a project and an operator offline; the server then knows both", async () => {
    const p = await ops("admin", "create-project", "--slug", "shop", "--name", "Shop", "--environment", "production", "--environment", "qa");
    expect(p.code).toBe(0);
    expect(p.out).toContain("created project shop");
    const o = await ops("admin", "create-operator", "--email", "ada@ops.test", "--role", "developer", "--project", "shop");
    expect(o.code).toBe(0);
    const password = /password: (\S+)/.exec(o.out)?.[1];
    expect(password).toBeString();
    const m = await ops("admin", "create-operator", "--handle", "deploy-bot", "--role", "viewer");
    expect(m.code).toBe(0);
    expect(m.out).not.toContain("password");

    const t = await createTestApp({ dataDir: dir });
    try {
      const login = await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: "ada@ops.test", password } }), 200);
      const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: login.token }), 200);
      expect(me.memberships).toEqual([expect.objectContaining({ project: "shop", role_slug: "developer" })]);
      const proj = await expectStatus(await t.request("GET", "/api/v1/projects/shop", { token: login.token }), 200);
      expect(proj.environments).toEqual(["production", "qa"]);
      const audit = t.core.sqlite.query("SELECT actor, via FROM audit_log WHERE target = 'project:shop'").get();
      expect(audit).toEqual({ actor: "system", via: "system" });
    } finally {
      await t.close();
    }
  });

  test("bad usage exits 2; a taken slug fails with 1", async () => {
    expect((await ops("admin", "create-operator", "--display-name", "x")).code).toBe(2);
    expect((await ops("admin", "create-project")).code).toBe(2);
    const again = await ops("admin", "create-project", "--slug", "shop");
    expect(again.code).toBe(1);
    expect(again.err).toContain("already exists");
  });
});

describe("ops admin refuses a data directory that does not exist", () => {
  test("create-project, create-operator and publish-cli exit 1, name the directory and create nothing", async () => {
    const missing = `${dir}/no-such-estate`;
    for (const argv of [
      ["admin", "create-project", "--slug", "shop2", "--data-dir", missing],
      ["admin", "create-operator", "--email", "bo@ops.test", "--data-dir", missing],
      ["admin", "publish-cli", "--file", "/bin/sh", "--version", "1.0.0", "--data-dir", missing],
    ]) {
      const r = await ops(...argv);
      expect(r.code).toBe(1);
      expect(r.err).toContain(`no data directory at ${missing}`);
      expect(existsSync(missing)).toBe(false);
    }
  });

  test("the directory used is printed", async () => {
    const r = await ops("admin", "create-project", "--slug", "shop3");
    expect(r.code).toBe(0);
    expect(r.err).toContain(`data directory ${dir}`);
  });
});
