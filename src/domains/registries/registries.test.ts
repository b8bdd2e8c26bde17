/**
 * The registries domain as a whole: every route of document 3's Package reads, Cargo registry,
 * npm registry and Image registry token sections is in OpenAPI (protocol routes marked with
 * `x-protocol`), every route of the domain declares exactly one of `permission` or `public`, and
 * every permission-guarded one answers 401 without credentials.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** The spec's routes (spec/endpoints.txt) of the four sections, in OpenAPI's path syntax. */
const SPEC_ROUTES = [
  "GET /api/v1/packages",
  "GET /api/v1/projects/{slug}/packages",
  "GET /api/v1/projects/{slug}/packages/{registry}",
  "GET /api/v1/projects/{slug}/packages/{registry}/{name}",
  "GET /cargo/config.json",
  "GET /cargo/1/{name}",
  "GET /cargo/2/{name}",
  "GET /cargo/3/{first}/{name}",
  "GET /cargo/{prefix}/{infix}/{name}",
  "PUT /cargo/api/v1/crates/new",
  "GET /cargo/api/v1/crates/{name}/{version}/download",
  "DELETE /cargo/api/v1/crates/{name}/{version}/yank",
  "PUT /cargo/api/v1/crates/{name}/{version}/unyank",
  "GET /npm/{pkg}",
  "PUT /npm/{pkg}",
  "GET /npm/{pkg}/-/{file}",
  "GET /v2/token",
];
/** DESIGN.md §3: the claim routes the spec needs but does not list. */
const DESIGN_ROUTES = ["PUT /api/v1/projects/{slug}/packages/{registry}/{name}", "DELETE /api/v1/projects/{slug}/packages/{registry}/{name}"];

describe("registries", () => {
  test("every route of the four spec sections (and the claim routes) is in OpenAPI", async () => {
    const doc = await expectStatus(await t.request("GET", "/api/docs/json"), 200);
    for (const route of [...SPEC_ROUTES, ...DESIGN_ROUTES]) {
      const [method, path] = route.split(" ");
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op === undefined ? `${route} missing` : "present").toBe("present");
      if (!path.startsWith("/api/")) expect(op["x-protocol"]).toBeString();
    }
    for (const name of ["PackageSummary", "PackageVersionSummary", "PackageDetailResponse", "ImageRepoSummary", "EstatePackagesResponse", "ProjectPackagesResponse", "RegistryTokenResponse"]) {
      expect(doc.components.schemas[name]).toBeDefined();
    }
  });

  const mine = (p: string) => /^\/(npm|cargo|v2)(\/|$)/.test(p) || p.startsWith("/api/v1/packages") || /\/packages(\/|$)/.test(p);

  test("every route declares exactly one of permission: or public: true", () => {
    const routes = t.app.routes.filter((r) => mine(r.path));
    expect(routes.length).toBeGreaterThan(30);
    for (const r of routes) {
      const detail = ((r.hooks as { detail?: Record<string, unknown> }).detail ?? {}) as Record<string, unknown>;
      const declared = (typeof detail["x-permission"] === "string" ? 1 : 0) + (detail["x-public"] === true ? 1 : 0);
      expect(`${r.method} ${r.path}: ${declared}`).toBe(`${r.method} ${r.path}: 1`);
    }
  });

  test("every permission-guarded route answers 401 without credentials", async () => {
    for (const r of t.app.routes.filter((r) => mine(r.path))) {
      const detail = ((r.hooks as { detail?: Record<string, unknown> }).detail ?? {}) as Record<string, unknown>;
      if (typeof detail["x-permission"] !== "string") continue;
      const path = r.path.replace(/:([A-Za-z]+)/g, (_m, n: string) => `placeholder-${n}`);
      const res = await t.request(r.method, path);
      await res.arrayBuffer();
      expect(`${r.method} ${r.path} → ${res.status}`).toBe(`${r.method} ${r.path} → 401`);
    }
  });
});
