/**
 * The authorization macro inside a real app: a small test domain declares routes with
 * `permission:` and `public:` and installs access hooks that map a bearer (or cookie) to a fixed
 * principal. Every request goes over HTTP to the live listener.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { Elysia, t } from "elysia";
import { createTestApp, expectStatus, fakePrincipal, type TestApp } from "../../../test/harness";
import type { DomainModule, ProjectRef, AccessHooks } from "../core";
import type { Principal } from "./principal";
import type { Grants } from "./effective";
import { FIXED_ROLES } from "./catalog";
import { authzPlugin, type ResolveContext } from "./plugin";
import { auditLog } from "../tables";

const role = (slug: string) => FIXED_ROLES.find((r) => r.slug === slug)!.permissions;

const PROJECTS: ProjectRef[] = [
  { id: "p-shop", slug: "shop", name: "Shop", archived: false, environments: ["production", "staging"] },
  { id: "p-blog", slug: "blog", name: "Blog", archived: false, environments: ["production"] },
];

const person = fakePrincipal;

/** Who each test bearer is, and what they hold. */
const PEOPLE: Record<string, { principal: Principal; grants: Grants }> = {
  owner: { principal: person("owner"), grants: { memberships: [{ projectId: null, roleId: "owner", permissions: role("owner") }], policies: [] } },
  dev: {
    principal: person("dev"),
    grants: {
      memberships: [{ projectId: "p-shop", roleId: "developer", permissions: role("developer") }],
      // In shop/production a developer may only read.
      policies: [{ projectId: "p-shop", environment: "production", roleId: "developer", allowed: ["project.read", "resources.read", "obs.read"] }],
    },
  },
  viewer: { principal: person("viewer"), grants: { memberships: [{ projectId: "p-shop", roleId: "viewer", permissions: role("viewer") }], policies: [] } },
  shopowner: { principal: person("shopowner"), grants: { memberships: [{ projectId: "p-shop", roleId: "owner", permissions: role("owner") }], policies: [] } },
  suspended: { principal: person("suspended", { suspended: true }), grants: { memberships: [{ projectId: null, roleId: "owner", permissions: role("owner") }], policies: [] } },
  loner: { principal: person("loner"), grants: { memberships: [], policies: [] } },
};

const testAccess: AccessHooks = {
  authenticate(creds) {
    if (creds.bearer === "broken") throw new Error("the token table is on fire");
    if (creds.bearer && PEOPLE[creds.bearer]) return PEOPLE[creds.bearer].principal;
    if (creds.cookie && PEOPLE[creds.cookie]) return { ...PEOPLE[creds.cookie].principal, viaCookie: true };
    return null;
  },
  findProject: (slug) => PROJECTS.find((p) => p.slug === slug) ?? null,
  findProjectById: (id) => PROJECTS.find((p) => p.id === id) ?? null,
  grants: (p) => Object.values(PEOPLE).find((x) => x.principal.operatorId === p.operatorId)?.grants ?? { memberships: [], policies: [] },
};

const Where = t.Object({ project: t.Union([t.String(), t.Null()]), environment: t.Union([t.String(), t.Null()]), actor: t.String() });

