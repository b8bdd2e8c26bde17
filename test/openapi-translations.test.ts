/**
 * Every route of the spec's Translations section is in OpenAPI with its schemas (the spec's
 * names) and every status code it can answer — and for each of those statuses a request here
 * gets exactly it, so no declared status is left untested.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner } from "./fixtures";
import { tmsCast, tr, putEntry, createBundle, claimNpm, publishNpm, type TmsCast } from "./support/translations";

type Op = { responses: Record<string, { content?: Record<string, { schema: unknown }> }>; requestBody?: { content: Record<string, { schema: unknown }> }; "x-permission"?: string };
let t: TestApp;
let c: TmsCast;
let doc: { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, unknown> } };
let common = 0;
let kit = 0;
let ownB = 0;

beforeAll(async () => {
  t = await createTestApp();
  c = await tmsCast(t, "oas");
  doc = (await (await fetch(`${t.url}/api/docs/json`)).json()) as typeof doc;
  await createBundle(t, c.a.slug, c.devA, { name: c.a.slug });
  ownB = await createBundle(t, c.b.slug, c.devB, { name: c.b.slug });
  common = await createBundle(t, c.a.slug, c.devA, { name: "oas-common", estate: true });
  await putEntry(t, c.a.slug, c.devA, { bundle: "oas-common", namespace: "common", key: "ok", locale: "en", value: "OK" });
  await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "app", key: "title", locale: "en", value: "Title" });
  await claimNpm(t, c.a.slug, c.devA, "@ops/oas-kit");
  kit = await createBundle(t, c.a.slug, c.devA, { name: "", package: "npm:@ops/oas-kit" });
  await publishNpm(t, c.devA, "@ops/oas-kit", "1.0.0");
  await expectStatus(await t.request("POST", tr(c.a.slug, `/bundles/${kit}/versions`), { token: c.devA.session, body: { locale: "en", version: "1.0.0", tree: { kit: { go: "Go" } } } }), 200);
});
afterAll(() => t.close());

const P = "/api/v1/projects/{slug}/translations";
/** method, OpenAPI path, statuses, request body schema, success schema. */
const SPEC: Array<[string, string, number[], string?, string?]> = [
  ["get", P, [200, 401, 403, 404], undefined, "ProjectTranslationsResponse"],
  ["post", `${P}/attachments`, [200, 401, 403, 404, 409, 422], "AttachRequest", "SharedBundleSummary"],
  ["delete", `${P}/attachments/{bundle}`, [204, 401, 403, 404, 409]],
  ["post", `${P}/bundles`, [201, 401, 403, 404, 409, 422], "CreateBundleRequest", "CreateBundleResponse"],
  ["post", `${P}/bundles/{bundle}/versions`, [200, 401, 403, 404, 409, 422], "RegisterVersionRequest", "RegisterVersionResponse"],
  ["get", `${P}/entries`, [200, 401, 403, 404, 422], undefined, "EntryResponse"],
  ["put", `${P}/entries`, [200, 401, 403, 404, 409, 422], "SetOwnEntryRequest", "SetEntryResponse"],
  ["delete", `${P}/entries`, [204, 401, 403, 404, 409, 422]],
  ["get", `${P}/export/{locale}`, [200, 304, 401, 403, 404, 422]],
  ["get", `${P}/shared/{bundle}`, [200, 401, 403, 404, 422], undefined, "SharedBundleResponse"],
  ["put", `${P}/shared/{bundle}/overrides`, [200, 401, 403, 404, 409, 422], "SetOverrideRequest", "OverrideResponse"],
  ["delete", `${P}/shared/{bundle}/overrides`, [204, 401, 403, 404, 409, 422]],
  ["get", "/api/v1/tms/bundles", [200, 401, 403], undefined, "BundleSummary"],
];

