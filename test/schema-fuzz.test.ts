/**
 * Schema fuzz: walk `/api/docs/json` and, for every route, send generated values for each path,
 * query and body field (the route's own schema's values mixed with fractions, negatives, zero,
 * huge numbers, empty and 10 000-character strings, wrong JSON types, a body that is not an
 * object, unknown fields and bytes that are not UTF-8), signed in as the estate owner. A route
 * fails on any 5xx, on any 2xx whose JSON body does not match the response schema it declares,
 * on any 2xx to an API body that is not a JSON object, and on a 422 that blames "(body)" for a request that had none.
 *
 * Seeded and bounded: OPS_FUZZ_SEED (default below) and OPS_FUZZ_RUNS (cases per route) replay a
 * run exactly; a failure names the route, the seed and the case.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Value } from "@sinclair/typebox/value";
import { Kind, Type, type TSchema } from "@sinclair/typebox";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";
import { commitFiles } from "./sources-fixtures";
import { tx } from "../src/core/db/client";
import { insertSession } from "../src/domains/access/service";
import { asText, bodyCase, deref, fieldValue, hostile, type BodyCase, type JsonSchema } from "./schema-fuzz-arbitraries";

const SEED = Number(process.env.OPS_FUZZ_SEED ?? 2126);
const RUNS = Number(process.env.OPS_FUZZ_RUNS ?? 14);

interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  schema?: JsonSchema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

interface Case {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: BodyCase | undefined;
}

let t: TestApp;
let doc: OpenApi;
let owner: Person;
let refs: TSchema[];
/** Real values for path parameters, by name, so generated requests reach past the lookups. */
const known: Record<string, unknown[]> = {
  slug: ["shop"],
  environment: ["production", "staging"],
  type: ["service", "database", "bucket", "job", "secret-group"],
  name: ["web", "nightly", "env", "assets"],
  service: ["web", "WEB_SVC"],
  key: ["GREETING"],
  registry: ["npm", "cargo"],
  locale: ["en", "fr"],
  id: ["1", "2"],
  bundle: ["1"],
};

/** Routes whose effect on the shared fixture (signing out, sealing, archiving) would blind the routes after them: run last. */
const LAST = [/^post \/api\/v1\/auth\/(logout|password)$/, /^post \/api\/v1\/admin\/secrets\/seal$/, /^patch \/api\/v1\/(projects\/\{slug\}|operators\/\{id\})$/];

function operations(): Array<{ method: string; path: string; op: Operation }> {
  const out: Array<{ method: string; path: string; op: Operation }> = [];
  for (const [p, methods] of Object.entries(doc.paths)) for (const [m, op] of Object.entries(methods)) out.push({ method: m, path: p, op });
  const rank = (o: { method: string; path: string }) => (LAST.some((r) => r.test(`${o.method} ${o.path}`)) ? 1 : 0);
  return out.sort((a, b) => rank(a) - rank(b));
}

function caseFor(op: Operation): fc.Arbitrary<Case> {
  const params = op.parameters ?? [];
  const pathShape: Record<string, fc.Arbitrary<unknown>> = {};
  const queryShape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of params) {
    const own = known[p.name];
    if (p.in === "path") {
      pathShape[p.name] = own ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...own) }, { weight: 2, arbitrary: fieldValue(doc, p.schema) }) : fieldValue(doc, p.schema);
    } else if (p.in === "query") {
      queryShape[p.name] = own ? fc.oneof(fc.constantFrom(...own), fieldValue(doc, p.schema)) : fieldValue(doc, p.schema);
    }
  }
  const content = op.requestBody?.content ?? {};
  const jsonSchema = content["application/json"]?.schema;
  const body: fc.Arbitrary<BodyCase | undefined> = op.requestBody
    ? content["application/json"]
      ? bodyCase(doc, jsonSchema)
      : fc.constantFrom<BodyCase>({ kind: "raw", bytes: new Uint8Array([0xff, 0x00, 0x7b]), type: Object.keys(content)[0] ?? "application/octet-stream" })
    : fc.option(hostile.map((value): BodyCase => ({ kind: "json", value })), { nil: undefined, freq: 4 });
  return fc.record({ path: fc.record(pathShape), query: fc.record(queryShape, { requiredKeys: [] }), body });
}

async function send(method: string, template: string, c: Case): Promise<{ res: Response; url: string }> {
  const pathname = template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(asText(c.path[name])));
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(c.query)) if (v !== undefined) qs.append(k, asText(v));
  const url = `${pathname}${qs.size > 0 ? `?${qs}` : ""}`;
  const headers: Record<string, string> = { authorization: `Bearer ${owner.session}` };
  let body: BodyInit | undefined;
  if (c.body && method !== "get" && method !== "head") {
    if (c.body.kind === "json") {
      body = JSON.stringify(c.body.value);
      headers["content-type"] = "application/json";
    } else {
      body = new Blob([c.body.bytes as Uint8Array<ArrayBuffer>]);
      headers["content-type"] = c.body.type;
    }
  }
  const res = await fetch(t.url + url, { method: method.toUpperCase(), headers, body, redirect: "manual", signal: AbortSignal.timeout(10_000) }).catch((e: Error) => {
    throw new Error(`${method.toUpperCase()} ${url} got no answer: ${e.message}`);
  });
  return { res, url };
}

/** The app's named models (`.model()`), as references `t.Ref(name)` resolves against. */
function models(): TSchema[] {
  const defs = (t.app as unknown as { definitions: { type: Record<string, TSchema> } }).definitions.type;
  return Object.entries(defs).map(([name, schema]) => ({ ...schema, $id: name }));
}

