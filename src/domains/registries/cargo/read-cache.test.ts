/**
 * The hot path's caches never outlive what they were read from (docs/decisions/0641): a sparse
 * index file fetched (and so cached: the package row, its project, the stored document, the
 * principal and its grants) answers the change on the very next fetch after a publish, a yank,
 * an unyank, a claim released, a token revoked, a role changed, a membership removed, and a write
 * by another database connection.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { Database } from "bun:sqlite";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, claim, cargoPublishBody, cargoMetadata, crateArchive, type RegistryCast } from "../../../../test/support/registries";
import { makePerson, mintToken, makeRole } from "../../../../test/fixtures";

let t: TestApp;
let cast: RegistryCast;
const bare = (token: string) => ({ authorization: token });

async function publish(name: string, vers: string) {
  return expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: bare(cast.publisherToken), raw: cargoPublishBody(cargoMetadata(name, vers), await crateArchive(name, vers)) }), 200);
}

/** The index file's lines as objects, with its ETag, read twice so the second answer is the cached one. */
async function index(name: string, token = cast.readerToken): Promise<{ status: number; etag: string | null; lines: Array<{ vers: string; yanked: boolean }> }> {
  const at = `/cargo/${name.length <= 2 ? name.length : name.length === 3 ? `3/${name[0]}` : `${name.slice(0, 2)}/${name.slice(2, 4)}`}/${name}`;
  await t.request("GET", at, { headers: bare(token) });
  const res = await t.request("GET", at, { headers: bare(token) });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get("etag"), lines: res.status === 200 ? text.trimEnd().split("\n").map((l) => JSON.parse(l)) : [] };
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  for (const name of ["cache-pub", "cache-yank", "cache-gone", "cache-auth", "cache-conn"]) await claim(t, cast, "cargo", name);
});
afterAll(() => t.close());

describe("the sparse index after a change", () => {
  test("publish: the next fetch has the new version and a new ETag", async () => {
    await publish("cache-pub", "0.1.0");
    const before = await index("cache-pub");
    expect(before.lines.map((l) => l.vers)).toEqual(["0.1.0"]);
    await publish("cache-pub", "0.2.0");
    const after = await index("cache-pub");
    expect(after.lines.map((l) => l.vers)).toEqual(["0.1.0", "0.2.0"]);
    expect(after.etag).not.toBe(before.etag);
  });

  test("yank and unyank: the next fetch says so", async () => {
    await publish("cache-yank", "1.0.0");
    expect((await index("cache-yank")).lines[0].yanked).toBe(false);
    await expectStatus(await t.request("DELETE", "/cargo/api/v1/crates/cache-yank/1.0.0/yank", { headers: bare(cast.publisherToken) }), 200);
    expect((await index("cache-yank")).lines[0].yanked).toBe(true);
    await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/cache-yank/1.0.0/unyank", { headers: bare(cast.publisherToken) }), 200);
    expect((await index("cache-yank")).lines[0].yanked).toBe(false);
  });

  test("a released claim: the cached package row goes with it", async () => {
    expect((await index("cache-gone")).status).toBe(404);
    const cached = await t.request("GET", "/cargo/ca/ch/cache-gone", { headers: bare(cast.readerToken) });
    expect(await cached.text()).toContain("no published versions");
    await expectStatus(await t.request("DELETE", `/api/v1/projects/${cast.project.slug}/packages/cargo/cache-gone`, { token: cast.publisher.session }), 204);
    const res = await t.request("GET", "/cargo/ca/ch/cache-gone", { headers: bare(cast.readerToken) });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain("No such crate");
  });

  test("a write by another connection (another process): the next fetch reads it", async () => {
    await publish("cache-conn", "0.1.0");
    const before = await index("cache-conn");
    expect(before.status).toBe(200);
    const other = new Database(path.join(t.dataDir, "ops.db"));
    try {
      other.run("PRAGMA busy_timeout = 5000");
      other.run(`UPDATE package_documents SET body = '{"vers":"9.9.9","yanked":false}' || char(10), etag = '"changed-elsewhere"' WHERE package_id = (SELECT id FROM packages WHERE name = 'cache-conn')`);
    } finally {
      other.close();
    }
    const after = await index("cache-conn");
    expect(after.etag).toBe('"changed-elsewhere"');
    expect(after.lines.map((l) => l.vers)).toEqual(["9.9.9"]);
  });
});

describe("the caller after a change", () => {
  test("token revocation: the next fetch is 401", async () => {
    await publish("cache-auth", "0.1.0");
    const person = await makePerson(t, [{ role: "viewer", project: cast.project.slug }]);
    const token = mintToken(t, person.principal, { role: "viewer", project: cast.project.slug });
    expect((await index("cache-auth", token)).status).toBe(200);
    const me = await expectStatus(await t.request("GET", "/api/v1/me", { token }), 200);
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${me.token_id}`, { token: person.session }), 204);
    expect((await index("cache-auth", token)).status).toBe(401);
  });

  test("role change and membership removal: the next fetch is 403", async () => {
    const owner = await makePerson(t, [{ role: "owner", project: cast.project.slug }]);
    const person = await makePerson(t, [{ role: "viewer", project: cast.project.slug }]);
    // A session (not a minted token, whose scopes are fixed at mint) follows the member's role.
    expect((await index("cache-auth", person.session)).status).toBe(200);
    const blind = makeRole(t, cast.project.slug, "no-packages", ["project.read"]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${cast.project.slug}/members/${person.operator.id}`, { token: owner.session, body: { operator_id: person.operator.id, role_id: blind } }), 204);
    expect((await index("cache-auth", person.session)).status).toBe(403);

    const member = await makePerson(t, [{ role: "viewer", project: cast.project.slug }]);
    expect((await index("cache-auth", member.session)).status).toBe(200);
    await expectStatus(await t.request("DELETE", `/api/v1/projects/${cast.project.slug}/members/${member.operator.id}`, { token: owner.session }), 204);
    expect((await index("cache-auth", member.session)).status).toBe(403);
  });
});
