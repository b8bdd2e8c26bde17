/**
 * The npm routes status by status (document 3, npm registry), with npm's error body, plus the
 * stored documents (full and abbreviated), every scoped-name encoding and the dist-tag routes.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createHash } from "node:crypto";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, claim, npmPublishBody, npmTarball, type RegistryCast } from "../../../../test/support/registries";
import { packageDocuments } from "../shared/tables";
import { auditLog } from "../../../core/tables";
import { desc } from "drizzle-orm";

let t: TestApp;
let cast: RegistryCast;
const NAME = "@ops/widgets";
const enc = "@ops%2fwidgets";

const publish = async (token: string, name: string, version: string, manifest: Record<string, unknown> = {}, tag = "latest") => {
  const tarball = await npmTarball(name, version, manifest);
  return t.request("PUT", `/npm/${encodeURIComponent(name)}`, { token, body: npmPublishBody(name, version, tarball, manifest, tag) });
};

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  await claim(t, cast, "npm", NAME);
  await claim(t, cast, "npm", "@ops/empty");
});
afterAll(() => t.close());

describe("PUT /npm/{pkg}", () => {
  test("201: publishes one version; the audit row commits with it", async () => {
    const body = await expectStatus(await publish(cast.publisherToken, NAME, "1.0.0", { dependencies: { "left-pad": "^1.0.0" } }), 201);
    expect(body).toEqual({ ok: true, id: NAME, version: "1.0.0" });
    const row = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(row).toMatchObject({ action: "packages.publish", outcome: "allowed", target: `package:npm:${NAME}@1.0.0`, project: cast.project.slug, actor: cast.publisher.email });
  });

  test("401 without a token, with npm's error body", async () => {
    const res = await t.request("PUT", `/npm/${enc}`, { body: {} });
    const body = await expectStatus(res, 401);
    expect(Object.keys(body)).toEqual(["error"]);
  });

  test("403 out of scope, unclaimed, or not allowed to publish", async () => {
    const out = await expectStatus(await publish(cast.publisherToken, "@other/widgets", "1.0.0"), 403);
    expect(out.error).toContain("out of scope");
    const unscoped = await expectStatus(await publish(cast.publisherToken, "widgets", "1.0.0"), 403);
    expect(unscoped.error).toContain("out of scope");
    const unclaimed = await expectStatus(await publish(cast.publisherToken, "@ops/nobody-claimed-this", "1.0.0"), 403);
    expect(unclaimed.error).toContain("not claimed");
    const reader = await expectStatus(await publish(cast.readerToken, NAME, "1.0.1"), 403);
    expect(reader.error).toContain("packages.publish");
    const outsider = await expectStatus(await publish(cast.outsiderToken, NAME, "1.0.1"), 403);
    expect(outsider.error).toContain("packages.publish");
  });

  test("409 when the version is already published", async () => {
    const body = await expectStatus(await publish(cast.publisherToken, NAME, "1.0.0"), 409);
    expect(body.error).toContain("already published");
  });

  test("413 over the body limit, with a clear message", async () => {
    const small = await createTestApp({ env: { OPS_MAX_PUBLISH_BYTES: "4096" } });
    try {
      const c = await registryCast(small);
      await claim(small, c, "npm", "@ops/big");
      const tarball = new Uint8Array(8192).map((_, i) => (i * 7919) % 251);
      const res = await small.request("PUT", "/npm/@ops%2fbig", { token: c.publisherToken, body: npmPublishBody("@ops/big", "1.0.0", tarball) });
      const body = await expectStatus(res, 413);
      expect(body.error).toBe("The request body is larger than the limit of 4096 bytes for this route.");
    } finally {
      await small.close();
    }
  });

  test("422 when the body is not exactly one version with one tarball", async () => {
    const tarball = await npmTarball(NAME, "2.0.0");
    const two = npmPublishBody(NAME, "2.0.0", tarball) as { versions: Record<string, unknown>; _attachments: Record<string, unknown> };
    two.versions["2.0.1"] = { ...(two.versions["2.0.0"] as object), version: "2.0.1" };
    expect((await expectStatus(await t.request("PUT", `/npm/${enc}`, { token: cast.publisherToken, body: two }), 422)).error).toContain("exactly one version");
    const none = npmPublishBody(NAME, "2.0.0", tarball) as { _attachments: Record<string, unknown> };
    none._attachments = {};
    await expectStatus(await t.request("PUT", `/npm/${enc}`, { token: cast.publisherToken, body: none }), 422);
    // A deprecate-style rewrite (no _attachments at all) is refused too.
    await expectStatus(await t.request("PUT", `/npm/${enc}`, { token: cast.publisherToken, body: { name: NAME, versions: {} } }), 422);
  });

  test("422 when the manifest disagrees with the tarball's package.json", async () => {
    const tarball = await npmTarball(NAME, "3.0.0", { dependencies: { evil: "1.0.0" } });
    const res = await t.request("PUT", `/npm/${enc}`, { token: cast.publisherToken, body: npmPublishBody(NAME, "3.0.0", tarball, { dependencies: {} }) });
    expect((await expectStatus(res, 422)).error).toContain("dependencies");
    const other = await npmTarball("@ops/someone-else", "3.0.0");
    expect((await expectStatus(await t.request("PUT", `/npm/${enc}`, { token: cast.publisherToken, body: npmPublishBody(NAME, "3.0.0", other) }), 422)).error).toContain("package.json");
  });

  test("422 when the declared integrity does not match the tarball", async () => {
    const body = npmPublishBody(NAME, "3.1.0", await npmTarball(NAME, "3.1.0")) as { versions: Record<string, { dist: { integrity: string } }> };
    body.versions["3.1.0"].dist.integrity = `sha512-${createHash("sha512").update("other").digest("base64")}`;
    expect((await expectStatus(await t.request("PUT", `/npm/${enc}`, { token: cast.publisherToken, body }), 422)).error).toContain("SHA-512");
  });
});

describe("GET /npm/{pkg}", () => {
  test("200 full document in every scoped-name encoding", async () => {
    for (const path of [`/npm/${enc}`, "/npm/@ops%2Fwidgets", "/npm/%40ops%2fwidgets", "/npm/@ops/widgets"]) {
      const res = await t.request("GET", path, { token: cast.readerToken, headers: { accept: "application/json" } });
      expect(res.headers.get("content-type")).toBe("application/json");
      const doc = await expectStatus(res, 200);
      expect(doc.name).toBe(NAME);
      expect(doc["dist-tags"]).toEqual({ latest: "1.0.0" });
      const v = doc.versions["1.0.0"];
      expect(v.dependencies).toEqual({ "left-pad": "^1.0.0" });
      expect(v.dist.tarball).toBe(`${t.url}/npm/@ops%2Fwidgets/-/widgets-1.0.0.tgz`);
      expect(v.dist.integrity).toMatch(/^sha512-/);
      expect(v.dist.shasum).toMatch(/^[0-9a-f]{40}$/);
      expect(v._npmUser).toEqual({ name: cast.publisher.email });
      expect(doc.time["1.0.0"]).toBe("2026-11-21T12:00:00.000Z");
      expect(doc._rev).toMatch(/^\d+-[0-9a-f]{32}$/);
    }
  });

  test("200 abbreviated document for the install Accept header", async () => {
    const res = await t.request("GET", `/npm/${enc}`, { token: cast.readerToken, headers: { accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*" } });
    expect(res.headers.get("content-type")).toBe("application/vnd.npm.install-v1+json");
    const doc = await expectStatus(res, 200);
    expect(Object.keys(doc).sort()).toEqual(["dist-tags", "modified", "name", "versions"]);
    expect(doc.versions["1.0.0"]._npmUser).toBeUndefined();
    expect(doc.versions["1.0.0"].dist.integrity).toMatch(/^sha512-/);
  });

  test("documents are stored at publish, never rendered per request; 304 for a held ETag", async () => {
    const stored = t.core.db.select().from(packageDocuments).all().filter((d) => d.kind.startsWith("npm."));
    expect(stored.map((d) => d.kind).sort()).toEqual(["npm.abbreviated", "npm.full"]);
    const res = await t.request("GET", `/npm/${enc}`, { token: cast.readerToken });
    const etag = res.headers.get("etag")!;
    await res.text();
    expect(etag).toBe(stored.find((d) => d.kind === "npm.full")!.etag);
    const again = await t.request("GET", `/npm/${enc}`, { token: cast.readerToken, headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  test("401 without a live token", async () => {
    await expectStatus(await t.request("GET", `/npm/${enc}`), 401);
    await expectStatus(await t.request("GET", `/npm/${enc}`, { token: "opst_" + "0".repeat(49) }), 401);
  });

  test("403 for a caller not allowed to read the project's packages", async () => {
    expect((await expectStatus(await t.request("GET", `/npm/${enc}`, { token: cast.outsiderToken }), 403)).error).toContain("packages.read");
  });

  test("404 for an unknown package, and for a claimed name with no version yet", async () => {
    expect((await expectStatus(await t.request("GET", "/npm/@ops%2fnope", { token: cast.readerToken }), 404)).error).toContain("not in this registry");
    await expectStatus(await t.request("GET", "/npm/@ops%2fempty", { token: cast.readerToken }), 404);
    await expectStatus(await t.request("GET", "/npm/npm", { token: cast.readerToken }), 404);
  });
});

describe("GET /npm/{pkg}/-/{file}", () => {
  test("200 the archive bytes, matching the advertised integrity", async () => {
    const doc = await expectStatus(await t.request("GET", `/npm/${enc}`, { token: cast.readerToken }), 200);
    const url = new URL(doc.versions["1.0.0"].dist.tarball);
    for (const path of [url.pathname, "/npm/@ops/widgets/-/widgets-1.0.0.tgz"]) {
      const res = await t.request("GET", path, { token: cast.readerToken });
      expect(res.status).toBe(200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(`sha512-${createHash("sha512").update(bytes).digest("base64")}`).toBe(doc.versions["1.0.0"].dist.integrity);
    }
  });

  test("401, 403 and 404", async () => {
    await expectStatus(await t.request("GET", `/npm/${enc}/-/widgets-1.0.0.tgz`), 401);
    await expectStatus(await t.request("GET", `/npm/${enc}/-/widgets-1.0.0.tgz`, { token: cast.outsiderToken }), 403);
    await expectStatus(await t.request("GET", `/npm/${enc}/-/widgets-9.9.9.tgz`, { token: cast.readerToken }), 404);
    await expectStatus(await t.request("GET", `/npm/@ops%2fnope/-/nope-1.0.0.tgz`, { token: cast.readerToken }), 404);
  });
});

describe("dist-tags, whoami, ping", () => {
  test("dist-tag add, ls and rm; latest cannot be removed; unknown version is 404", async () => {
    await expectStatus(await publish(cast.publisherToken, NAME, "1.1.0-beta.1", {}, "next"), 201);
    await expectStatus(await t.request("PUT", `/npm/-/package/${enc}/dist-tags/beta`, { token: cast.publisherToken, body: "1.1.0-beta.1" }), 200);
    expect(await expectStatus(await t.request("GET", `/npm/-/package/${enc}/dist-tags`, { token: cast.readerToken }), 200)).toEqual({ beta: "1.1.0-beta.1", latest: "1.0.0", next: "1.1.0-beta.1" });
    const doc = await expectStatus(await t.request("GET", `/npm/${enc}`, { token: cast.readerToken }), 200);
    expect(doc["dist-tags"].beta).toBe("1.1.0-beta.1");
    await expectStatus(await t.request("PUT", `/npm/-/package/${enc}/dist-tags/beta`, { token: cast.publisherToken, body: "7.7.7" }), 404);
    await expectStatus(await t.request("PUT", `/npm/-/package/${enc}/dist-tags/beta`, { token: cast.readerToken, body: "1.0.0" }), 403);
    await expectStatus(await t.request("DELETE", `/npm/-/package/${enc}/dist-tags/latest`, { token: cast.publisherToken }), 422);
    await expectStatus(await t.request("DELETE", `/npm/-/package/${enc}/dist-tags/beta`, { token: cast.publisherToken }), 200);
    await expectStatus(await t.request("DELETE", `/npm/-/package/${enc}/dist-tags/beta`, { token: cast.publisherToken }), 404);
  });

  test("whoami names the caller; ping needs nothing", async () => {
    expect(await expectStatus(await t.request("GET", "/npm/-/whoami", { token: cast.readerToken }), 200)).toEqual({ username: cast.reader.email });
    await expectStatus(await t.request("GET", "/npm/-/whoami"), 401);
    expect(await expectStatus(await t.request("GET", "/npm/-/ping"), 200)).toEqual({});
  });
});
