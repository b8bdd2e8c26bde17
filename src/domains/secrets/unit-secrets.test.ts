import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { desc } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { projectWithOwner, archiveProject, type ProjectCtx } from "../../../test/resources-helpers";
import { auditLog } from "../../core/tables";
import { renderDotenv } from "./dotenv";

let t: TestApp;
let p: ProjectCtx;

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  await expectStatus(await t.request("POST", `${p.base}/resources/service?environment=staging`, { token: p.owner.session, body: { name: "worker", spec: { image: "acme/worker:1" } } }), 201);
  await expectStatus(await p.req("POST", "/resources/service", { name: "web", spec: { image: "acme/web:1" } }), 201);
});
afterAll(() => t.close());

/** Parse a dotenv document with python-dotenv, a real reader. */
function pythonDotenv(text: string): Record<string, string> {
  const dir = tempDir("ops-dotenv-");
  const file = path.join(dir, "x.env");
  writeFileSync(file, text);
  // python3 on PATH (pip's python-dotenv), else Debian's /usr/bin/python3 (python3-dotenv).
  let last = "";
  for (const python of ["python3", "/usr/bin/python3"]) {
    const out = Bun.spawnSync([python, "-c", "import json,sys; from dotenv import dotenv_values; print(json.dumps(dotenv_values(sys.argv[1], interpolate=False)))", file]);
    if (out.exitCode === 0) return JSON.parse(out.stdout.toString());
    last = out.stderr.toString();
  }
  throw new Error(`python-dotenv is needed (Debian package python3-dotenv): ${last}`);
}

describe("PUT /api/v1/projects/{slug}/secrets/{service}/{name}", () => {
  test("204: create, then rotate (version bumps)", async () => {
    await expectStatus(await p.req("PUT", "/secrets/web/STRIPE_KEY", { value: "sk_live_a1" }), 204);
    await expectStatus(await p.req("PUT", "/secrets/web/STRIPE_KEY", { value: "sk_live_a2" }), 204);
    await expectStatus(await p.req("PUT", "/secrets/worker/QUEUE_URL", { value: "amqp://q" }), 204);
    const audit = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(audit).toMatchObject({ action: "secrets.write", target: "secrets:worker/QUEUE_URL" });
  });
  test("404: the unit is not a service or bucket of this project (another project's)", async () => {
    const q = await projectWithOwner(t);
    await expectStatus(await q.req("POST", "/resources/service", { name: "theirs", spec: { image: "x" } }), 201);
    await expectStatus(await p.req("PUT", "/secrets/theirs/X", { value: "v" }), 404);
    await expectStatus(await t.request("PUT", `/api/v1/projects/nope/secrets/web/X`, { token: p.owner.session, body: { value: "v" } }), 404);
  });
  test("422: name or service not shaped right", async () => {
    await expectStatus(await p.req("PUT", "/secrets/web/not-env", { value: "v" }), 422);
    await expectStatus(await p.req("PUT", "/secrets/Web_Svc/X", { value: "v" }), 422);
    await expectStatus(await p.req("PUT", "/secrets/web/X", { nope: 1 }), 422);
  });
  test("409 archived project; 401; 403 for a viewer", async () => {
    const q = await projectWithOwner(t);
    await expectStatus(await q.req("POST", "/resources/service", { name: "s", spec: { image: "x" } }), 201);
    archiveProject(t, q.slug);
    await expectStatus(await q.req("PUT", "/secrets/s/X", { value: "v" }), 409);
    await expectStatus(await t.request("PUT", `${p.base}/secrets/web/X`, { body: { value: "v" } }), 401);
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    await expectStatus(await p.req("PUT", "/secrets/web/X", { value: "v" }, viewer.session), 403);
  });
});

describe("GET /api/v1/projects/{slug}/secrets", () => {
  test("200: metadata only, never values, by unit then name", async () => {
    const list = await expectStatus(await p.req("GET", "/secrets"), 200);
    expect(list).toEqual([
      { name: "STRIPE_KEY", service: "web", updated_at: expect.any(String), version: 2 },
      { name: "QUEUE_URL", service: "worker", updated_at: expect.any(String), version: 1 },
    ]);
  });
  test("404 no such project; 403 for a non-member", async () => {
    await expectStatus(await t.request("GET", "/api/v1/projects/nope/secrets", { token: p.owner.session }), 404);
    const stranger = await makePerson(t, []);
    await expectStatus(await p.req("GET", "/secrets", undefined, stranger.session), 403);
  });
});

describe("GET /api/v1/projects/{slug}/secrets/{service}/env", () => {
  const tricky: Record<string, string> = {
    PLAIN: "abc-123_x.y:z/@%+=,",
    SPACES: "hello world",
    DOLLAR: "price $5 and ${HOME} $HOME",
    QUOTES: `say "hi" it's`,
    NEWLINES: "line one\nline two\r\nline three",
    BACKSLASH: "C:\\path\\to",
    HASH: "value # not a comment",
    EMPTY: "",
  };
  test("200 text/plain dotenv, audited; values survive a real reader (python-dotenv)", async () => {
    for (const [k, v] of Object.entries(tricky)) await expectStatus(await p.req("PUT", `/secrets/web/${k}`, { value: v }), 204);
    const res = await p.req("GET", "/secrets/web/env");
    expect(res.headers.get("content-type")).toStartWith("text/plain");
    const text = await expectStatus<string>(res, 200);
    const parsed = pythonDotenv(text);
    for (const [k, v] of Object.entries(tricky)) {
      if (k === "DOLLAR" || k === "NEWLINES") continue;
      expect({ k, v: parsed[k] }).toEqual({ k, v });
    }
    // `$` stays literal for interpolating readers: quoted literally, or escaped where escapes apply.
    expect(text).toContain(`DOLLAR='price $5 and \${HOME} $HOME'\n`);
    expect(parsed.DOLLAR).toBe(tricky.DOLLAR);
    expect(parsed.NEWLINES).toBe(tricky.NEWLINES);
    const audit = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(audit).toMatchObject({ action: "secrets.reveal", target: "secrets:web", outcome: "allowed" });
    for (const v of Object.values(tricky).filter((v) => v.length > 3)) expect(audit.context ?? "").not.toContain(v);
  });
  test("escaping in double quotes: backslash, quote, newline and dollar", () => {
    expect(renderDotenv([["A", `it's $HOME\n"x"\\`]])).toBe(`A="it's \\$HOME\\n\\"x\\"\\\\"\n`);
    expect(pythonDotenv(renderDotenv([["A", `it's\n"x"\\`]])).A).toBe(`it's\n"x"\\`);
  });
  test("404: the service has no secrets", async () => {
    await expectStatus(await p.req("GET", "/secrets/nothing/env"), 404);
  });
  test("403: secrets.reveal is needed (a developer has not got it)", async () => {
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    await expectStatus(await p.req("GET", "/secrets/web/env", undefined, dev.session), 403);
  });
});

describe("DELETE /api/v1/projects/{slug}/secrets/{service}/{name}", () => {
  test("204, then 404 no such secret", async () => {
    await expectStatus(await p.req("DELETE", "/secrets/worker/QUEUE_URL"), 204);
    await expectStatus(await p.req("DELETE", "/secrets/worker/QUEUE_URL"), 404);
    await expectStatus(await p.req("GET", "/secrets/worker/env"), 404);
  });
  test("403 for a viewer", async () => {
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    await expectStatus(await p.req("DELETE", "/secrets/web/PLAIN", undefined, viewer.session), 403);
  });
});
