/**
 * Every response carries the security baseline (nosniff, a Content Security Policy, frame
 * protection): API answers, errors of every style (ops JSON, npm, cargo, OCI, git), OpenAPI and
 * its page, health probes and the console. A route's own stricter header is never replaced.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";
import { API_CSP, DOCS_CSP } from "../src/core/security-headers";

let t: TestApp;
let owner: Person;

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  makeProject(t, "shop");
});
afterAll(() => t.close());

function expectBaseline(res: Response, csp = API_CSP): void {
  const where = `${res.status} ${res.url}`;
  expect([where, res.headers.get("x-content-type-options")]).toEqual([where, "nosniff"]);
  expect([where, res.headers.get("x-frame-options")]).toEqual([where, "DENY"]);
  expect([where, res.headers.get("content-security-policy")]).toEqual([where, csp]);
  expect([where, res.headers.get("referrer-policy")]).toEqual([where, "no-referrer"]);
}

describe("security headers", () => {
  test("API answers, their errors and the probes carry the baseline", async () => {
    const cases: Array<[string, string, string | undefined]> = [
      ["GET", "/api/v1/me", owner.session],
      ["GET", "/api/v1/me", undefined],
      ["GET", "/api/v1/projects/shop/builds?limit=1.5", owner.session],
      ["GET", "/api/v1/projects/nope", owner.session],
      ["POST", "/api/v1/projects", owner.session],
      ["GET", "/api/v1/no-such-route", owner.session],
      ["GET", "/health", undefined],
      ["GET", "/readyz", undefined],
      ["GET", "/api/docs/json", undefined],
      ["GET", "/npm/@ops%2fnothing", owner.session],
      ["GET", "/npm/@ops%2fnothing", undefined],
      ["GET", "/cargo/config.json", owner.session],
      ["GET", "/v2/", undefined],
      ["GET", "/git/shop/app.git/info/refs?service=git-upload-pack", undefined],
      ["POST", "/api/v1/auth/device/token", undefined],
      ["GET", "/api/v1/status/public", undefined],
    ];
    for (const [method, path, token] of cases) {
      const res = await t.request(method, path, { token, body: method === "POST" ? {} : undefined });
      await res.arrayBuffer();
      expectBaseline(res);
    }
  });

  test("the OpenAPI page may load its renderer's script and nothing else runs", async () => {
    const res = await t.request("GET", "/api/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    await res.text();
    expectBaseline(res, DOCS_CSP);
    expect(DOCS_CSP).toMatch(/script-src 'self'( 'sha256-[^']+')?;/);
    expect(DOCS_CSP).not.toContain("https:");
    expect(DOCS_CSP).not.toContain("'unsafe-eval'");
    expect(DOCS_CSP).not.toMatch(/script-src[^;]*'unsafe-inline'/);
  });

  test("the console keeps its own policy", async () => {
    const res = await t.request("GET", "/sign-in");
    await res.text();
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
  });
});