const testDomain: DomainModule = {
  name: "authz-test",
  install(core) {
    core.access = testAccess;
  },
  routes(core) {
    const where = (auth: { project: ProjectRef | null; environment: string | null; principal: Principal }) => ({
      project: auth.project?.slug ?? null,
      environment: auth.environment,
      actor: auth.principal.actor,
    });
    return new Elysia({ name: "authz-test-routes" })
      .use(authzPlugin(core))
      .get("/t/open", () => ({ open: true }), { public: true })
      .get("/t/me", ({ auth }) => where(auth), { permission: "authenticated", response: Where })
      .get("/t/things", ({ auth }) => where(auth), { permission: "resources.read", response: Where })
      .get("/t/projects/:slug/things", ({ auth }) => where(auth), {
        permission: "resources.read",
        params: t.Object({ slug: t.String() }),
        query: t.Object({ environment: t.Optional(t.String()) }),
        response: Where,
      })
      .post("/t/projects/:slug/things", ({ auth, body }) => ({ ...where(auth), name: body.name }), {
        permission: "resources.write",
        params: t.Object({ slug: t.String() }),
        query: t.Object({ environment: t.Optional(t.String()) }),
        body: t.Object({ name: t.String({ minLength: 1 }) }),
      })
      .get("/t/projects/:slug/environments/:environment/logs", ({ auth }) => where(auth), {
        permission: "obs.read",
        params: t.Object({ slug: t.String(), environment: t.String() }),
        response: Where,
      })
      .patch("/t/projects/:slug", ({ auth }) => where(auth), {
        permission: { key: "project.settings", environment: "none" },
        params: t.Object({ slug: t.String() }),
        response: Where,
      })
      .get("/t/by-name/:name", ({ auth }) => where(auth), {
        // The resolver's parameter is annotated: an unannotated arrow here is context-sensitive and
        // TypeScript then loses the handler's `auth` type.
        permission: { key: "resources.read", project: (ctx: ResolveContext) => String(ctx.params.name).split(".")[0] },
        params: t.Object({ name: t.String() }),
        response: Where,
      })
      .post("/t/estate/projects", () => ({ created: true }), { permission: "estate.manage" });
  },
};

let app: TestApp;
let auditedReads: TestApp;

beforeAll(async () => {
  app = await createTestApp({ modules: [testDomain] });
  auditedReads = await createTestApp({ modules: [testDomain], env: { OPS_AUDIT_READS: "1" } });
});
afterAll(async () => {
  await app.close();
  await auditedReads.close();
});

const audit = (a: TestApp = app) => a.core.db.select().from(auditLog).all();
const lastAudit = (a: TestApp = app) => audit(a).at(-1);

describe("401: no principal", () => {
  test("anonymous → 401 JSON, and no audit row", async () => {
    const before = audit().length;
    for (const [method, path] of [
      ["GET", "/t/me"],
      ["GET", "/t/things"],
      ["GET", "/t/projects/shop/things"],
      ["GET", "/t/projects/no-such-project/things"],
      ["POST", "/t/estate/projects"],
    ]) {
      const body = await expectStatus(await app.request(method, path), 401);
      expect(body).toEqual({ error: "unauthorized", message: "Sign in or send a valid token." });
    }
    expect(audit().length).toBe(before);
  });

  test("an unknown bearer is anonymous, not an error", async () => {
    await expectStatus(await app.request("GET", "/t/me", { token: "nobody" }), 401);
  });

  test("an invalid body from an anonymous caller is 401, not 422: authorization runs before validation", async () => {
    await expectStatus(await app.request("POST", "/t/projects/shop/things", { body: { name: 42 } }), 401);
    await expectStatus(await app.request("POST", "/t/projects/shop/things", { body: {} }), 401);
  });

  test("an authenticate hook that throws counts as anonymous and is logged", async () => {
    await expectStatus(await app.request("GET", "/t/me", { token: "broken" }), 401);
    expect(app.logs.some((l) => l.includes("authentication hook failed") && l.includes("the token table is on fire"))).toBe(true);
  });
});

