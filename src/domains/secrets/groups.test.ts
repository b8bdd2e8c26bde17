import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { desc, eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { projectWithOwner, archiveProject, type ProjectCtx } from "../../../test/resources-helpers";
import { auditLog } from "../../core/tables";
import { secretGroupRenders } from "./tables";

let t: TestApp;
let p: ProjectCtx;
const G = "/resources/secret-group/app-env";

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "app-env", spec: { variables: [{ name: "DB_PASSWORD", kind: "secret" }, { name: "LOG_LEVEL", kind: "text" }] } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "api", spec: { image: "acme/api:1", env_group: "app-env" } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "idle", spec: { image: "acme/idle:1", env_group: "app-env", replicas: 0 } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "other", spec: { image: "acme/other:1" } }), 201);
});
afterAll(() => t.close());

describe("GET …/secret-group/{name}/variables", () => {
  test("200: declared variables without values have_value false, version 0", async () => {
    const vars = await expectStatus(await p.req("GET", `${G}/variables`), 200);
    expect(vars).toEqual([
      { has_value: false, kind: "secret", name: "DB_PASSWORD", pending: false, updated_at: null, value: null, version: 0 },
      { has_value: false, kind: "text", name: "LOG_LEVEL", pending: false, updated_at: null, value: null, version: 0 },
    ]);
  });
  test("200: secret values never; text values for secrets.reveal (audited), not for secrets.read alone", async () => {
    await expectStatus(await p.req("PUT", `${G}/variables/DB_PASSWORD`, { value: "pw-8d1e2f" }), 200);
    await expectStatus(await p.req("PUT", `${G}/variables/LOG_LEVEL`, { value: "debug" }), 200);
    const owner = await expectStatus(await p.req("GET", `${G}/variables`), 200);
    expect(owner.find((v: { name: string }) => v.name === "DB_PASSWORD").value).toBeNull();
    expect(owner.find((v: { name: string }) => v.name === "LOG_LEVEL").value).toBe("debug");
    const row = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(row.action).toBe("secrets.reveal");
    expect(row.target).toBe("secret-group:app-env");
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const devVars = await expectStatus(await p.req("GET", `${G}/variables`, undefined, dev.session), 200);
    expect(devVars.every((v: { value: unknown }) => v.value === null)).toBe(true);
    expect(devVars.find((v: { name: string }) => v.name === "LOG_LEVEL")).toMatchObject({ has_value: true, version: 1, pending: true });
  });
  test("404 no such group; 401; 403 without secrets.read", async () => {
    await expectStatus(await p.req("GET", "/resources/secret-group/nope/variables"), 404);
    await expectStatus(await t.request("GET", `${p.base}${G}/variables`), 401);
    const stranger = await makePerson(t, []);
    await expectStatus(await p.req("GET", `${G}/variables`, undefined, stranger.session), 403);
  });
});

describe("PUT …/secret-group/{name}/variables/{key}", () => {
  test("200: a new name is appended to the group's spec (names and kinds only); version bumps on change", async () => {
    const before = await expectStatus(await p.req("GET", "/resources/secret-group/app-env"), 200);
    const v = await expectStatus(await p.req("PUT", `${G}/variables/FEATURE_FLAGS`, { value: "a,b", kind: "text" }), 200);
    expect(v).toMatchObject({ name: "FEATURE_FLAGS", kind: "text", has_value: true, version: 1, pending: true, value: "a,b" });
    const after = await expectStatus(await p.req("GET", "/resources/secret-group/app-env"), 200);
    expect(after.spec.variables).toEqual([...before.spec.variables, { name: "FEATURE_FLAGS", kind: "text" }]);
    expect(after.version).toBe(before.version + 1);
    const again = await expectStatus(await p.req("PUT", `${G}/variables/FEATURE_FLAGS`, { value: "a,b,c", kind: "secret" }), 200);
    expect(again).toMatchObject({ version: 2, kind: "text" });
    expect((await expectStatus(await p.req("GET", "/resources/secret-group/app-env"), 200)).version).toBe(after.version);
  });
  test("422: a name not shaped like an environment variable; a kind other than secret or text", async () => {
    await expectStatus(await p.req("PUT", `${G}/variables/1BAD`, { value: "x" }), 422);
    await expectStatus(await p.req("PUT", `${G}/variables/has-dash`, { value: "x" }), 422);
    const kind = await expectStatus(await p.req("PUT", `${G}/variables/GOOD`, { value: "x", kind: "password" }), 422);
    expect(kind.details.fields[0].path).toBe("kind");
    await expectStatus(await p.req("PUT", `${G}/variables/GOOD`, { kind: "text" }), 422);
  });
  test("404 no such group or environment; 409 archived project; 403 for a viewer", async () => {
    await expectStatus(await p.req("PUT", "/resources/secret-group/nope/variables/X", { value: "x" }), 404);
    await expectStatus(await t.request("PUT", `${p.base}${G}/variables/X?environment=qa`, { token: p.owner.session, body: { value: "x" } }), 404);
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    await expectStatus(await p.req("PUT", `${G}/variables/X`, { value: "x" }, viewer.session), 403);
    const q = await projectWithOwner(t);
    await expectStatus(await q.req("POST", "/resources/secret-group", { name: "g", spec: { variables: [] } }), 201);
    archiveProject(t, q.slug);
    await expectStatus(await q.req("PUT", "/resources/secret-group/g/variables/X", { value: "x" }), 409);
  });
});

