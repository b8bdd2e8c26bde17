/**
 * STYLE.md rule 2 on the full app (every domain in src/domains/index.ts): every route declares
 * exactly one of `permission:` or `public: true` with a catalog key, answers 401 without
 * credentials, and 403 to a caller without its permission. The checks live in test/inventory.ts;
 * the second half of this file shows on a throwaway app that they do catch the mistakes.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { Elysia, t } from "elysia";
import { createTestApp, fakePrincipal, type TestApp } from "./harness";
import { checkRouteInventory, listRoutes, probeUnauthenticated, probeForbidden, examplePath, type DenialCaller, type Send } from "./inventory";
import { DOMAINS } from "../src/domains";
import { authzPlugin } from "../src/core/authz/plugin";
import type { DomainModule } from "../src/core/core";
import { makePerson, makeProject, makeRole } from "./fixtures";
import { ESTATE_KEYS, PERMISSION_KEYS, type PermissionKey } from "../src/core/authz/catalog";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { claimPackage } from "../src/domains/registries/service";

const sendTo =
  (app: TestApp): Send =>
  (method, path, headers) =>
    app.request(method, path, { headers });

describe("the full app", () => {
  let full: TestApp;
  beforeAll(async () => {
    full = await createTestApp({ modules: DOMAINS });
  });
  afterAll(() => full.close());

  test("every route declares exactly one of permission: or public: true, with a catalog key", () => {
    const routes = listRoutes(full.app);
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(expect.arrayContaining(["GET /health", "GET /readyz"]));
    expect(routes.some((r) => r.path.startsWith("/api/docs"))).toBe(false);
    expect(checkRouteInventory(full.app)).toEqual([]);
  });

  test("every permission-guarded route answers 401 without credentials", async () => {
    expect(await probeUnauthenticated(full.app, sendTo(full))).toEqual([]);
  });

  describe("403 for every route", () => {
    test("every route guarded by a catalog permission answers 403 to a caller who lacks it", async () => {
      // Real principals through the access services: for an Estate key, an estate-wide maintainer
      // (everything but the Estate keys); for any other key, a member of a real project whose
      // project role holds every other project permission.
      const project = makeProject(full, "inventory-probe");
      // Registry protocol routes name a package, not a project: claim one of each in the project.
      claimPackage(full.core, full.core.access.findProject(project.slug)!, "npm", "@ops/inventory-probe", SYSTEM_ACTOR);
      claimPackage(full.core, full.core.access.findProject(project.slug)!, "cargo", "inventory-probe", SYSTEM_ACTOR);
      const sessions = new Map<string, string>();
      const caller: DenialCaller = async (route) => {
        const key = route.permission as PermissionKey;
        let session = sessions.get(key);
        if (!session) {
          if (ESTATE_KEYS.has(key)) {
            session = (await makePerson(full, [{ role: "maintainer", project: null }])).session;
          } else {
            const keep = PERMISSION_KEYS.filter((k) => k !== key && !ESTATE_KEYS.has(k));
            const roleId = makeRole(full, project.slug, `all-but-${key.replace(".", "-")}`, keep);
            session = (await makePerson(full, [{ role: roleId, project: project.slug }])).session;
          }
          sessions.set(key, session);
        }
        return { headers: { authorization: `Bearer ${session}` }, params: { slug: project.slug, pkg: "@ops/inventory-probe", name: "inventory-probe" } };
      };
      const { problems, skipped } = await probeForbidden(full.app, sendTo(full), caller);
      expect(problems).toEqual([]);
      expect(skipped).toEqual([]);
    });
  });
});

describe("the checks catch mistakes (a throwaway app)", () => {
  const nobody = fakePrincipal("nobody");
  const sloppy: DomainModule = {
    name: "sloppy",
    install(core) {
      core.access = {
        authenticate: (c) => (c.bearer === "nobody" ? nobody : null),
        findProject: (slug) => (slug === "shop" ? { id: "p-shop", slug: "shop", name: "Shop", archived: false, environments: ["production"] } : null),
        findProjectById: () => null,
        grants: () => ({ memberships: [], policies: [] }),
      };
    },
    routes(core) {
      return (
        new Elysia({ name: "sloppy-routes" })
          .use(authzPlugin(core))
          .get("/sloppy/fine/:slug", () => "ok", { permission: "resources.read", params: t.Object({ slug: t.String() }) })
          .get("/sloppy/me", () => "me", { permission: "authenticated" })
          .get("/sloppy/open", () => "open", { public: true })
          // Forgot the declaration (a hand-written check, say).
          .get("/sloppy/undeclared", () => "who knows")
          // A typo'd key.
          .post("/sloppy/typo", () => "typo", { permission: "resources.wirte" as "resources.write" })
          // Claims a permission in its OpenAPI detail but never went through the macro.
          .delete("/sloppy/claims/:slug", () => "deleted anyway", { detail: { "x-permission": "resources.destroy" } as Record<string, unknown> })
      );
    },
  };

  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ modules: [sloppy] });
  });
  afterAll(() => app.close());

  test("checkRouteInventory reports a route with no declaration and a key outside the catalog", () => {
    expect(checkRouteInventory(app.app)).toEqual([
      "GET /sloppy/undeclared declares neither permission: nor public: true",
      'POST /sloppy/typo names "resources.wirte", which is not in the permission catalog',
    ]);
  });

  test("probeUnauthenticated reports a route that claims a permission but lets anyone in", async () => {
    expect(await probeUnauthenticated(app.app, sendTo(app))).toEqual(["DELETE /sloppy/claims/:slug answered 200 without credentials, not 401"]);
  });

  test("probeForbidden reports it too, and checks the rest with the caller factory", async () => {
    const caller: DenialCaller = async (route) => (route.path.includes(":slug") ? { headers: { authorization: "Bearer nobody" }, params: { slug: "shop" } } : { headers: { authorization: "Bearer nobody" } });
    const { problems, skipped } = await probeForbidden(app.app, sendTo(app), caller);
    expect(problems).toEqual(["DELETE /sloppy/claims/:slug answered 200 to a caller without resources.destroy, not 403"]);
    expect(skipped).toEqual([]);
  });

  test("examplePath fills parameters and wildcards", () => {
    expect(examplePath("/api/v1/projects/:slug/services/:name")).toBe("/api/v1/projects/placeholder-slug/services/placeholder-name");
    expect(examplePath("/p/:slug/x", { slug: "a b" })).toBe("/p/a%20b/x");
    expect(examplePath("/npm/*")).toBe("/npm/x");
  });
});
