import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { projectWithOwner, archiveProject, type ProjectCtx } from "../../../test/resources-helpers";
import { auditLog } from "../../core/tables";
import { desc } from "drizzle-orm";

let t: TestApp;
let p: ProjectCtx;
beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "web-env", spec: { variables: [{ name: "API_KEY", kind: "secret" }] } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "web", spec: { image: "ghcr.io/acme/web:1", port: 8080, health_check_path: "/healthz", replicas: 2, env_group: "web-env", limits: { cpu: 0.5, memory_mb: 512 } } }), 201);
});
afterAll(() => t.close());

describe("GET /api/v1/catalog", () => {
  test("200: the six types with a JSON Schema each", async () => {
    const body = await expectStatus<Array<{ type: string; scope: string; schema: { type: string; properties: Record<string, unknown> } }>>(await t.request("GET", "/api/v1/catalog", { token: p.owner.session }), 200);
    expect(body.map((b) => b.type)).toEqual(["service", "database", "bucket", "job", "domain", "secret-group"]);
    expect(body.find((b) => b.type === "bucket")?.scope).toBe("project");
    const svc = body.find((b) => b.type === "service")!;
    expect(svc.schema.type).toBe("object");
    for (const k of ["source", "image", "port", "health_check_path", "replicas", "env_group", "limits"]) expect(svc.schema.properties[k]).toBeDefined();
    expect(Object.keys(body.find((b) => b.type === "job")!.schema.properties)).toEqual(expect.arrayContaining(["command", "schedule", "timeout_secs", "env_group"]));
    expect(Object.keys(body.find((b) => b.type === "domain")!.schema.properties)).toEqual(expect.arrayContaining(["hosts", "service"]));
  });
  test("401 without a credential", async () => {
    await expectStatus(await t.request("GET", "/api/v1/catalog"), 401);
  });
});

describe("POST /api/v1/projects/{slug}/resources/{type}", () => {
  test("201: stored status is pending with the text null until first observed; version 1", async () => {
    const r = await expectStatus(await p.req("POST", "/resources/job", { name: "nightly", spec: { command: "echo hi", schedule: "0 3 * * *" } }), 201);
    expect(r.version).toBe(1);
    expect(r.environment).toBe("production");
    expect(r.status).toEqual({ detail: {}, observed_at: r.created_at, state: "pending", summary: "null" });
    expect(r.updated_by).toBe(p.owner.email);
    const audit = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(audit.action).toBe("resources.write");
    expect(audit.target).toBe("resource:job/nightly");
  });
  test("201: a bucket is project-level (environment null) whatever environment is asked", async () => {
    const r = await expectStatus(await t.request("POST", `${p.base}/resources/bucket?environment=staging`, { token: p.owner.session, body: { name: "uploads", spec: {} } }), 201);
    expect(r.environment).toBeNull();
  });
  test("404: no such project, or no such environment", async () => {
    await expectStatus(await t.request("POST", "/api/v1/projects/nope/resources/job", { token: p.owner.session, body: { name: "x", spec: { command: "true" } } }), 404);
    await expectStatus(await t.request("POST", `${p.base}/resources/job?environment=qa`, { token: p.owner.session, body: { name: "x", spec: { command: "true" } } }), 404);
  });
  test("409: the name exists", async () => {
    const body = await expectStatus(await p.req("POST", "/resources/service", { name: "web", spec: { image: "x" } }), 409);
    expect(body.error).toBe("already_exists");
  });
  test("409: the project is archived", async () => {
    const q = await projectWithOwner(t);
    archiveProject(t, q.slug);
    const body = await expectStatus(await q.req("POST", "/resources/job", { name: "x", spec: { command: "true" } }), 409);
    expect(body.error).toBe("archived");
  });
  test("422: unknown type, bad name, spec failing the schema, dangling reference", async () => {
    expect((await expectStatus(await p.req("POST", "/resources/lambda", { name: "x", spec: {} }), 422)).details.fields[0].path).toBe("type");
    await expectStatus(await p.req("POST", "/resources/job", { name: "Bad_Name", spec: { command: "true" } }), 422);
    const spec = await expectStatus(await p.req("POST", "/resources/service", { name: "bad", spec: { image: "x", replicas: -1, colour: "blue" } }), 422);
    expect(spec.details.fields.map((f: { path: string }) => f.path)).toEqual(expect.arrayContaining(["spec.replicas"]));
    const dangling = await expectStatus(await p.req("POST", "/resources/service", { name: "api", spec: { image: "x", env_group: "missing" } }), 422);
    expect(dangling.details.fields[0].path).toBe("spec.env_group");
    await expectStatus(await p.req("POST", "/resources/job", { name: "cron", spec: { command: "true", schedule: "every day" } }), 422);
    await expectStatus(await p.req("POST", "/resources/service", { name: "both", spec: { image: "x", source: { repo: "acme/web" } } }), 422);
  });
  test("401 and 403", async () => {
    await expectStatus(await t.request("POST", `${p.base}/resources/job`, { body: { name: "x", spec: { command: "true" } } }), 401);
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    await expectStatus(await p.req("POST", "/resources/job", { name: "x", spec: { command: "true" } }, viewer.session), 403);
  });
});