describe("403: known caller, not allowed", () => {
  test("the role lacks the key: 403 and a denied audit row naming the key and why", async () => {
    const res = await app.request("POST", "/t/projects/shop/things?environment=staging", { token: "viewer", body: { name: "x" } });
    const body = await expectStatus(res, 403);
    expect(body).toEqual({ error: "forbidden", message: "Your access does not include resources.write in shop.", details: { permission: "resources.write" } });
    const row = lastAudit()!;
    expect(row).toMatchObject({
      actor: "viewer@ops.test",
      operatorId: "op-viewer",
      via: "console",
      action: "resources.write",
      target: "/t/projects/shop/things",
      outcome: "denied",
      reason: "role lacks resources.write in shop",
      project: "shop",
      environment: "staging",
    });
    expect(JSON.parse(row.context!)).toMatchObject({ request: res.headers.get("x-request-id"), session: "s-viewer" });
  });

  test("a non-member asking about a project is 403, not 404", async () => {
    await expectStatus(await app.request("GET", "/t/projects/blog/things", { token: "dev" }), 403);
    expect(lastAudit()).toMatchObject({ action: "resources.read", outcome: "denied", reason: "no role in blog", project: "blog" });
  });

  test("an invalid body from a caller without the permission is still 403", async () => {
    await expectStatus(await app.request("POST", "/t/projects/shop/things", { token: "viewer", body: { wrong: true } }), 403);
  });

  test("environment policies apply to the route's environment (default production)", async () => {
    await expectStatus(await app.request("POST", "/t/projects/shop/things", { token: "dev", body: { name: "x" } }), 403);
    expect(lastAudit()).toMatchObject({ action: "resources.write", environment: "production", reason: "environment policy removes resources.write" });
    const ok = await expectStatus(await app.request("POST", "/t/projects/shop/things?environment=staging", { token: "dev", body: { name: "x" } }), 200);
    expect(ok).toEqual({ project: "shop", environment: "staging", actor: "dev@ops.test", name: "x" });
  });

  test("Estate keys are evaluated estate-wide: a project owner is refused, an estate-wide owner allowed", async () => {
    await expectStatus(await app.request("POST", "/t/estate/projects", { token: "shopowner" }), 403);
    expect(lastAudit()).toMatchObject({ action: "estate.manage", reason: "no role estate-wide", project: null });
    await expectStatus(await app.request("POST", "/t/estate/projects", { token: "owner" }), 200);
  });

  test("a suspended operator is refused everything, self-service included", async () => {
    const body = await expectStatus(await app.request("GET", "/t/projects/shop/things", { token: "suspended" }), 403);
    expect(body.message).toBe("Your account is suspended.");
    expect(lastAudit()).toMatchObject({ actor: "suspended@ops.test", action: "resources.read", reason: "operator is suspended" });
    await expectStatus(await app.request("GET", "/t/me", { token: "suspended" }), 403);
    expect(lastAudit()).toMatchObject({ actor: "suspended@ops.test", action: "authenticated", outcome: "denied", reason: "operator is suspended" });
  });
});

describe("404: the thing does not exist", () => {
  test("an unknown project slug", async () => {
    const body = await expectStatus(await app.request("GET", "/t/projects/no-such-project/things", { token: "owner" }), 404);
    expect(body).toEqual({ error: "not_found", message: "No such project." });
  });

  test("an explicit unknown environment, in the query or the path", async () => {
    const q = await expectStatus(await app.request("GET", "/t/projects/shop/things?environment=qa", { token: "owner" }), 404);
    expect(q.error).toBe("not_found");
    expect(q.message).toContain('"qa"');
    await expectStatus(await app.request("GET", "/t/projects/blog/environments/staging/logs", { token: "owner" }), 404);
  });

  test("a custom project resolver is used, and its unknown project is 404", async () => {
    const ok = await expectStatus(await app.request("GET", "/t/by-name/shop.web", { token: "viewer" }), 200);
    expect(ok.project).toBe("shop");
    await expectStatus(await app.request("GET", "/t/by-name/nowhere.web", { token: "viewer" }), 404);
  });
});

