/**
 * The spec's integer fields in JSON bodies take JSON numbers only (issue 32, item 26): a numeric
 * string (`"version":"3"`, `"expires_in_days":"3"`, `"build_id":"1"`) is a 422 naming the field,
 * as is a fraction, and nothing the request asked for happens. Every route's request body in the
 * OpenAPI document is walked too, so a new integer field cannot take text again.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, type Person } from "./fixtures";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { fixedRole } from "../src/domains/access/service";

let t: TestApp;
let p: ProjectCtx;
let estate: Person;

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  estate = await makeOwner(t);
  await expectStatus(await p.req("POST", "/resources/service", { name: "web", spec: { image: "registry.example/x/web:1" } }), 201);
});
afterAll(() => t.close());

type Refusal = { error: string; message: string; details: { fields: Array<{ path: string; message: string }> } };

/** A 422 whose message and fields name `field` and say it must be a whole number. */
async function refused(res: Response, field: string): Promise<void> {
  const body = await expectStatus<Refusal>(res, 422);
  expect(body.error).toBe("validation_failed");
  expect(body.details.fields.map((f) => f.path)).toContain(field);
  expect(body.message).toStartWith(`${field}: `);
  expect(body.message).toContain("whole number");
  expect(body.message).not.toContain("undefined");
}

describe("integer fields of JSON bodies", () => {
  test("a resource's version as a string is refused and the resource is unchanged", async () => {
    const before = await expectStatus(await p.req("GET", "/resources/service/web"), 200);
    await refused(await p.req("PUT", "/resources/service/web", { spec: { image: "registry.example/x/web:2" }, version: String(before.version) }), "version");
    await refused(await p.req("PUT", "/resources/service/web", { spec: { image: "registry.example/x/web:2" }, version: 1.5 }), "version");
    const after = await expectStatus(await p.req("GET", "/resources/service/web"), 200);
    expect(after.version).toBe(before.version);
    expect(after.spec.image).toBe("registry.example/x/web:1");
  });

  test("a token's expires_in_days as a string is refused and no token is minted", async () => {
    const body = { name: "by text", role_id: fixedRole(t.core, "viewer").id, project: p.slug, expires_in_days: "3" };
    await refused(await t.request("POST", "/api/v1/tokens", { token: p.owner.session, body }), "expires_in_days");
    const n = t.core.sqlite.query("SELECT count(*) AS n FROM tokens WHERE name = 'by text'").get() as { n: number };
    expect(n.n).toBe(0);
  });

  test("a deploy's build_id as a string or a fraction is refused before anything rolls", async () => {
    const deployments = () => (t.core.sqlite.query("SELECT count(*) AS n FROM deployments").get() as { n: number }).n;
    const before = deployments();
    await refused(await p.req("POST", "/resources/service/web/deploy", { build_id: "1" }), "build_id");
    await refused(await p.req("POST", "/resources/service/web/deploy", { build_id: 1.5 }), "build_id");
    expect(deployments()).toBe(before);
    void estate;
  });

  test("no request body in the OpenAPI document has an integer field that takes text", async () => {
    const doc = await (await fetch(`${t.url}/api/docs/json`)).json();
    const loose: string[] = [];
    const takesText = (s: { anyOf?: Array<{ type?: string; format?: string }> }) => (s.anyOf ?? []).some((x) => x.type === "string" && (x.format === "integer" || x.format === "numeric"));
    const walk = (s: any, where: string, seen: Set<unknown>) => {
      if (!s || typeof s !== "object" || seen.has(s)) return;
      seen.add(s);
      if (typeof s.$ref === "string") return walk(doc.components?.schemas?.[s.$ref.split("/").pop()], where, seen);
      if (takesText(s)) loose.push(where);
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${where}.${k}`, seen);
      for (const x of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) walk(x, where, seen);
      if (s.items) walk(s.items, `${where}[]`, seen);
    };
    let bodies = 0;
    for (const [route, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
          if (!type.includes("json")) continue;
          bodies++;
          walk(media.schema, `${method.toUpperCase()} ${route} body`, new Set());
        }
      }
    }
    expect(bodies).toBeGreaterThan(40);
    expect(loose).toEqual([]);
  });
});