describe("GET /api/v1/projects/{slug}/resources", () => {
  test("200: one environment plus project-level ones, by type then name; environment defaults to production", async () => {
    await expectStatus(await t.request("POST", `${p.base}/resources/job?environment=staging`, { token: p.owner.session, body: { name: "staging-only", spec: { command: "true" } } }), 201);
    const prod = await expectStatus<Array<{ type: string; name: string }>>(await p.req("GET", "/resources"), 200);
    const keys = prod.map((r) => `${r.type}/${r.name}`);
    expect(keys).toContain("bucket/uploads");
    expect(keys).not.toContain("job/staging-only");
    expect([...keys].sort()).toEqual(keys);
    const staging = await expectStatus<Array<{ type: string; name: string }>>(await p.req("GET", "/resources?environment=staging"), 200);
    expect(staging.map((r) => `${r.type}/${r.name}`)).toEqual(["bucket/uploads", "job/staging-only"]);
    const onlyJobs = await expectStatus<Array<{ type: string }>>(await p.req("GET", "/resources?kind=job"), 200);
    expect(new Set(onlyJobs.map((r) => r.type))).toEqual(new Set(["job"]));
  });
  test("404: no such project or environment", async () => {
    await expectStatus(await t.request("GET", "/api/v1/projects/nope/resources", { token: p.owner.session }), 404);
    await expectStatus(await p.req("GET", "/resources?environment=qa"), 404);
  });
  test("401 and 403", async () => {
    await expectStatus(await t.request("GET", `${p.base}/resources`), 401);
    const stranger = await makePerson(t, []);
    await expectStatus(await p.req("GET", "/resources", undefined, stranger.session), 403);
  });
});

describe("GET /api/v1/projects/{slug}/resources/{type}[/{name}]", () => {
  test("200: list of one type by name; one resource", async () => {
    const list = await expectStatus<Array<{ name: string }>>(await p.req("GET", "/resources/service"), 200);
    expect(list.map((r) => r.name)).toEqual(["web"]);
    const one = await expectStatus(await p.req("GET", "/resources/service/web"), 200);
    expect(one.spec.limits).toEqual({ cpu: 0.5, memory_mb: 512 });
  });
  test("404: unknown resource, project or environment", async () => {
    await expectStatus(await p.req("GET", "/resources/service/nope"), 404);
    await expectStatus(await t.request("GET", "/api/v1/projects/nope/resources/service", { token: p.owner.session }), 404);
    await expectStatus(await p.req("GET", "/resources/service?environment=qa"), 404);
  });
  test("422: unknown type", async () => {
    await expectStatus(await p.req("GET", "/resources/lambda"), 422);
    await expectStatus(await p.req("GET", "/resources/lambda/x"), 422);
  });
});