const archived = async <T>(fn: () => Promise<T>): Promise<T> => {
  const owner = await makeOwner(t);
  await expectStatus(await t.request("PATCH", `/api/v1/projects/${c.b.slug}`, { token: owner.session, body: { archived: true } }), 200);
  try {
    return await fn();
  } finally {
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${c.b.slug}`, { token: owner.session, body: { archived: false } }), 200);
  }
};

/** A request that must get exactly the status, per route. */
const CASES: Record<string, Record<number, () => Promise<Response>>> = {};
const on = (method: string, path: string, status: number, fn: () => Promise<Response>) => ((CASES[`${method} ${path}`] ??= {})[status] = fn);
const B = () => c.b.slug;
const req = (method: string, path: string, token: string | undefined, body?: unknown, headers?: Record<string, string>) => t.request(method, path, { token, body, headers });

on("get", P, 200, () => req("GET", tr(B()), c.devB.session));
on("get", P, 401, () => req("GET", tr(B()), undefined));
on("get", P, 403, () => req("GET", tr(B()), c.devC.session));
on("get", P, 404, () => req("GET", tr("no-such-project"), c.devB.session));

const attach = (token: string | undefined, body: unknown) => req("POST", tr(B(), "/attachments"), token, body);
on("post", `${P}/attachments`, 200, () => attach(c.devB.session, { bundle: kit, version: "1.0.0" }));
on("post", `${P}/attachments`, 401, () => attach(undefined, { bundle: kit, version: "1.0.0" }));
on("post", `${P}/attachments`, 403, () => attach(c.viewerA.session, { bundle: kit, version: "1.0.0" }));
on("post", `${P}/attachments`, 404, () => attach(c.devB.session, { bundle: kit, version: "7.7.7" }));
on("post", `${P}/attachments`, 409, () => archived(() => attach(c.devB.session, { bundle: kit, version: "1.0.0" })));
on("post", `${P}/attachments`, 422, () => attach(c.devB.session, { bundle: common, version: "1.0.0" }));

const detach = (token: string | undefined, id: number | string = kit) => req("DELETE", tr(B(), `/attachments/${id}`), token);
on("delete", `${P}/attachments/{bundle}`, 204, async () => {
  await expectStatus(await attach(c.devB.session, { bundle: kit, version: "1.0.0" }), 200);
  return detach(c.devB.session);
});
on("delete", `${P}/attachments/{bundle}`, 401, () => detach(undefined));
on("delete", `${P}/attachments/{bundle}`, 403, () => detach(c.devC.session));
on("delete", `${P}/attachments/{bundle}`, 404, async () => {
  // A bundle id that is no id names nothing attached, like an unknown one.
  expect((await detach(c.devB.session, "not-an-id")).status).toBe(404);
  return detach(c.devB.session, 424242);
});
on("delete", `${P}/attachments/{bundle}`, 409, () => archived(() => detach(c.devB.session)));

const create = (token: string | undefined, body: unknown, slug = B()) => req("POST", tr(slug, "/bundles"), token, body);
on("post", `${P}/bundles`, 201, () => create(c.devB.session, { name: "oas-new" }));
on("post", `${P}/bundles`, 401, () => create(undefined, { name: "x" }));
on("post", `${P}/bundles`, 403, () => create(c.devC.session, { name: "x" }));
on("post", `${P}/bundles`, 404, () => create(c.devB.session, { name: "x", package: "npm:@ops/oas-kit" }));
on("post", `${P}/bundles`, 409, () => create(c.devB.session, { name: c.b.slug }));
on("post", `${P}/bundles`, 422, () => create(c.devB.session, { name: "Upper Case" }));

const register = (token: string | undefined, body: unknown, bundle: string | number = kit, slug = c.a.slug) => req("POST", tr(slug, `/bundles/${bundle}/versions`), token, body);
const enTree = { locale: "en", version: "1.0.0", tree: { kit: { go: "Go" } } };
on("post", `${P}/bundles/{bundle}/versions`, 200, () => register(c.devA.session, enTree));
on("post", `${P}/bundles/{bundle}/versions`, 401, () => register(undefined, enTree));
on("post", `${P}/bundles/{bundle}/versions`, 403, () => register(c.viewerA.session, enTree));
on("post", `${P}/bundles/{bundle}/versions`, 404, () => register(c.devA.session, { ...enTree, version: "3.0.0" }));
on("post", `${P}/bundles/{bundle}/versions`, 409, () => archived(() => register(c.devB.session, enTree, ownB, B())));
on("post", `${P}/bundles/{bundle}/versions`, 422, () => register(c.devA.session, enTree, c.a.slug));

const entries = (token: string | undefined, query: string) => req("GET", tr(B(), `/entries${query}`), token);
on("get", `${P}/entries`, 200, () => entries(c.devB.session, `?bundle=${B()}`));
on("get", `${P}/entries`, 401, () => entries(undefined, `?bundle=${B()}`));
on("get", `${P}/entries`, 403, () => entries(c.devC.session, `?bundle=${B()}`));
on("get", `${P}/entries`, 404, () => entries(c.devB.session, "?bundle=nope"));
on("get", `${P}/entries`, 422, () => entries(c.devB.session, ""));

const put = (token: string | undefined, body: Record<string, unknown> = {}) => req("PUT", tr(B(), "/entries"), token, { bundle: B(), namespace: "app", key: "hello", locale: "en", value: "Hello", ...body });
on("put", `${P}/entries`, 200, () => put(c.devB.session));
on("put", `${P}/entries`, 401, () => put(undefined));
on("put", `${P}/entries`, 403, () => put(c.devC.session));
on("put", `${P}/entries`, 404, () => put(c.devB.session, { bundle: "nope" }));
on("put", `${P}/entries`, 409, () => archived(() => put(c.devB.session)));
on("put", `${P}/entries`, 422, () => put(c.devB.session, { value: "" }));

const del = (token: string | undefined, query = `?bundle=${B()}&namespace=app&key=bye`) => req("DELETE", tr(B(), `/entries${query}`), token);
on("delete", `${P}/entries`, 204, async () => {
  await putEntry(t, B(), c.devB, { bundle: B(), namespace: "app", key: "bye", locale: "en", value: "Bye" });
  return del(c.devB.session);
});
on("delete", `${P}/entries`, 401, () => del(undefined));
on("delete", `${P}/entries`, 403, () => del(c.devC.session));
on("delete", `${P}/entries`, 404, () => del(c.devB.session, `?bundle=${B()}&namespace=app&key=never`));
on("delete", `${P}/entries`, 409, () => archived(() => del(c.devB.session)));
on("delete", `${P}/entries`, 422, () => del(c.devB.session, `?bundle=${B()}`));

const exp = (token: string | undefined, rest = "/export/en", headers?: Record<string, string>) => req("GET", tr(B(), rest), token, undefined, headers);
on("get", `${P}/export/{locale}`, 200, () => exp(c.devB.session));
on("get", `${P}/export/{locale}`, 304, async () => {
  const first = await exp(c.devB.session);
  await first.arrayBuffer();
  return exp(c.devB.session, "/export/en", { "if-none-match": first.headers.get("etag")! });
});
on("get", `${P}/export/{locale}`, 401, () => exp(undefined));
on("get", `${P}/export/{locale}`, 403, () => exp(c.devC.session));
on("get", `${P}/export/{locale}`, 404, () => exp(c.devB.session, "/export/en?bundle=nope"));
on("get", `${P}/export/{locale}`, 422, () => exp(c.devB.session, "/export/en?format=csv"));

const shared = (token: string | undefined, rest = `/shared/${common}`) => req("GET", tr(B(), rest), token);
on("get", `${P}/shared/{bundle}`, 200, () => shared(c.devB.session));
on("get", `${P}/shared/{bundle}`, 401, () => shared(undefined));
on("get", `${P}/shared/{bundle}`, 403, () => shared(c.devC.session));
on("get", `${P}/shared/{bundle}`, 404, () => shared(c.devB.session, `/shared/${ownB}`));
on("get", `${P}/shared/{bundle}`, 422, () => shared(c.devB.session, `/shared/${common}?locale=no_such_locale`));

const override = (token: string | undefined, body: Record<string, unknown> = {}) => req("PUT", tr(B(), `/shared/${common}/overrides`), token, { namespace: "common", key: "ok", locale: "en", value: "Fine", ...body });
on("put", `${P}/shared/{bundle}/overrides`, 200, () => override(c.devB.session));
on("put", `${P}/shared/{bundle}/overrides`, 401, () => override(undefined));
on("put", `${P}/shared/{bundle}/overrides`, 403, () => override(c.devC.session));
on("put", `${P}/shared/{bundle}/overrides`, 404, () => override(c.devB.session, { key: "missing" }));
on("put", `${P}/shared/{bundle}/overrides`, 409, () => archived(() => override(c.devB.session)));
on("put", `${P}/shared/{bundle}/overrides`, 422, () => override(c.devB.session, { value: "{broken" }));

const unoverride = (token: string | undefined, query = "?namespace=common&key=ok&locale=de") => req("DELETE", tr(B(), `/shared/${common}/overrides${query}`), token);
on("delete", `${P}/shared/{bundle}/overrides`, 204, async () => {
  await expectStatus(await override(c.devB.session, { locale: "de", value: "Gut" }), 200);
  return unoverride(c.devB.session);
});
on("delete", `${P}/shared/{bundle}/overrides`, 401, () => unoverride(undefined));
on("delete", `${P}/shared/{bundle}/overrides`, 403, () => unoverride(c.devC.session));
on("delete", `${P}/shared/{bundle}/overrides`, 404, () => unoverride(c.devB.session, "?namespace=common&key=ok&locale=it"));
on("delete", `${P}/shared/{bundle}/overrides`, 409, () => archived(() => unoverride(c.devB.session)));
on("delete", `${P}/shared/{bundle}/overrides`, 422, () => unoverride(c.devB.session, "?namespace=common&key=ok"));

on("get", "/api/v1/tms/bundles", 200, () => req("GET", "/api/v1/tms/bundles", c.devB.session));
on("get", "/api/v1/tms/bundles", 401, () => req("GET", "/api/v1/tms/bundles", undefined));
on("get", "/api/v1/tms/bundles", 403, async () => {
  // A person with a role in no project holds translations.read nowhere.
  const { makePerson } = await import("./fixtures");
  return req("GET", "/api/v1/tms/bundles", (await makePerson(t, [])).session);
});

describe("OpenAPI for translations", () => {
  for (const [method, p, statuses, body, ok] of SPEC) {
    describe(`${method.toUpperCase()} ${p}`, () => {
      test("is documented with its schemas and statuses", () => {
        const op = doc.paths[p]?.[method];
        expect(op).toBeDefined();
        expect(Object.keys(op!.responses).sort()).toEqual(statuses.map(String).sort());
        expect(op!["x-permission"]).toBe(method === "get" ? "translations.read" : "translations.write");
        if (body) expect(JSON.stringify(op!.requestBody?.content["application/json"]?.schema)).toContain(`#/components/schemas/${body}`);
        if (ok) expect(JSON.stringify(op!.responses[String(statuses.find((s) => s < 300))].content?.["application/json"]?.schema)).toContain(`#/components/schemas/${ok}`);
        for (const s of statuses.filter((s) => s >= 400)) expect(JSON.stringify(op!.responses[String(s)].content)).toContain("snake_case error code");
      });
      for (const s of statuses) {
        test(`answers ${s}`, async () => {
          const run = CASES[`${method} ${p}`]?.[s];
          expect(run, `no request for ${s}`).toBeDefined();
          const res = await run!();
          await expectStatus(res, s);
        });
      }
    });
  }

  test("a 409 archived (kept on purpose, docs/decisions/0283) names the project", async () => {
    const body = await expectStatus(await archived(() => attach(c.devB.session, { bundle: kit, version: "1.0.0" })), 409);
    expect(body).toMatchObject({ error: "archived", message: `Project "${c.b.slug}" is archived; it takes no changes.` });
  });

  test("the spec's schema names are registered", () => {
    for (const name of [
      "ProjectTranslationsResponse",
      "OwnBundleSummary",
      "SharedBundleSummary",
      "BundleSummary",
      "AttachRequest",
      "CreateBundleRequest",
      "CreateBundleResponse",
      "RegisterVersionRequest",
      "RegisterVersionResponse",
      "EntryResponse",
      "SetEntryRequest",
      "SetOwnEntryRequest",
      "SetEntryResponse",
      "SharedBundleResponse",
      "SharedKeyRow",
      "SetOverrideRequest",
      "OverrideResponse",
    ]) {
      expect(Object.keys(doc.components.schemas)).toContain(name);
    }
  });
});
