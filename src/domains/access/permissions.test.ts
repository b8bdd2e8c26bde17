import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe("GET /api/v1/permissions", () => {
  test("200: the 28 keys in console order, groups contiguous", async () => {
    const p = await makePerson(t, []);
    const body = await expectStatus<Array<{ key: string; group: string }>>(await t.request("GET", "/api/v1/permissions", { token: p.session }), 200);
    expect(body).toHaveLength(28);
    expect(body[0].key).toBe("project.read");
    expect(body[27].key).toBe("estate.manage");
    const groups = body.map((b) => b.group).filter((g, i, a) => i === 0 || a[i - 1] !== g);
    expect(new Set(groups).size).toBe(groups.length);
  });

  test("401 without a credential", async () => {
    const body = await expectStatus(await t.request("GET", "/api/v1/permissions"), 401);
    expect(body.error).toBe("unauthorized");
  });

  test("401 for a well-formed but unknown token", async () => {
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: "opst_" + "0".repeat(49) }), 401);
  });
});
