/**
 * Every route of the spec's Device login, CLI and Status sections is in OpenAPI with its
 * schemas (the spec's names) and every status code the spec lists for it.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, type TestApp } from "./harness";

let t: TestApp;
let doc: { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }>; requestBody?: { content: Record<string, { schema: unknown }> } }>>; components: { schemas: Record<string, unknown> } };
beforeAll(async () => {
  t = await createTestApp();
  doc = (await (await fetch(`${t.url}/api/docs/json`)).json()) as typeof doc;
});
afterAll(() => t.close());

const SPEC: Array<[method: string, path: string, statuses: number[], body?: string, ok?: string]> = [
  ["post", "/api/v1/auth/device", [200, 422, 429], "DeviceAuthorizeBody", "DeviceAuthorizeResponse"],
  ["post", "/api/v1/auth/device/token", [200, 400], "DevicePollBody", "DeviceTokenResponse"],
  ["get", "/api/v1/auth/device/{user_code}", [200, 401, 404, 429], undefined, "DeviceGrantResponse"],
  ["post", "/api/v1/auth/device/{user_code}/approve", [204, 401, 403, 404, 409, 422], "DeviceApproveBody"],
  ["post", "/api/v1/auth/device/{user_code}/deny", [204, 401, 404, 409]],
  ["post", "/api/v1/cli/install-codes", [200, 401, 403, 404, 422], "InstallCodeBody", "InstallCodeResponse"],
  ["get", "/api/v1/cli/install.sh", [200, 401, 503]],
  ["get", "/api/v1/cli/release", [200, 401, 403, 404, 422], undefined, "CliReleaseResponse"],
  ["get", "/api/v1/cli/releases/{version}/{target}/download", [200, 401, 403, 404, 422]],
  ["get", "/api/v1/status/public", [200], undefined, "PublicStatusResponse"],
  ["get", "/health", [200]],
  ["get", "/readyz", [200, 503]],
  ["post", "/api/v1/cli/releases", [201, 401, 403, 409, 413, 422], undefined, "CliReleaseResponse"],
  ["get", "/api/v1/status/components", [200, 401, 403]],
  ["post", "/api/v1/status/components", [201, 401, 403, 409, 422], "WriteStatusComponentBody", "StatusComponentResponse"],
  ["delete", "/api/v1/status/components/{component}", [204, 401, 403, 404, 409]],
  ["post", "/api/v1/status/components/{component}/transitions", [201, 401, 403, 404, 409, 422], "WriteStatusTransitionBody", "StatusTransitionResponse"],
];

describe("OpenAPI for device login, CLI and status", () => {
  for (const [method, p, statuses, body, ok] of SPEC) {
    test(`${method.toUpperCase()} ${p}: ${statuses.join(", ")}`, () => {
      const op = doc.paths[p]?.[method];
      expect(op).toBeDefined();
      for (const s of statuses) expect(Object.keys(op.responses)).toContain(String(s));
      if (body) expect(JSON.stringify(op.requestBody?.content["application/json"]?.schema)).toContain(`#/components/schemas/${body}`);
      if (ok) {
        const okStatus = statuses.find((s) => s < 300)!;
        expect(JSON.stringify(op.responses[String(okStatus)].content?.["application/json"]?.schema)).toContain(`#/components/schemas/${ok}`);
      }
      for (const s of statuses.filter((s) => s >= 400 && !(p === "/api/v1/auth/device/token" && s === 400))) {
        if (p === "/readyz") continue;
        expect(JSON.stringify(op.responses[String(s)].content)).toContain("snake_case error code");
      }
    });
  }

  test("the poll's 400 is DeviceErrorResponse, not the ops error body", () => {
    const op = doc.paths["/api/v1/auth/device/token"].post;
    expect(JSON.stringify(op.responses["400"].content?.["application/json"]?.schema)).toContain("#/components/schemas/DeviceErrorResponse");
  });

  test("the spec's schema names are registered", () => {
    for (const name of [
      "DeviceAuthorizeBody",
      "DeviceAuthorizeResponse",
      "DevicePollBody",
      "DeviceTokenResponse",
      "DeviceErrorResponse",
      "DeviceGrantResponse",
      "DeviceRoleOption",
      "DeviceApproveBody",
      "InstallCodeBody",
      "InstallCodeResponse",
      "CliReleaseResponse",
      "PublicStatusResponse",
      "PublicComponent",
      "PublicIncident",
    ]) {
      expect(Object.keys(doc.components.schemas)).toContain(name);
    }
  });

  test("console pages and assets are not API routes", () => {
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/assets") || ["/", "/device", "/status", "/account", "/sign-in"].includes(p))).toEqual([]);
  });
});