describe("POST …/secret-group/{name}/rotate and GET …/versions", () => {
  test("200: renders <name>.env.v<n>; services that mount it and never ran, or are scaled to zero, are skipped with the reason", async () => {
    // Services that run are restarted by the deployments domain (rolled): test/deploy-restarts.test.ts.
    const r = await expectStatus(await p.req("POST", `${G}/rotate`), 200);
    expect(r).toMatchObject({ state: "rendered", secret: "app-env.env.v1", version: 1, rolled: [], reason: null });
    expect(r.skipped).toEqual([
      { service: "api", reason: "not deployed yet: it mounts the new version when it is first deployed" },
      { service: "idle", reason: "scaled to zero (replicas: 0); it mounts the new version when it starts" },
    ]);
    const api = await expectStatus(await p.req("GET", "/resources/service/api"), 200);
    expect(api.status).toMatchObject({ state: "pending", summary: "null" });
    const other = await expectStatus(await p.req("GET", "/resources/service/other"), 200);
    expect(other.status.summary).toBe("null");
    const vars = await expectStatus(await p.req("GET", `${G}/variables`), 200);
    expect(vars.every((v: { pending: boolean }) => !v.pending)).toBe(true);
    const observed = await expectStatus(await p.req("POST", "/resources/service/api/observe"), 200);
    expect(observed.status.summary).toBe("not deployed");
  });
  test("the render holds every value as a dotenv document, sealed", async () => {
    const row = t.core.db.select().from(secretGroupRenders).where(eq(secretGroupRenders.secret, "app-env.env.v1")).get()!;
    expect(t.core.secrets.get(t.core.db, row.valueId)).toBe("DB_PASSWORD=pw-8d1e2f\nLOG_LEVEL=debug\nFEATURE_FLAGS=a,b,c\n");
  });
  test("versions: newest first with current; a change is pending until the next rotate", async () => {
    await expectStatus(await p.req("PUT", `${G}/variables/LOG_LEVEL`, { value: "info" }), 200);
    const vars = await expectStatus(await p.req("GET", `${G}/variables`), 200);
    expect(vars.find((v: { name: string }) => v.name === "LOG_LEVEL").pending).toBe(true);
    t.clock.advance(1000);
    const r2 = await expectStatus(await p.req("POST", `${G}/rotate`), 200);
    expect(r2.secret).toBe("app-env.env.v2");
    const versions = await expectStatus(await p.req("GET", `${G}/versions`), 200);
    expect(versions.map((v: { version: number; current: boolean; secret: string }) => [v.version, v.current, v.secret])).toEqual([
      [2, true, "app-env.env.v2"],
      [1, false, "app-env.env.v1"],
    ]);
    expect(versions[0].actor).toBe(p.owner.email);
    expect(versions[0].rendered_at).toBe(new Date(t.clock.now()).toISOString());
  });
  test("observe: ready when every declared variable is set and rendered", async () => {
    const g = await expectStatus(await p.req("POST", "/resources/secret-group/app-env/observe"), 200);
    expect(g.status).toMatchObject({ state: "ready", detail: { variables: 3, with_value: 3, pending: 0, current_version: 2 } });
  });
  test("409: no variables to render", async () => {
    await expectStatus(await p.req("POST", "/resources/secret-group", { name: "empty", spec: { variables: [{ name: "UNSET", kind: "secret" }] } }), 201);
    await expectStatus(await p.req("POST", "/resources/secret-group/empty/rotate"), 409);
  });
  test("404 no such group; 403 without secrets.rotate (a developer)", async () => {
    await expectStatus(await p.req("POST", "/resources/secret-group/nope/rotate"), 404);
    await expectStatus(await p.req("GET", "/resources/secret-group/nope/versions"), 404);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    await expectStatus(await p.req("POST", `${G}/rotate`, undefined, dev.session), 403);
  });
});

describe("DELETE …/secret-group/{name}/variables/{key}", () => {
  test("204: the value and the declaration go; then 404", async () => {
    await expectStatus(await p.req("DELETE", `${G}/variables/FEATURE_FLAGS`), 204);
    const g = await expectStatus(await p.req("GET", "/resources/secret-group/app-env"), 200);
    expect(g.spec.variables.map((v: { name: string }) => v.name)).toEqual(["DB_PASSWORD", "LOG_LEVEL"]);
    await expectStatus(await p.req("DELETE", `${G}/variables/FEATURE_FLAGS`), 404);
  });
  test("204: a declared variable with no value can be deleted; 404 no such group", async () => {
    await expectStatus(await p.req("DELETE", "/resources/secret-group/empty/variables/UNSET"), 204);
    await expectStatus(await p.req("DELETE", "/resources/secret-group/nope/variables/X"), 404);
  });
  test("a replaced group spec may not drop a name with a stored value (409; values go through the secrets route)", async () => {
    const before = await expectStatus(await p.req("GET", `${G}/variables`), 200);
    const kept = before.filter((v: { has_value: boolean }) => v.has_value).map((v: { name: string }) => v.name);
    expect(kept).toContain("LOG_LEVEL");
    const refused = await expectStatus(await p.req("PUT", "/resources/secret-group/app-env", { spec: { variables: [{ name: "DB_PASSWORD", kind: "secret" }] } }), 409);
    expect(refused.details.variables).toContain("LOG_LEVEL");
    await expectStatus(await p.req("DELETE", `${G}/variables/LOG_LEVEL`), 204);
    await expectStatus(await p.req("PUT", "/resources/secret-group/app-env", { spec: { variables: [{ name: "DB_PASSWORD", kind: "secret" }] } }), 200);
    const vars = await expectStatus(await p.req("GET", `${G}/variables`), 200);
    expect(vars.map((v: { name: string }) => v.name)).toEqual(["DB_PASSWORD"]);
  });
});
