import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, freePort, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson } from "../../../test/fixtures";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { runCli } from "../../main";
import { generateMasterKeyText } from "../../core/secrets";

let t: TestApp;
let p: ProjectCtx;
let estate: Awaited<ReturnType<typeof makeOwner>>;

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  estate = await makeOwner(t);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "env", spec: { variables: [] } }), 201);
  await expectStatus(await p.req("PUT", "/resources/secret-group/env/variables/TOKEN", { value: "kept-across-seal-1" }), 200);
  await expectStatus(await p.req("POST", "/resources/service", { name: "web", spec: { image: "x", env_group: "env" } }), 201);
  await expectStatus(await p.req("PUT", "/secrets/web/API_KEY", { value: "kept-across-seal-2" }), 204);
  await expectStatus(await p.req("PUT", "/secrets/web/DROP_ME", { value: "deleted-while-sealed" }), 204);
  await expectStatus(await p.req("POST", "/resources/job", { name: "uses-env", spec: { command: "echo $TOKEN", env_group: "env" } }), 201);
});
afterAll(() => t.close());

function io(env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s), env, cwd: process.cwd() } };
}

describe("a sealed store", () => {
  test("every secret route answers 503 sealed while the rest of the API works; unsealing loses nothing", async () => {
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/seal", { token: estate.session }), 204);
    const status = await expectStatus(await t.request("GET", "/api/v1/admin/secrets", { token: estate.session }), 200);
    expect(status).toMatchObject({ sealed: true, key_id: null });
    expect(status.reason).toContain("sealed by");

    const secretRoutes: Array<[string, string, unknown?]> = [
      ["GET", "/resources/secret-group/env/variables"],
      ["PUT", "/resources/secret-group/env/variables/OTHER", { value: "x" }],
      ["DELETE", "/resources/secret-group/env/variables/TOKEN"],
      ["POST", "/resources/secret-group/env/rotate"],
      ["POST", "/resources/secret-group/env/observe"],
      // Need the key although the spec lists no 503 for them (decision 0545).
      ["GET", "/secrets/web/env"],
      ["PUT", "/secrets/web/OTHER", { value: "x" }],
    ];
    for (const [m, path, body] of secretRoutes) {
      const res = await p.req(m, path, body);
      const b = await res.json();
      expect({ route: `${m} ${path}`, status: res.status, error: b.error }).toEqual({ route: `${m} ${path}`, status: 503, error: "sealed" });
    }
    // Metadata needs no key: listed and deleted while sealed, as the spec answers them (no 503).
    const names = async () => (await expectStatus(await p.req("GET", "/secrets"), 200)).map((m: { service: string; name: string }) => `${m.service}/${m.name}`);
    expect(await names()).toEqual(["web/API_KEY", "web/DROP_ME"]);
    await expectStatus(await p.req("DELETE", "/secrets/web/DROP_ME"), 204);
    await expectStatus(await p.req("DELETE", "/secrets/web/DROP_ME"), 404);
    expect(await names()).toEqual(["web/API_KEY"]);
    expect(await expectStatus(await p.req("GET", "/resources/secret-group/env/versions"), 200)).toEqual([]);
    // The rest keeps working.
    await expectStatus(await p.req("GET", "/resources"), 200);
    await expectStatus(await p.req("POST", "/resources/job", { name: "plain", spec: { command: "true" } }), 201);
    await expectStatus(await t.request("GET", "/api/v1/catalog", { token: p.owner.session }), 200);
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: p.owner.session }), 200);
    // A job that needs its env group fails with the reason, without running.
    const run = await expectStatus(await p.req("POST", "/resources/job/uses-env/run"), 202);
    await t.core.scheduler.runDue();
    const runs = await expectStatus(await p.req("GET", "/resources/job/uses-env/runs"), 200);
    expect(runs[0]).toMatchObject({ id: run.id, status: "failed", error: "the secrets store is sealed: the env group cannot be read" });

    const wrong = await expectStatus(await t.request("POST", "/api/v1/admin/secrets/unseal", { token: estate.session, body: { key: generateMasterKeyText() } }), 422);
    expect(wrong.error).toBe("refused");
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/unseal", { token: estate.session, body: { key: "short" } }), 422);
    const key = readFileSync(path.join(t.dataDir, "keys", "secrets.key"), "utf8").trim();
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/unseal", { token: estate.session, body: { key } }), 204);
    expect((await expectStatus(await t.request("GET", "/api/v1/admin/secrets", { token: estate.session }), 200)).sealed).toBe(false);
    expect(await expectStatus(await p.req("GET", "/secrets/web/env"), 200)).toBe("API_KEY=kept-across-seal-2\n");
    await expectStatus(await p.req("POST", "/resources/job/uses-env/run"), 202);
    await t.core.scheduler.runDue();
    expect((await expectStatus(await p.req("GET", "/resources/job/uses-env/runs"), 200))[0].status).toBe("succeeded");
  });
  test("the store routes need estate.manage (403) and a credential (401)", async () => {
    const maint = await makePerson(t, [{ role: "maintainer", project: p.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/seal", { token: maint.session }), 403);
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/unseal", { token: maint.session, body: { key: "x" } }), 403);
    await expectStatus(await t.request("GET", "/api/v1/admin/secrets", { token: maint.session }), 403);
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/seal"), 401);
    await expectStatus(await t.request("GET", "/api/v1/admin/secrets"), 401);
    await expectStatus(await t.request("POST", "/api/v1/admin/secrets/unseal"), 401);
  });
});

describe("ops admin seal | unseal", () => {
  test("seal and unseal a running server with a token; the key comes from a file, never a flag", async () => {
    const a = io();
    expect(await runCli(["admin", "seal", "--server", t.url, "--token", estate.session], a.io)).toBe(0);
    expect(t.core.secrets.sealed).toBe(true);
    await expectStatus(await p.req("GET", "/secrets/web/env"), 503);
    const b = io();
    const keyFile = path.join(t.dataDir, "keys", "secrets.key");
    expect(await runCli(["admin", "unseal", "--server", t.url, "--token", estate.session, "--key-file", keyFile], b.io)).toBe(0);
    expect(t.core.secrets.sealed).toBe(false);
    await expectStatus(await p.req("GET", "/secrets/web/env"), 200);
  });
  test("no token: exit 3; a token without estate.manage: exit 5; unreachable: exit 4", async () => {
    expect(await runCli(["admin", "seal", "--server", t.url], io({}).io)).toBe(3);
    expect(await runCli(["admin", "seal", "--server", t.url, "--token", p.owner.session], io().io)).toBe(5);
    expect(await runCli(["admin", "seal", "--server", `http://127.0.0.1:${freePort()}`, "--token", estate.session], io().io)).toBe(4);
    expect(t.core.secrets.sealed).toBe(false);
  });
});

describe("ops admin rotate-secrets-key (offline)", () => {
  async function seed(dir: string, env: Record<string, string> = {}) {
    const a = await createTestApp({ dataDir: dir, env });
    const q = await projectWithOwner(a);
    await expectStatus(await q.req("POST", "/resources/service", { name: "web", spec: { image: "x" } }), 201);
    await expectStatus(await q.req("PUT", "/secrets/web/DB_URL", { value: "postgres://u:rotate-me@h/db" }), 204);
    await a.close();
    return q;
  }
  test("key in keys/secrets.key: rewraps every value and replaces the file; values read back after a restart", async () => {
    const dir = tempDir();
    try {
      const q = await seed(dir);
      const keyFile = path.join(dir, "keys", "secrets.key");
      const before = readFileSync(keyFile, "utf8");
      const c = io({ OPS_DATA_DIR: dir, OPS_LISTEN: `127.0.0.1:${freePort()}` });
      expect(await runCli(["admin", "rotate-secrets-key"], c.io)).toBe(0);
      expect(c.out.join("")).toContain("rewrapped");
      const after = readFileSync(keyFile, "utf8");
      expect(after).not.toBe(before);
      expect(c.out.join("")).not.toContain(after.trim());
      const b = await createTestApp({ dataDir: dir });
      expect(b.core.secrets.sealed).toBe(false);
      expect(await expectStatus(await b.request("GET", `${q.base}/secrets/web/env`, { token: q.owner.session }), 200)).toBe("DB_URL=postgres://u:rotate-me@h/db\n");
      await b.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("key from OPS_SECRETS_KEY: the new key is printed once; the old one no longer opens the store", async () => {
    const dir = tempDir();
    try {
      const oldKey = generateMasterKeyText();
      const q = await seed(dir, { OPS_SECRETS_KEY: oldKey });
      const c = io({ OPS_DATA_DIR: dir, OPS_SECRETS_KEY: oldKey, OPS_LISTEN: `127.0.0.1:${freePort()}` });
      expect(await runCli(["admin", "rotate-secrets-key"], c.io)).toBe(0);
      const newKey = c.out.join("").trim().split("\n").pop()!;
      expect(newKey).toMatch(/^[0-9a-f]{64}$/);
      const old = await createTestApp({ dataDir: dir, env: { OPS_SECRETS_KEY: oldKey } });
      expect(old.core.secrets.sealed).toBe(true);
      await expectStatus(await old.request("GET", `${q.base}/secrets/web/env`, { token: q.owner.session }), 503);
      await old.close();
      const b = await createTestApp({ dataDir: dir, env: { OPS_SECRETS_KEY: newKey } });
      expect(await expectStatus(await b.request("GET", `${q.base}/secrets/web/env`, { token: q.owner.session }), 200)).toBe("DB_URL=postgres://u:rotate-me@h/db\n");
      await b.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("refused while a server answers at the configured address", async () => {
    const c = io({ OPS_DATA_DIR: t.dataDir, OPS_PUBLIC_URL: t.url });
    expect(await runCli(["admin", "rotate-secrets-key"], c.io)).toBe(1);
    expect(c.err.join("")).toContain("stop it first");
  });
});