describe("PUT /api/v1/projects/{slug}/resources/{type}/{name}", () => {
  test("201 creates, 200 replaces; version bumps on every put, an unchanged spec included", async () => {
    const spec = { hosts: ["www.example.com", "example.com"], service: "web" };
    const a = await expectStatus(await p.req("PUT", "/resources/domain/site", { spec }), 201);
    expect(a.version).toBe(1);
    const b = await expectStatus(await p.req("PUT", "/resources/domain/site", { spec }), 200);
    expect(b.version).toBe(2);
    const c = await expectStatus(await p.req("PUT", "/resources/domain/site", { spec, version: 2 }), 200);
    expect(c.version).toBe(3);
  });
  test("409: a version that is not the current one (optimistic concurrency); 0 only creates", async () => {
    const stale = await expectStatus(await p.req("PUT", "/resources/domain/site", { spec: { hosts: ["example.com"], service: "web" }, version: 1 }), 409);
    expect(stale.details.current_version).toBe(3);
    await expectStatus(await p.req("PUT", "/resources/domain/site", { spec: { hosts: ["example.com"], service: "web" }, version: 0 }), 409);
    await expectStatus(await p.req("PUT", "/resources/domain/fresh", { spec: { hosts: ["fresh.example.com"], service: "web" }, version: 0 }), 201);
    await expectStatus(await p.req("PUT", "/resources/domain/ghost", { spec: { hosts: ["ghost.example.com"], service: "web" }, version: 4 }), 409);
  });
  test("409: a host another domain routes; the project is archived", async () => {
    const body = await expectStatus(await p.req("PUT", "/resources/domain/other", { spec: { hosts: ["example.com"], service: "web" } }), 409);
    expect(body.details.host).toBe("example.com");
    const q = await projectWithOwner(t);
    archiveProject(t, q.slug);
    await expectStatus(await q.req("PUT", "/resources/job/x", { spec: { command: "true" } }), 409);
  });
  test("404: no such project or environment", async () => {
    await expectStatus(await t.request("PUT", "/api/v1/projects/nope/resources/job/x", { token: p.owner.session, body: { spec: { command: "true" } } }), 404);
    await expectStatus(await t.request("PUT", `${p.base}/resources/job/x?environment=qa`, { token: p.owner.session, body: { spec: { command: "true" } } }), 404);
  });
  test("422: unknown type, bad name, spec failing the schema", async () => {
    await expectStatus(await p.req("PUT", "/resources/lambda/x", { spec: {} }), 422);
    await expectStatus(await p.req("PUT", "/resources/job/-bad", { spec: { command: "true" } }), 422);
    await expectStatus(await p.req("PUT", "/resources/domain/site", { spec: { hosts: ["NOT A HOST"], service: "web" } }), 422);
    await expectStatus(await p.req("PUT", "/resources/domain/site", { spec: { hosts: ["a.example.com"], service: "missing" } }), 422);
  });
});

describe("DELETE /api/v1/projects/{slug}/resources/{type}/{name}", () => {
  test("204, then 404", async () => {
    await expectStatus(await p.req("PUT", "/resources/job/temp", { spec: { command: "true" } }), 201);
    await expectStatus(await p.req("DELETE", "/resources/job/temp"), 204);
    await expectStatus(await p.req("DELETE", "/resources/job/temp"), 404);
    await expectStatus(await p.req("GET", "/resources/job/temp"), 404);
  });
  test("409: refused while it would leave something unmanaged (a domain routes to the service; a group in use)", async () => {
    const svc = await expectStatus(await p.req("DELETE", "/resources/service/web"), 409);
    expect(svc.message).toContain("routes to service");
    const grp = await expectStatus(await p.req("DELETE", "/resources/secret-group/web-env"), 409);
    expect(grp.message).toContain("mounted by");
  });
  test("409: project archived", async () => {
    const q = await projectWithOwner(t);
    await expectStatus(await q.req("PUT", "/resources/job/x", { spec: { command: "true" } }), 201);
    archiveProject(t, q.slug);
    expect((await expectStatus(await q.req("DELETE", "/resources/job/x"), 409)).error).toBe("archived");
  });
  test("422: unknown type or bad name", async () => {
    await expectStatus(await p.req("DELETE", "/resources/lambda/x"), 422);
    await expectStatus(await p.req("DELETE", "/resources/job/Bad_Name"), 422);
  });
  test("403: a developer lacks resources.destroy", async () => {
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    await expectStatus(await p.req("DELETE", "/resources/job/nightly", undefined, dev.session), 403);
  });
});

