/**
 * The hot-path caches never outlive a change: revocation, suspension, role and policy changes
 * take effect on the next request, also when another connection (another process, such as an
 * offline `ops admin` command) writes; a cached session still honours its idle limit.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { Database } from "bun:sqlite";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, mintToken } from "../../../test/fixtures";
import { flushTouches } from "./authn";

let t: TestApp;
let other: Database;
beforeAll(async () => {
  t = await createTestApp();
  other = new Database(path.join(t.dataDir, "ops.db"));
  other.exec("PRAGMA busy_timeout = 5000");
});
afterAll(async () => {
  other.close();
  await t.close();
});

describe("access caches", () => {
  test("a token revoked by another connection is refused on the very next request", async () => {
    const p = await makePerson(t, [{ role: "viewer", project: null }]);
    const tok = mintToken(t, p.principal, { role: "viewer" });
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 200);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 200);
    other.query("UPDATE tokens SET revoked_at = 1 WHERE operator_id = ?").run(p.operator.id);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: tok }), 401);
  });

  test("suspension and membership changes by another connection apply at once (grants and /me)", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`, { token: p.session }), 200);
    expect((await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200)).memberships).toHaveLength(1);
    other.query("DELETE FROM memberships WHERE operator_id = ?").run(p.operator.id);
    await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}`, { token: p.session }), 403);
    expect((await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200)).memberships).toEqual([]);
    other.query("UPDATE operators SET suspended_at = 1 WHERE id = ?").run(p.operator.id);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 401);
  });

  test("a cached session keeps its idle clock across the batched last-seen flush", async () => {
    const p = await makePerson(t, []);
    for (let i = 0; i < 3; i++) {
      t.clock.advance(8 * 3_600_000); // 8 h apart: within the 12 h idle limit each time
      await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 200);
      flushTouches(t.core);
    }
    t.clock.advance(13 * 3_600_000);
    await expectStatus(await t.request("GET", "/api/v1/me", { token: p.session }), 401);
  });
});
