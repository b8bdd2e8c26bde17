/**
 * The HTTP app's kernel plumbing, over a live listener: request ids, body limits, error bodies,
 * health and readiness.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { Elysia, t } from "elysia";
import { createTestApp, expectStatus, type TestApp } from "../test/harness";
import type { DomainModule } from "./core/core";
import { authzPlugin } from "./core/authz/plugin";

const plumbing: DomainModule = {
  name: "plumbing-test",
  // /t/huge only raises the server-wide ceiling (the largest limit) above /t/big's.
  bodyLimits: () => [
    { prefix: "/t/big", bytes: 8192 },
    { prefix: "/t/huge", bytes: 65536 },
  ],
  routes(core) {
    return new Elysia({ name: "plumbing-test-routes" })
      .use(authzPlugin(core))
      .post("/t/echo", ({ body }) => ({ got: body }), { public: true, body: t.Object({ text: t.String() }) })
      .post("/t/big/echo", ({ body }) => ({ size: body.text.length }), { public: true, body: t.Object({ text: t.String() }) })
      .get(
        "/t/boom",
        () => {
          throw new Error("connection string postgres://ops:hunter2@db/ops is wrong");
        },
        { public: true },
      );
  },
};

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ modules: [plumbing], env: { OPS_MAX_BODY_BYTES: "2048" } });
});
afterAll(() => app.close());

/** A body sent with Transfer-Encoding: chunked (no Content-Length). */
function chunked(text: string, pieces = 4): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const size = Math.ceil(bytes.length / pieces);
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i >= bytes.length) return c.close();
      c.enqueue(bytes.slice(i, i + size));
      i += size;
    },
  });
}

async function postChunked(path: string, text: string): Promise<Response> {
  return fetch(app.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: chunked(text), duplex: "half" } as RequestInit);
}