/** The TypeBox schema the route declares for `status`, from the app's own route table. */
function responseSchema(method: string, template: string, status: number): TSchema | undefined {
  const elysiaPath = template.replace(/\{([^}]+)\}/g, ":$1");
  const route = t.app.routes.find((r) => r.method.toLowerCase() === method && r.path === elysiaPath);
  const response = route?.hooks.response as Record<string, TSchema | string> | TSchema | string | undefined;
  if (!response) return undefined;
  const one = typeof response === "string" || (response as TSchema)[Kind] !== undefined ? (response as TSchema | string) : (response as Record<string, TSchema | string>)[String(status)];
  return typeof one === "string" ? Type.Ref(one) : one;
}

async function check(method: string, template: string, c: Case): Promise<void> {
  const { res, url } = await send(method, template, c);
  const text = await res.text();
  const where = `${method.toUpperCase()} ${url} (route ${template}, OPS_FUZZ_SEED=${SEED})`;
  if (res.status >= 500) throw new Error(`${where} answered ${res.status}: ${text.slice(0, 300)}`);
  const json = (res.headers.get("content-type") ?? "").includes("json") && text !== "" ? JSON.parse(text) : undefined;
  if (res.status === 422 && json?.error === "validation_failed" && !c.body) {
    const blamed = (json.details?.fields ?? []).filter((f: { path: string }) => f.path === "(body)");
    if (blamed.length > 0) throw new Error(`${where} blamed "(body)" for a request without one: ${text.slice(0, 300)}`);
  }
  const v = c.body?.kind === "json" ? c.body.value : undefined;
  if (res.status < 300 && method !== "get" && method !== "head" && template.startsWith("/api/v1/") && v !== undefined && v !== null && (typeof v !== "object" || Array.isArray(v))) {
    throw new Error(`${where} answered ${res.status} to a body that is not a JSON object (${JSON.stringify(v)?.slice(0, 40)})`);
  }
  // An empty path segment makes the URL another route's (`/projects/` is `/projects`): its schema is not this one.
  const sameRoute = Object.values(c.path).every((v) => asText(v) !== "");
  if (res.status >= 200 && res.status < 300 && json !== undefined && sameRoute) {
    const schema = responseSchema(method, template, res.status);
    if (schema && !Value.Check(schema, refs, json)) {
      const first = Value.Errors(schema, refs, json).First();
      throw new Error(`${where} answered ${res.status} with a body its schema refuses at ${first?.path}: ${first?.message}\n${text.slice(0, 300)}`);
    }
  }
}

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  makeProject(t, "shop");
  const api = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/shop${p}`, { token: owner.session, body });
  const source = await expectStatus<{ id: string }>(await api("POST", "/sources", { repo: "shop/app" }), 201);
  known.id.push(source.id);
  await commitFiles(t, "shop/app", { "ops.toml": '[services.web]\nbuild = ["true"]\nstart = "true"\n', "README.md": "# app\n" });
  await expectStatus(await api("POST", "/resources/service", { name: "web", spec: { source: { repo: "shop/app" } } }), 201);
  await expectStatus(await api("POST", "/resources/secret-group", { name: "env", spec: { variables: [{ name: "GREETING", kind: "text" }] } }), 201);
  await expectStatus(await api("PUT", "/resources/secret-group/env/variables/GREETING", { value: "hello", kind: "text" }), 200);
  await expectStatus(await api("POST", "/builds", { service: "web" }), 201);
  doc = await expectStatus<OpenApi>(await t.request("GET", "/api/docs/json"), 200);
  refs = models();
  // What `ops serve` sets once migrations ran and the scheduler started: /readyz answers 200.
  t.core.state.ready = true;
});

afterAll(async () => {
  await t?.close();
});

describe("schema fuzz", () => {
  test("every route of /api/docs/json answers generated and hostile input without a 5xx or a body outside its schema", async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(150);
    const failures: string[] = [];
    let index = 0;
    for (const { method, path, op } of ops) {
      const seed = SEED + index++;
      // A fresh session per route: a route that signs out or changes the password must not blind the next.
      owner = { ...owner, session: tx(t.core.db, (q) => insertSession(t.core, q, owner.operator.id, "console", { ip: "127.0.0.1", userAgent: "fuzz" })).secret };
      const started = performance.now();
      if (process.env.OPS_FUZZ_TRACE) process.stderr.write(`${Math.round(performance.now())} ${method.toUpperCase()} ${path}\n`);
      const result = await fc.check(
        fc.asyncProperty(caseFor(op), (c) => check(method, path, c)),
        { seed, numRuns: RUNS, endOnFailure: true },
      );
      const ms = performance.now() - started;
      if (ms > 3000) console.log(`schema fuzz: ${method.toUpperCase()} ${path} took ${Math.round(ms)} ms`);
      if (result.failed) failures.push(`${method.toUpperCase()} ${path}: seed ${seed}, case ${JSON.stringify(result.counterexample?.[0])?.replace(/(.)\1{40,}/g, "$1…").slice(0, 400)}\n  ${String((result.errorInstance as Error | undefined)?.message ?? result.errorInstance).slice(0, 600)}`);
    }
    if (failures.length > 0) throw new Error(`${failures.length} route(s) failed (OPS_FUZZ_SEED=${SEED}, OPS_FUZZ_RUNS=${RUNS}):\n${failures.join("\n")}`);
  }, 170_000);
});
