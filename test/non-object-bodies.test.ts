/**
 * A JSON body that is not an object (`"x"`, `123`, `[]`, `true`) is a 422 on every API route that
 * takes a JSON object, whether its body is required or optional (the rollback and the device
 * login, where "no body" is valid): a body nobody meant never acts as "no body". Walks
 * `/api/docs/json`, so a route added later is covered; signed in as the estate owner, against a
 * project with the resources the routes look up, so nothing else refuses the request first.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";

interface Operation {
  requestBody?: { content?: Record<string, { schema?: unknown }> };
}

let t: TestApp;
let owner: Person;
let ops: Array<{ method: string; path: string }>;

/** Path values that name what the fixture holds. */
const KNOWN: Record<string, string> = {
  slug: "shop",
  environment: "production",
  type: "service",
  name: "web",
  service: "web",
  key: "GREETING",
  registry: "npm",
  locale: "en",
  id: "1",
  operator_id: "1",
  role_id: "1",
  bundle: "1",
  component: "api",
  user_code: "ABCD-EFGH",
};

const NOT_OBJECTS: unknown[] = ["x", 123, 1.5, [], [{}], true];

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  makeProject(t, "shop");
  await expectStatus(await t.request("POST", "/api/v1/projects/shop/resources/service", { token: owner.session, body: { name: "web", spec: { image: "registry.example/shop/web:1" } } }), 201);
  const doc = await expectStatus<{ paths: Record<string, Record<string, Operation>> }>(await t.request("GET", "/api/docs/json"), 200);
  ops = [];
  for (const [p, methods] of Object.entries(doc.paths)) {
    if (!p.startsWith("/api/v1/")) continue;
    for (const [method, op] of Object.entries(methods)) if (op.requestBody?.content?.["application/json"]) ops.push({ method, path: p });
  }
});
afterAll(() => t?.close());

describe("JSON bodies that are not objects", () => {
  test("answer 422 on every route that takes a JSON object, the optional-body ones included", async () => {
    expect(ops.length).toBeGreaterThan(30);
    expect(ops.some((o) => o.path.endsWith("/rollback"))).toBe(true);
    expect(ops.some((o) => o.path === "/api/v1/auth/device")).toBe(true);
    const wrong: string[] = [];
    for (const { method, path } of ops) {
      // Signing out or sealing would blind the routes after them; their bodies are refused before they act all the same.
      const url = path.replace(/\{([^}]+)\}/g, (_, n: string) => encodeURIComponent(KNOWN[n] ?? "1"));
      for (const value of NOT_OBJECTS) {
        const res = await t.request(method.toUpperCase(), url, { token: owner.session, raw: JSON.stringify(value), headers: { "content-type": "application/json" } });
        const text = await res.text();
        // RFC 8628's token endpoint answers every refusal 400 with an OAuth error (DeviceErrorResponse).
        const expected = path === "/api/v1/auth/device/token" ? 400 : 422;
        if (res.status !== expected) wrong.push(`${method.toUpperCase()} ${path} with ${JSON.stringify(value)}: ${res.status} ${text.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
