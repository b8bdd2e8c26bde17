/**
 * Name claims (DESIGN.md §3) and the package reads (document 3, Package reads), status by status.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { desc } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { makePerson, makeProject } from "../../../../test/fixtures";
import { registryCast, claim, npmPublishBody, npmTarball, cargoPublishBody, cargoMetadata, crateArchive, type RegistryCast } from "../../../../test/support/registries";
import { auditLog } from "../../../core/tables";

let t: TestApp;
let cast: RegistryCast;
let slug: string;
const claimPath = (registry: string, name: string, s = slug) => `/api/v1/projects/${s}/packages/${registry}/${encodeURIComponent(name)}`;

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  slug = cast.project.slug;
});
afterAll(() => t.close());

describe("PUT /api/v1/projects/{slug}/packages/{registry}/{name} (claim)", () => {
  test("201 for a new claim (audited), 200 when the project already holds it", async () => {
    const body = await expectStatus(await t.request("PUT", claimPath("npm", "@ops/ui"), { token: cast.publisher.session }), 201);
    expect(body).toEqual({ bytes: 0, latest: null, name: "@ops/ui", project: slug, published_at: null, publisher: null, registry: "npm", versions: 0, yanked: 0 });
    expect(t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()).toMatchObject({ action: "packages.publish", target: "package:npm:@ops/ui", project: slug, outcome: "allowed" });
    await expectStatus(await t.request("PUT", claimPath("npm", "@ops/ui"), { token: cast.publisher.session }), 200);
    // npm's own encoding of the scoped name works as one segment too.
    await expectStatus(await t.request("PUT", `/api/v1/projects/${slug}/packages/npm/@ops%2fui`, { token: cast.publisher.session }), 200);
  });

  test("409 when another project holds the name; cargo names clash modulo case and -/_", async () => {
    const other = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: other.slug }]);
    expect((await expectStatus(await t.request("PUT", claimPath("npm", "@ops/ui", other.slug), { token: dev.session }), 409)).error).toBe("conflict");
    await expectStatus(await t.request("PUT", claimPath("cargo", "Fast-Hash"), { token: cast.publisher.session }), 201);
    for (const variant of ["fast_hash", "FAST-HASH", "fast-Hash"]) await expectStatus(await t.request("PUT", claimPath("cargo", variant, other.slug), { token: dev.session }), 409);
    await expectStatus(await t.request("PUT", claimPath("cargo", "fast_hash"), { token: cast.publisher.session }), 200);
  });

  test("403 out of scope for an npm name outside OPS_NPM_SCOPE", async () => {
    for (const name of ["@acme/ui", "left-pad"]) {
      const body = await expectStatus(await t.request("PUT", claimPath("npm", name), { token: cast.publisher.session }), 403);
      expect(body.error).toBe("out_of_scope");
      expect(body.message).toContain("@ops");
    }
  });

  test("the scope comes from OPS_NPM_SCOPE", async () => {
    const acme = await createTestApp({ env: { OPS_NPM_SCOPE: "@acme" } });
    try {
      const c = await registryCast(acme);
      await expectStatus(await acme.request("PUT", `/api/v1/projects/${c.project.slug}/packages/npm/${encodeURIComponent("@acme/ui")}`, { token: c.publisher.session }), 201);
      await expectStatus(await acme.request("PUT", `/api/v1/projects/${c.project.slug}/packages/npm/${encodeURIComponent("@ops/ui")}`, { token: c.publisher.session }), 403);
    } finally {
      await acme.close();
    }
  });

  test("403 without packages.publish in the project; 401 without a credential", async () => {
    await expectStatus(await t.request("PUT", claimPath("npm", "@ops/x"), { token: cast.reader.session }), 403);
    await expectStatus(await t.request("PUT", claimPath("npm", "@ops/x"), { token: cast.outsider.session }), 403);
    await expectStatus(await t.request("PUT", claimPath("npm", "@ops/x")), 401);
  });

  test("404 for an unknown project or registry; 422 for a malformed name", async () => {
    await expectStatus(await t.request("PUT", claimPath("npm", "@ops/x", "no-such-project"), { token: cast.publisher.session }), 404);
    await expectStatus(await t.request("PUT", claimPath("pypi", "x"), { token: cast.publisher.session }), 404);
    await expectStatus(await t.request("PUT", claimPath("npm", "@ops/Upper"), { token: cast.publisher.session }), 422);
    await expectStatus(await t.request("PUT", claimPath("cargo", "9lives"), { token: cast.publisher.session }), 422);
    await expectStatus(await t.request("PUT", claimPath("cargo", "a".repeat(65)), { token: cast.publisher.session }), 422);
  });
});

describe("DELETE /api/v1/projects/{slug}/packages/{registry}/{name} (release)", () => {
  test("204 releases a claim with no versions; 404 when not held; 409 with versions", async () => {
    await claim(t, cast, "npm", "@ops/temp");
    await expectStatus(await t.request("DELETE", claimPath("npm", "@ops/temp"), { token: cast.publisher.session }), 204);
    await expectStatus(await t.request("DELETE", claimPath("npm", "@ops/temp"), { token: cast.publisher.session }), 404);
    await claim(t, cast, "npm", "@ops/kept");
    const tarball = await npmTarball("@ops/kept", "1.0.0");
    await expectStatus(await t.request("PUT", "/npm/@ops%2fkept", { token: cast.publisherToken, body: npmPublishBody("@ops/kept", "1.0.0", tarball) }), 201);
    await expectStatus(await t.request("DELETE", claimPath("npm", "@ops/kept"), { token: cast.publisher.session }), 409);
    await expectStatus(await t.request("DELETE", claimPath("npm", "@ops/kept"), { token: cast.reader.session }), 403);
    await expectStatus(await t.request("DELETE", claimPath("npm", "@ops/kept")), 401);
  });
});

describe("package reads", () => {
  beforeAll(async () => {
    await claim(t, cast, "cargo", "tiny-crate");
    const raw = cargoPublishBody(cargoMetadata("tiny-crate", "0.1.0"), await crateArchive("tiny-crate", "0.1.0"));
    await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: cast.publisherToken }, raw }), 200);
    t.clock.advance(1000);
    const raw2 = cargoPublishBody(cargoMetadata("tiny-crate", "0.2.0"), await crateArchive("tiny-crate", "0.2.0"));
    await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: cast.publisherToken }, raw: raw2 }), 200);
    await expectStatus(await t.request("DELETE", "/cargo/api/v1/crates/tiny-crate/0.1.0/yank", { headers: { authorization: cast.publisherToken } }), 200);
  });

  test("GET /api/v1/projects/{slug}/packages: 200 with every field", async () => {
    const body = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages`, { token: cast.reader.session }), 200);
    expect(body.cargo_index_url).toBe(`sparse+${t.url}/cargo/`);
    expect(body.npm_registry_url).toBe(`${t.url}/npm/`);
    expect(body.registry_host).toBe("");
    expect(body.images).toEqual([]);
    const tiny = body.cargo.find((p: { name: string }) => p.name === "tiny-crate");
    expect(tiny).toMatchObject({ latest: "0.2.0", project: slug, registry: "cargo", versions: 2, yanked: 1, publisher: cast.publisher.email, published_at: "2026-11-21T12:00:01.000Z" });
    expect(tiny.bytes).toBeGreaterThan(0);
    expect(body.npm.map((p: { name: string }) => p.name)).toEqual(["@ops/kept", "@ops/ui"]);
    expect(body.npm.find((p: { name: string }) => p.name === "@ops/ui")).toMatchObject({ latest: null, versions: 0, bytes: 0, publisher: null, published_at: null });
  });

  test("GET /api/v1/projects/{slug}/packages: 403 not a member, 404 no such project, 401", async () => {
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages`, { token: cast.outsider.session }), 403);
    await expectStatus(await t.request("GET", `/api/v1/projects/no-such/packages`, { token: cast.reader.session }), 404);
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages`), 401);
  });

  test("GET /api/v1/projects/{slug}/packages/{registry}: 200, 403, 404 (project or registry)", async () => {
    const npm = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/npm`, { token: cast.reader.session }), 200);
    expect(npm.every((p: { registry: string }) => p.registry === "npm")).toBe(true);
    const cargo = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/cargo`, { token: cast.readerToken }), 200);
    expect(cargo.map((p: { name: string }) => p.name)).toEqual(["Fast-Hash", "tiny-crate"]);
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/npm`, { token: cast.outsider.session }), 403);
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/rubygems`, { token: cast.reader.session }), 404);
    await expectStatus(await t.request("GET", `/api/v1/projects/no-such/packages/npm`, { token: cast.reader.session }), 404);
  });

  test("GET /api/v1/projects/{slug}/packages/{registry}/{name}: 200 with versions newest first, 403, 404", async () => {
    const detail = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/cargo/tiny-crate`, { token: cast.reader.session }), 200);
    expect(detail).toMatchObject({ name: "tiny-crate", project: slug, registry: "cargo", dist_tags: {}, shared_with: [] });
    expect(detail.versions.map((v: { version: string; yanked: boolean }) => [v.version, v.yanked])).toEqual([
      ["0.2.0", false],
      ["0.1.0", true],
    ]);
    expect(detail.versions[0]).toMatchObject({ integrity: null, publisher: cast.publisher.email, published_at: "2026-11-21T12:00:01.000Z" });
    expect(detail.versions[0].digest).toMatch(/^[0-9a-f]{64}$/);
    expect(detail.versions[0].size_bytes).toBeGreaterThan(0);
    const npm = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/npm/${encodeURIComponent("@ops/kept")}`, { token: cast.reader.session }), 200);
    expect(npm.dist_tags).toEqual({ latest: "1.0.0" });
    expect(npm.versions[0].integrity).toMatch(/^sha512-/);
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/cargo/tiny-crate`, { token: cast.outsider.session }), 403);
    await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/packages/cargo/unknown`, { token: cast.reader.session }), 404);
    await expectStatus(await t.request("GET", `/api/v1/projects/no-such/packages/cargo/tiny-crate`, { token: cast.reader.session }), 404);
  });

  test("GET /api/v1/packages: 200 every claimed name in the caller's projects, nothing else", async () => {
    const mine = await expectStatus(await t.request("GET", "/api/v1/packages", { token: cast.reader.session }), 200);
    expect(Object.keys(mine).sort()).toEqual(["cargo", "npm"]);
    expect(mine.cargo.map((p: { name: string }) => p.name)).toEqual(["Fast-Hash", "tiny-crate"]);
    expect(mine.npm.every((p: { project: string }) => p.project === slug)).toBe(true);
    const theirs = await expectStatus(await t.request("GET", "/api/v1/packages", { token: cast.outsider.session }), 200);
    expect(theirs).toEqual({ cargo: [], npm: [] });
    // A token pinned to the project sees that project's names.
    const pinned = await expectStatus(await t.request("GET", "/api/v1/packages", { token: cast.readerToken }), 200);
    expect(pinned.cargo.length).toBe(2);
    await expectStatus(await t.request("GET", "/api/v1/packages"), 401);
    // A caller with no packages.read anywhere gets the empty lists, as the spec says (decision 0536).
    const nobody = await makePerson(t, []);
    expect(await expectStatus(await t.request("GET", "/api/v1/packages", { token: nobody.session }), 200)).toEqual({ cargo: [], npm: [] });
  });
});