describe("POST /api/v1/projects/{slug}/resources/{type}/{name}/observe", () => {
  test("200: a fresh status is stored (job: ready, never run; service: pending, not deployed)", async () => {
    t.clock.advance(60_000);
    const job = await expectStatus(await p.req("POST", "/resources/job/nightly/observe"), 200);
    expect(job.status.state).toBe("ready");
    expect(job.status.summary).toContain("never run");
    expect(job.status.detail.next_run_at).toBe("2026-11-22T03:00:00.000Z");
    expect(job.status.observed_at).toBe(new Date(t.clock.now()).toISOString());
    const dom = await expectStatus(await p.req("POST", "/resources/domain/site/observe"), 200);
    expect(dom.status.detail.service).toBe("web");
    const again = await expectStatus(await p.req("GET", "/resources/job/nightly"), 200);
    expect(again.status.state).toBe("ready");
  });
  test("404, 409 archived, 422", async () => {
    await expectStatus(await p.req("POST", "/resources/job/nope/observe"), 404);
    await expectStatus(await p.req("POST", "/resources/lambda/x/observe"), 422);
    const q = await projectWithOwner(t);
    await expectStatus(await q.req("PUT", "/resources/job/x", { spec: { command: "true" } }), 201);
    archiveProject(t, q.slug);
    await expectStatus(await q.req("POST", "/resources/job/x/observe"), 409);
  });
  test("503: the thing cannot be observed now (a database with no plane configured)", async () => {
    await expectStatus(await p.req("POST", "/resources/database", { name: "legacy", spec: { engine: "postgres", adopted: true, database: "legacy_db" } }), 201);
    const body = await expectStatus(await p.req("POST", "/resources/database/legacy/observe"), 503);
    expect(body.error).toBe("unavailable");
  });
});

describe("OpenAPI", () => {
  test("every route of the spec's Resources and Secrets sections is documented with its permission and schemas", async () => {
    const doc = await (await t.request("GET", "/api/docs/json")).json();
    const want: Array<[string, string, string]> = [
      ["get", "/api/v1/projects/{slug}/resources", "resources.read"],
      ["post", "/api/v1/projects/{slug}/resources/bucket/{name}/check", "resources.read"],
      ["get", "/api/v1/projects/{slug}/resources/database/{name}/restore-runbook", "databases.manage"],
      ["post", "/api/v1/projects/{slug}/resources/database/{name}/rotate-password", "databases.manage"],
      ["post", "/api/v1/projects/{slug}/resources/job/{name}/run", "jobs.run"],
      ["get", "/api/v1/projects/{slug}/resources/job/{name}/runs", "resources.read"],
      ["get", "/api/v1/projects/{slug}/resources/job/{name}/runs/{id}/log", "resources.read"],
      ["post", "/api/v1/projects/{slug}/resources/secret-group/{name}/rotate", "secrets.rotate"],
      ["get", "/api/v1/projects/{slug}/resources/secret-group/{name}/variables", "secrets.read"],
      ["put", "/api/v1/projects/{slug}/resources/secret-group/{name}/variables/{key}", "secrets.write"],
      ["delete", "/api/v1/projects/{slug}/resources/secret-group/{name}/variables/{key}", "secrets.write"],
      ["get", "/api/v1/projects/{slug}/resources/secret-group/{name}/versions", "secrets.read"],
      ["get", "/api/v1/projects/{slug}/resources/{type}", "resources.read"],
      ["post", "/api/v1/projects/{slug}/resources/{type}", "resources.write"],
      ["get", "/api/v1/projects/{slug}/resources/{type}/{name}", "resources.read"],
      ["put", "/api/v1/projects/{slug}/resources/{type}/{name}", "resources.write"],
      ["delete", "/api/v1/projects/{slug}/resources/{type}/{name}", "resources.destroy"],
      ["post", "/api/v1/projects/{slug}/resources/{type}/{name}/observe", "resources.read"],
      ["get", "/api/v1/projects/{slug}/secrets", "secrets.read"],
      ["get", "/api/v1/projects/{slug}/secrets/{service}/env", "secrets.reveal"],
      ["put", "/api/v1/projects/{slug}/secrets/{service}/{name}", "secrets.write"],
      ["delete", "/api/v1/projects/{slug}/secrets/{service}/{name}", "secrets.write"],
      ["get", "/api/v1/catalog", "authenticated"],
    ];
    for (const [method, path, key] of want) {
      const op = doc.paths[path]?.[method];
      expect({ path, method, found: !!op }).toEqual({ path, method, found: true });
      expect(op["x-permission"]).toBe(key);
      expect(Object.keys(op.responses).length).toBeGreaterThan(1);
    }
    for (const name of ["ResourceResponse", "ResourceStatus", "CreateResourceRequest", "SetResourceRequest", "RestoreRunbookResponse", "JobRunResponse", "JobLogResponse", "JobLogLine", "RotateGroupResponse", "SkippedService", "VariableResponse", "SetVariableRequest", "RenderedVersion", "SecretMetaResponse", "SetSecretRequest"]) {
      expect(doc.components.schemas[name]).toBeDefined();
    }
  });
});