describe("allowed", () => {
  test("200 with the project and the default environment", async () => {
    const body = await expectStatus(await app.request("GET", "/t/projects/shop/things", { token: "viewer" }), 200);
    expect(body).toEqual({ project: "shop", environment: "production", actor: "viewer@ops.test" });
  });

  test("the environment from the path", async () => {
    const body = await expectStatus(await app.request("GET", "/t/projects/shop/environments/staging/logs", { token: "dev" }), 200);
    expect(body.environment).toBe("staging");
  });

  test("environment: 'none' evaluates without policies", async () => {
    const body = await expectStatus(await app.request("PATCH", "/t/projects/shop", { token: "shopowner" }), 200);
    expect(body).toEqual({ project: "shop", environment: null, actor: "shopowner@ops.test" });
  });

  test("a route without a project is evaluated 'anywhere'", async () => {
    expect(await expectStatus(await app.request("GET", "/t/things", { token: "viewer" }), 200)).toEqual({ project: null, environment: null, actor: "viewer@ops.test" });
  });

  test("'authenticated' lets any signed-in caller through, with or without memberships", async () => {
    expect(await expectStatus(await app.request("GET", "/t/me", { token: "viewer" }), 200)).toEqual({ project: null, environment: null, actor: "viewer@ops.test" });
    expect((await expectStatus(await app.request("GET", "/t/me", { token: "loner" }), 200)).actor).toBe("loner@ops.test");
    await expectStatus(await app.request("GET", "/t/things", { token: "loner" }), 403);
  });

  test("a valid caller with an invalid body gets 422 (validation after authorization)", async () => {
    const body = await expectStatus(await app.request("POST", "/t/projects/shop/things?environment=staging", { token: "dev", body: { name: "" } }), 422);
    expect(body.error).toBe("validation_failed");
    expect(body.details.fields[0].path).toBe("name");
  });

  test("public routes need no principal", async () => {
    expect(await expectStatus(await app.request("GET", "/t/open"), 200)).toEqual({ open: true });
  });

  test("allowed reads are audited only with OPS_AUDIT_READS=1", async () => {
    const before = audit().length;
    await expectStatus(await app.request("GET", "/t/projects/shop/things", { token: "viewer" }), 200);
    expect(audit().length).toBe(before);
    await expectStatus(await auditedReads.request("GET", "/t/projects/shop/things", { token: "viewer" }), 200);
    expect(lastAudit(auditedReads)).toMatchObject({ action: "resources.read", outcome: "allowed", project: "shop", environment: "production", reason: "" });
  });
});

describe("cookie credentials", () => {
  test("a state-changing cookie request without a matching Origin is 403 and audited", async () => {
    const res = await app.request("POST", "/t/projects/shop/things?environment=staging", { headers: { cookie: "ops_session=owner" }, body: { name: "x" } });
    const body = await expectStatus(res, 403);
    expect(body.message).toContain("Origin");
    expect(lastAudit()).toMatchObject({ actor: "owner@ops.test", outcome: "denied", reason: "cookie request without a matching Origin" });

    await expectStatus(
      await app.request("POST", "/t/projects/shop/things?environment=staging", { headers: { cookie: "ops_session=owner", origin: "https://evil.example" }, body: { name: "x" } }),
      403,
    );
  });

  test("with the server's Origin it goes through; safe methods need no Origin", async () => {
    await expectStatus(await app.request("POST", "/t/projects/shop/things?environment=staging", { headers: { cookie: "ops_session=owner", origin: app.url }, body: { name: "x" } }), 200);
    await expectStatus(await app.request("GET", "/t/projects/shop/things", { headers: { cookie: "ops_session=owner" } }), 200);
  });

  test("a bearer request needs no Origin", async () => {
    await expectStatus(await app.request("POST", "/t/projects/shop/things?environment=staging", { token: "owner", body: { name: "x" } }), 200);
  });
});

describe("OpenAPI", () => {
  test("each route's permission is in /api/docs/json as x-permission; public routes as x-public", async () => {
    const doc = await expectStatus(await app.request("GET", "/api/docs/json"), 200);
    expect(doc.paths["/t/projects/{slug}/things"].get["x-permission"]).toBe("resources.read");
    expect(doc.paths["/t/projects/{slug}/things"].post["x-permission"]).toBe("resources.write");
    expect(doc.paths["/t/projects/{slug}"].patch["x-permission"]).toBe("project.settings");
    expect(doc.paths["/t/estate/projects"].post["x-permission"]).toBe("estate.manage");
    expect(doc.paths["/t/me"].get["x-permission"]).toBe("authenticated");
    expect(doc.paths["/t/open"].get["x-public"]).toBe(true);
    expect(doc.paths["/t/open"].get["x-permission"]).toBeUndefined();
    expect(doc.paths["/health"].get["x-public"]).toBe(true);
  });
});
