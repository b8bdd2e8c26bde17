import { describe, test, expect } from "bun:test";
import { Database } from "bun:sqlite";
import { Elysia, t } from "elysia";
import { ERROR_STATUS, OpsError, normaliseError, toErrorBody, notFound, forbidden, unauthorized, invalid, type ErrorCode } from "./errors";

/** Throw `fn`'s error back as a value (the error a real SQLite statement raises). */
function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected an error");
}

/** Run one request through a real Elysia app and return what its onError saw, normalised. */
async function elysiaError(app: Elysia<any, any, any, any, any, any, any>, request: Request) {
  let seen: { code: string | number; error: unknown } | null = null;
  const wrapped = new Elysia()
    .onError(({ code, error }) => {
      seen = { code, error };
      return new Response("seen", { status: 599 });
    })
    .use(app);
  await wrapped.handle(request);
  if (!seen) throw new Error("no error reached onError");
  const s = seen as { code: string | number; error: unknown };
  return normaliseError(s.error, s.code);
}

describe("ERROR_STATUS", () => {
  test("every code maps to its status through OpsError and normaliseError", () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      const e = new OpsError(code as ErrorCode, `message for ${code}`);
      expect(e.status).toBe(status);
      const n = normaliseError(e);
      expect(n.status).toBe(status);
      expect(n.code).toBe(code);
      expect(n.internal).toBe(false);
      expect(toErrorBody(n)).toEqual({ error: code, message: `message for ${code}` });
    }
  });

  test("codes are snake_case and statuses are HTTP error statuses", () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
    }
  });

  test("401 and 403 map both ways: code→status and status→code", () => {
    expect(ERROR_STATUS.unauthorized).toBe(401);
    expect(ERROR_STATUS.forbidden).toBe(403);
    // A bare status from Elysia (e.g. `status(401)`) becomes the canonical code for it.
    expect(normaliseError(new Error("x"), 401).code).toBe("unauthorized");
    expect(normaliseError(new Error("x"), 403).code).toBe("forbidden");
    expect(normaliseError(new Error("x"), 401).status).toBe(401);
    expect(normaliseError(new Error("x"), 403).status).toBe(403);
    // And the shorthands agree with the table.
    expect(unauthorized().status).toBe(401);
    expect(unauthorized().code).toBe("unauthorized");
    expect(forbidden().status).toBe(403);
    expect(forbidden().code).toBe("forbidden");
  });

  test("shorthands carry their code, status and details", () => {
    expect(notFound("project")).toMatchObject({ code: "not_found", status: 404, message: "No such project." });
    const v = invalid("name", "is too long");
    expect(v.status).toBe(422);
    expect(v.details).toEqual({ fields: [{ path: "name", message: "is too long" }] });
    const withHeaders = new OpsError("rate_limited", "Slow down.", undefined, { headers: { "retry-after": "5" } });
    expect(normaliseError(withHeaders).headers).toEqual({ "retry-after": "5" });
  });
});

describe("normaliseError: SQLite constraint violations", () => {
  const db = new Database(":memory:", { strict: true });
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("CREATE TABLE parents (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)");
  db.exec("CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parents(id))");
  db.query("INSERT INTO parents (id, name) VALUES (1, 'a')").run();

  test("a unique violation is 409 already_exists", () => {
    const e = caught(() => db.query("INSERT INTO parents (id, name) VALUES (2, 'a')").run());
    const n = normaliseError(e);
    expect(n).toMatchObject({ status: 409, code: "already_exists", internal: false });
    expect(n.message).not.toContain("UNIQUE");
  });

  test("a primary-key violation is 409 already_exists", () => {
    const e = caught(() => db.query("INSERT INTO parents (id, name) VALUES (1, 'b')").run());
    expect(normaliseError(e)).toMatchObject({ status: 409, code: "already_exists" });
  });

  test("a foreign-key violation is 409 conflict", () => {
    const e = caught(() => db.query("INSERT INTO children (id, parent_id) VALUES (1, 99)").run());
    const n = normaliseError(e);
    expect(n).toMatchObject({ status: 409, code: "conflict", internal: false });
    expect(n.message).not.toContain("FOREIGN KEY");
  });

  test("another SQLite error is an internal 500", () => {
    const e = caught(() => db.query("SELECT * FROM no_such_table").all());
    expect(normaliseError(e)).toMatchObject({ status: 500, code: "internal", internal: true });
  });
});

describe("normaliseError: Elysia's errors", () => {
  const app = new Elysia()
    .post("/things", ({ body }) => body, { body: t.Object({ name: t.String({ minLength: 2 }), size: t.Integer() }) })
    .get("/boom", () => {
      throw new Error("db password is hunter2");
    });

  test("VALIDATION is 422 validation_failed with details.fields", async () => {
    const n = await elysiaError(
      app,
      new Request("http://localhost/things", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "x", size: "big" }) }),
    );
    expect(n.status).toBe(422);
    expect(n.code).toBe("validation_failed");
    const fields = (n.details as { fields: Array<{ path: string; message: string }> }).fields;
    expect(fields.map((f) => f.path)).toEqual(expect.arrayContaining(["name", "size"]));
    for (const f of fields) expect(f.message.length).toBeGreaterThan(0);
    expect(n.message).toContain(fields[0].path);
  });

  test("PARSE is 400 malformed_json", async () => {
    const n = await elysiaError(
      app,
      new Request("http://localhost/things", { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" }),
    );
    expect(n).toMatchObject({ status: 400, code: "malformed_json" });
  });

  test("an OpsError thrown by a body parser keeps its status through Elysia's PARSE wrapper", async () => {
    const parsing = new Elysia()
      .onParse(() => {
        throw new OpsError("payload_too_large", "Too big.");
      })
      .post("/p", ({ body }) => body);
    const n = await elysiaError(parsing, new Request("http://localhost/p", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }));
    expect(n).toMatchObject({ status: 413, code: "payload_too_large", message: "Too big." });
  });

  test("NOT_FOUND is 404 not_found", async () => {
    const n = await elysiaError(app, new Request("http://localhost/nowhere"));
    expect(n).toMatchObject({ status: 404, code: "not_found" });
  });

  test("a plain Error is a 500 whose body does not carry the internal message", async () => {
    const n = await elysiaError(app, new Request("http://localhost/boom"));
    expect(n).toMatchObject({ status: 500, code: "internal", internal: true });
    const body = JSON.stringify(toErrorBody(n));
    expect(body).not.toContain("hunter2");
    expect(body).not.toContain("db password");
  });

  test("something that is not an Error at all is a 500 too", () => {
    expect(normaliseError("a string")).toMatchObject({ status: 500, code: "internal", internal: true });
    expect(normaliseError(null)).toMatchObject({ status: 500, internal: true });
    expect(normaliseError(undefined, "UNKNOWN")).toMatchObject({ status: 500, internal: true });
  });
});