describe("request ids", () => {
  test("every response carries x-request-id, a fresh one each time", async () => {
    const ids = new Set<string>();
    for (const [method, path] of [
      ["GET", "/health"],
      ["GET", "/nowhere"],
      ["GET", "/t/boom"],
      ["POST", "/t/echo"],
    ]) {
      const res = await app.request(method, path, method === "POST" ? { raw: "{}", headers: { "content-type": "application/json" } } : {});
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      ids.add(id!);
    }
    expect(ids.size).toBe(4);
  });

  test("a sane client request id is echoed; an insane one is replaced", async () => {
    const sane = await app.request("GET", "/health", { headers: { "x-request-id": "trace-abc.123_XYZ" } });
    expect(sane.headers.get("x-request-id")).toBe("trace-abc.123_XYZ");
    for (const insane of ["short", "has spaces in it", "x".repeat(65), "semi;colon-12345"]) {
      const res = await app.request("GET", "/health", { headers: { "x-request-id": insane } });
      expect(res.headers.get("x-request-id")).not.toBe(insane);
      expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  test("the request log line carries the id, method, path and status", async () => {
    const res = await app.request("GET", "/health", { headers: { "x-request-id": "log-line-check-1" } });
    await res.text();
    await Bun.sleep(0);
    const line = app.logs.map((l) => JSON.parse(l)).find((l) => l.req === "log-line-check-1" && l.msg === "request");
    expect(line).toMatchObject({ method: "GET", path: "/health", status: 200, level: "info" });
  });
});

describe("body limits", () => {
  const big = JSON.stringify({ text: "x".repeat(3000) });

  test("413 with a JSON message when Content-Length is over the limit", async () => {
    const res = await app.request("POST", "/t/echo", { raw: big, headers: { "content-type": "application/json" } });
    const body = await expectStatus(res, 413);
    expect(body).toEqual({ error: "payload_too_large", message: "The request body is larger than the limit of 2048 bytes for this route.", details: { limit_bytes: 2048 } });
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  test("413 for a chunked body (no Content-Length) once it passes the limit", async () => {
    const res = await postChunked("/t/echo", big);
    const body = await expectStatus(res, 413);
    expect(body.error).toBe("payload_too_large");
    expect(body.details).toEqual({ limit_bytes: 2048 });
  });

  test("under the limit, chunked or not, goes through", async () => {
    const small = JSON.stringify({ text: "hello" });
    expect(await expectStatus(await app.request("POST", "/t/echo", { raw: small, headers: { "content-type": "application/json" } }), 200)).toEqual({ got: { text: "hello" } });
    expect(await expectStatus(await postChunked("/t/echo", small), 200)).toEqual({ got: { text: "hello" } });
  });

  test("a domain's prefix limit applies to its routes (longest prefix wins)", async () => {
    expect(await expectStatus(await app.request("POST", "/t/big/echo", { raw: big, headers: { "content-type": "application/json" } }), 200)).toEqual({ size: 3000 });
    expect(await expectStatus(await postChunked("/t/big/echo", big), 200)).toEqual({ size: 3000 });
    const huge = JSON.stringify({ text: "x".repeat(9000) });
    const a = await expectStatus(await app.request("POST", "/t/big/echo", { raw: huge, headers: { "content-type": "application/json" } }), 413);
    expect(a.message).toContain("8192 bytes");
    await expectStatus(await postChunked("/t/big/echo", huge), 413);
  });

  test("past the largest limit of any route, Bun refuses a Content-Length body itself (bare 413)", async () => {
    const res = await app.request("POST", "/t/echo", { raw: "x".repeat(70_000), headers: { "content-type": "application/json" } });
    expect(res.status).toBe(413);
    expect(await res.text()).toBe("");
    // A chunked one is cut by the route's own limit first, with the JSON body.
    expect((await expectStatus(await postChunked("/t/echo", "x".repeat(70_000)), 413)).details).toEqual({ limit_bytes: 2048 });
  });
});

describe("error bodies", () => {
  test("malformed JSON is 400 malformed_json", async () => {
    const body = await expectStatus(await app.request("POST", "/t/echo", { raw: '{"text": ', headers: { "content-type": "application/json" } }), 400);
    expect(body).toEqual({ error: "malformed_json", message: "The request body is not valid JSON." });
  });

  test("an unknown route is a 404 JSON body", async () => {
    const res = await app.request("GET", "/api/v1/nothing-here");
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await expectStatus(res, 404)).toEqual({ error: "not_found", message: "No such route." });
  });

  test("a validation failure is 422 with the failing fields", async () => {
    const body = await expectStatus(await app.request("POST", "/t/echo", { body: { text: 5 } }), 422);
    expect(body.error).toBe("validation_failed");
    expect(body.details.fields).toEqual([expect.objectContaining({ path: "text" })]);
  });

  test("a throwing route is a 500 that does not leak the message, logged with the request id", async () => {
    const res = await app.request("GET", "/t/boom", { headers: { "x-request-id": "boom-request-0001" } });
    const text = await res.clone().text();
    const body = await expectStatus(res, 500);
    expect(body).toEqual({ error: "internal", message: "Something went wrong on the server; it has been logged." });
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("connection string");
    const line = app.logs.map((l) => JSON.parse(l)).find((l) => l.msg === "request failed" && l.req === "boom-request-0001");
    expect(line).toBeDefined();
    expect(line.level).toBe("error");
    expect(line.path).toBe("/t/boom");
    expect(line.err.message).toContain("connection string");
  });
});

describe("health and readiness", () => {
  test("/health is 200 with the version", async () => {
    expect(await expectStatus(await app.request("GET", "/health"), 200)).toEqual({ status: "ok", version: app.core.version });
  });

  test("/readyz is 503 until ready, 200 when ready, 503 again while draining", async () => {
    expect(app.core.state.ready).toBe(false);
    expect(await expectStatus(await app.request("GET", "/readyz"), 503)).toEqual({ ready: false, draining: false });
    app.core.state.ready = true;
    expect(await expectStatus(await app.request("GET", "/readyz"), 200)).toEqual({ ready: true, draining: false });
    app.core.state.draining = true;
    expect(await expectStatus(await app.request("GET", "/readyz"), 503)).toEqual({ ready: false, draining: true });
    await expectStatus(await app.request("GET", "/health"), 200);
    app.core.state.draining = false;
  });

  test("/api/docs/json is the OpenAPI document with /health and without the docs routes", async () => {
    const doc = await expectStatus(await app.request("GET", "/api/docs/json"), 200);
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toBe(app.core.version);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/health", "/readyz", "/t/echo"]));
    expect(doc.paths["/api/docs"]).toBeUndefined();
    expect(doc.paths["/api/docs/json"]).toBeUndefined();
  });
});
