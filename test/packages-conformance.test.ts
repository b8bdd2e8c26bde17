/**
 * Package reads against doc 3: `GET /api/v1/packages` lists every claimed name in the caller's
 * projects, so a person in no project (or in projects where it may not read packages) gets the
 * empty lists with 200, not a 403.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, makeRole } from "./fixtures";

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  const owner = await makeOwner(t);
  makeProject(t, "pk");
  await expectStatus(await t.request("PUT", "/api/v1/projects/pk/packages/cargo/conformance-crate", { token: owner.session }), 201);
});
afterAll(() => t.close());

describe("GET /api/v1/packages", () => {
  test("a person in no project gets 200 with empty lists", async () => {
    const nobody = await makePerson(t, []);
    expect(await expectStatus(await t.request("GET", "/api/v1/packages", { token: nobody.session }), 200)).toEqual({ cargo: [], npm: [] });
  });

  test("a member whose role may not read packages gets 200 with empty lists; one who may sees the project's names", async () => {
    const blind = await makePerson(t, [{ role: makeRole(t, "pk", "no-packages", ["project.read"]), project: "pk" }]);
    expect(await expectStatus(await t.request("GET", "/api/v1/packages", { token: blind.session }), 200)).toEqual({ cargo: [], npm: [] });
    const reader = await makePerson(t, [{ role: makeRole(t, "pk", "package-reader", ["project.read", "packages.read"]), project: "pk" }]);
    const seen = await expectStatus<{ cargo: Array<{ name: string; project: string }>; npm: unknown[] }>(await t.request("GET", "/api/v1/packages", { token: reader.session }), 200);
    expect(seen.cargo.map((p) => [p.project, p.name])).toEqual([["pk", "conformance-crate"]]);
    expect(seen.npm).toEqual([]);
  });

  test("without a credential it is still a 401", async () => {
    await expectStatus(await t.request("GET", "/api/v1/packages"), 401);
  });
});
