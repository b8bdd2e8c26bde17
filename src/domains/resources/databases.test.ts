/**
 * Databases against the real PostgreSQL server of this machine (127.0.0.1:5432, user postgres).
 * Each test app uses a unique project slug, so plane names never collide; everything created is
 * dropped afterwards.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { SQL } from "bun";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { scramMatches } from "../../adapters/dbplane/postgres";
import { secretVariables } from "../secrets/tables";
import { PITR_TEXT } from "./databases";

const PLANE = "postgres://postgres@127.0.0.1:5432/postgres";
const admin = new SQL(PLANE, { max: 1 });
let t: TestApp;
let p: ProjectCtx;

async function planeNames(prefix: string): Promise<{ dbs: string[]; roles: string[] }> {
  const dbs = (await admin`select datname from pg_database where datname like ${prefix + "%"}`).map((r: { datname: string }) => r.datname);
  const roles = (await admin`select rolname from pg_roles where rolname like ${prefix + "%"}`).map((r: { rolname: string }) => r.rolname);
  return { dbs, roles };
}

async function dropAll(prefix: string) {
  const { dbs, roles } = await planeNames(prefix);
  for (const d of dbs) await admin.unsafe(`DROP DATABASE IF EXISTS "${d}" WITH (FORCE)`);
  for (const r of roles) await admin.unsafe(`DROP ROLE IF EXISTS "${r}"`);
}

function planePrefix(slug: string) {
  return `ops_${slug.replace(/-/g, "_")}_`;
}

async function groupValue(name: string, group = "api-env"): Promise<string> {
  const res = await expectStatus(await p.req("GET", `/resources/secret-group/${group}/variables`), 200);
  expect(res.find((v: { name: string }) => v.name === name)?.has_value).toBe(true);
  const { eq, and } = await import("drizzle-orm");
  const g = (await expectStatus(await p.req("GET", `/resources/secret-group/${group}`), 200)).id;
  const row = t.core.db.select().from(secretVariables).where(and(eq(secretVariables.groupId, g), eq(secretVariables.name, name))).get()!;
  return t.core.secrets.get(t.core.db, row.valueId);
}

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DB_PLANE_URL: PLANE, OPS_DB_PLANE_PITR: "true", OPS_DB_PLANE_STANZA: "ops-plane" } });
  p = await projectWithOwner(t);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "api-env", spec: { variables: [] } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "api", spec: { image: "acme/api:1", env_group: "api-env" } }), 201);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "copy-env", spec: { variables: [] } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "bare", spec: { image: "acme/bare:1" } }), 201);
});
afterAll(async () => {
  await t.close();
  await dropAll(planePrefix(p.slug));
  await admin.close();
});

describe("database create, rotate-password and a connection with the new password (real PostgreSQL)", () => {
  test("201: provisions a database and a role; the connection string lands in the service's env group", async () => {
    const r = await expectStatus(await p.req("POST", "/resources/database", { name: "main", spec: { engine: "postgres", version: "15", size: "small", service: "api" } }), 201);
    expect(r.spec).toEqual({ engine: "postgres", version: "15", size: "small", service: "api" });
    const name = `${planePrefix(p.slug)}production_main`;
    expect(await planeNames(name)).toEqual({ dbs: [name], roles: [name] });
    const url = await groupValue("DATABASE_URL");
    expect(url).toStartWith(`postgres://${name}:`);
    expect(url).toEndWith(`@127.0.0.1:5432/${name}`);
    const conn = new SQL(url, { max: 1 });
    const who = await conn`select current_user as u, current_database() as d`;
    expect(who[0]).toEqual({ u: name, d: name });
    await conn`create table notes (id int)`;
    await conn.close();
    // The role's stored verifier is the password in the connection string.
    const password = decodeURIComponent(new URL(url).password);
    const stored = (await admin`select rolpassword from pg_authid where rolname = ${name}`)[0].rolpassword as string;
    expect(scramMatches(stored, password)).toBe(true);
    // The plane never saw the password in clear: it got a SCRAM verifier.
    expect(stored.startsWith("SCRAM-SHA-256$4096:")).toBe(true);
  });
  test("observe reports size and connections", async () => {
    const r = await expectStatus(await p.req("POST", "/resources/database/main/observe"), 200);
    expect(r.status.state).toBe("ready");
    expect(r.status.detail.size_bytes).toBeGreaterThan(1000);
    expect(r.status.detail.connections).toBeGreaterThanOrEqual(0);
    expect(r.status.detail.server_version).toMatch(/^\d+/);
  });
  test("rotate-password: a new role password, every connection string rewritten, the new one connects", async () => {
    const oldUrl = await groupValue("DATABASE_URL");
    const oldPassword = decodeURIComponent(new URL(oldUrl).password);
    await expectStatus(await p.req("PUT", "/resources/secret-group/copy-env/variables/MAIN_DB", { value: `${oldUrl}?application_name=copy` }), 200);
    await expectStatus(await p.req("PUT", "/secrets/bare/LEGACY_URL", { value: oldUrl }), 204);
    const before = await expectStatus(await p.req("GET", "/resources/database/main"), 200);
    const r = await expectStatus(await p.req("POST", "/resources/database/main/rotate-password"), 200);
    expect(r.version).toBe(before.version + 1);
    const newUrl = await groupValue("DATABASE_URL");
    const newPassword = decodeURIComponent(new URL(newUrl).password);
    expect(newPassword).not.toBe(oldPassword);
    expect(await groupValue("MAIN_DB", "copy-env")).toBe(`${newUrl}?application_name=copy`);
    expect(await expectStatus(await p.req("GET", "/secrets/bare/env"), 200)).toBe(`LEGACY_URL=${newUrl}\n`);
    const vars = await expectStatus(await p.req("GET", "/resources/secret-group/api-env/variables"), 200);
    expect(vars[0]).toMatchObject({ name: "DATABASE_URL", version: 2, pending: true });
    const name = `${planePrefix(p.slug)}production_main`;
    const stored = (await admin`select rolpassword from pg_authid where rolname = ${name}`)[0].rolpassword as string;
    expect(scramMatches(stored, newPassword)).toBe(true);
    expect(scramMatches(stored, oldPassword)).toBe(false);
    const conn = new SQL(newUrl, { max: 1 });
    expect((await conn`select count(*)::int as n from notes`)[0].n).toBe(0);
    await conn.close();
  });
  test("rotate-password 409 for an adopted database; 404 unknown; 403 for a developer", async () => {
    await expectStatus(await p.req("POST", "/resources/database", { name: "legacy", spec: { engine: "postgres", adopted: true, database: "postgres" } }), 201);
    expect((await expectStatus(await p.req("POST", "/resources/database/legacy/rotate-password"), 409)).message).toContain("adopted");
    await expectStatus(await p.req("POST", "/resources/database/nope/rotate-password"), 404);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    await expectStatus(await p.req("POST", "/resources/database/main/rotate-password", undefined, dev.session), 403);
    const obs = await expectStatus(await p.req("POST", "/resources/database/legacy/observe"), 200);
    expect(obs.status.detail.adopted).toBe(true);
  });
  test("rotate-password 409 when the plane refuses (the role is gone)", async () => {
    await expectStatus(await p.req("POST", "/resources/secret-group", { name: "tmp-env", spec: { variables: [] } }), 201);
    await expectStatus(await p.req("POST", "/resources/service", { name: "tmp", spec: { image: "x", env_group: "tmp-env" } }), 201);
    await expectStatus(await p.req("POST", "/resources/database", { name: "doomed", spec: { engine: "postgres", service: "tmp" } }), 201);
    const name = `${planePrefix(p.slug)}production_doomed`;
    await admin.unsafe(`DROP DATABASE "${name}" WITH (FORCE)`);
    await admin.unsafe(`DROP ROLE "${name}"`);
    const body = await expectStatus(await p.req("POST", "/resources/database/doomed/rotate-password"), 409);
    expect(body.message).toContain("refused");
    const obs = await expectStatus(await p.req("POST", "/resources/database/doomed/observe"), 200);
    expect(obs.status.state).toBe("error");
  });
  test("rotate-password 503 while the store is sealed", async () => {
    t.core.secrets.seal();
    try {
      expect((await expectStatus(await p.req("POST", "/resources/database/main/rotate-password"), 503)).error).toBe("sealed");
      expect((await expectStatus(await p.req("POST", "/resources/database", { name: "later", spec: { engine: "postgres", service: "api" } }), 503)).error).toBe("sealed");
    } finally {
      t.core.secrets.open();
    }
    expect(t.core.secrets.sealed).toBe(false);
  });
  test("restore-runbook: pgBackRest steps for the plane's stanza; backup text from OPS_DB_PLANE_PITR", async () => {
    const r = await expectStatus(await p.req("GET", "/resources/database/main/restore-runbook"), 200);
    const name = `${planePrefix(p.slug)}production_main`;
    expect(r).toMatchObject({ backup: PITR_TEXT, database: name, stanza: "ops-plane" });
    expect(r.steps[0]).toBe("pgbackrest --stanza=ops-plane info");
    expect(r.steps.some((s: string) => s.includes(`--db-include=${name}`) && s.includes("--type=time"))).toBe(true);
    expect(r.text).toBe(r.steps.join("\n"));
    for (const s of r.steps) expect(s).not.toContain("@");
    await expectStatus(await p.req("GET", "/resources/database/nope/restore-runbook"), 404);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    await expectStatus(await p.req("GET", "/resources/database/main/restore-runbook", undefined, dev.session), 403);
  });
  test("422: a database with no service, a service without env group; immutable fields on replace", async () => {
    await expectStatus(await p.req("POST", "/resources/database", { name: "orphan", spec: { engine: "postgres" } }), 422);
    await expectStatus(await p.req("POST", "/resources/database", { name: "nogroup", spec: { engine: "postgres", service: "bare" } }), 422);
    await expectStatus(await p.req("POST", "/resources/database", { name: "mysql", spec: { engine: "mysql", service: "api" } }), 422);
    await expectStatus(await p.req("PUT", "/resources/database/main", { spec: { engine: "postgres", service: "bare" } }), 422);
    const resized = await expectStatus(await p.req("PUT", "/resources/database/main", { spec: { engine: "postgres", version: "15", size: "medium", service: "api" } }), 200);
    expect(resized.spec.size).toBe("medium");
    const name = `${planePrefix(p.slug)}production_main`;
    expect((await admin`select datconnlimit from pg_database where datname = ${name}`)[0].datconnlimit).toBe(50);
  });
  test("delete: 409 without the typed confirm; with it, the database and role are dropped", async () => {
    const name = `${planePrefix(p.slug)}production_main`;
    expect((await expectStatus(await p.req("DELETE", "/resources/database/main"), 409)).message).toContain("confirm=main");
    await expectStatus(await p.req("DELETE", "/resources/database/main?confirm=wrong"), 409);
    await expectStatus(await p.req("DELETE", "/resources/database/main?confirm=main"), 204);
    expect(await planeNames(name)).toEqual({ dbs: [], roles: [] });
    await expectStatus(await p.req("DELETE", "/resources/database/legacy?confirm=legacy"), 204);
    expect((await admin`select 1 from pg_database where datname = 'postgres'`).length).toBe(1);
  });
});

describe("without a plane", () => {
  test("creating a database answers a clear refusal (422) naming OPS_DB_PLANE_URL", async () => {
    const bare = await createTestApp();
    try {
      const q = await projectWithOwner(bare);
      await expectStatus(await q.req("POST", "/resources/secret-group", { name: "e", spec: { variables: [] } }), 201);
      await expectStatus(await q.req("POST", "/resources/service", { name: "s", spec: { image: "x", env_group: "e" } }), 201);
      const body = await expectStatus(await q.req("POST", "/resources/database", { name: "db", spec: { engine: "postgres", service: "s" } }), 422);
      expect(body.error).toBe("refused");
      expect(body.message).toContain("OPS_DB_PLANE_URL");
      await expectStatus(await q.req("GET", "/resources/database/db"), 404);
    } finally {
      await bare.close();
    }
  });
});
