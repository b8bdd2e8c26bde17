/**
 * The registries' in-process publish entry (what publish builds call): the same refusals as the
 * HTTP routes' resolvers and limits — out of the npm scope, unclaimed, another project's claim,
 * a body over OPS_MAX_PUBLISH_BYTES — each audited as denied where the route would be, and a
 * publish that goes through writes the version, its audit row and its notices.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, type TestApp } from "./harness";
import { makePerson, makeProject } from "./fixtures";
import { SYSTEM_ACTOR } from "../src/core/audit";
import type { ProjectRef } from "../src/core/core";
import { OpsError } from "../src/core/errors";
import { publishCargoInProcess, publishNpmInProcess, isPublished, type InProcessPublisher } from "../src/domains/registries/service";
import { claimPackage } from "../src/domains/registries/service";
import { cargoMetadata, cargoPublishBody, crateArchive, npmPublishBody, npmTarball } from "./support/registries";

let t: TestApp;
let by: InProcessPublisher;
let other: ProjectRef;

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_MAX_PUBLISH_BYTES: "65536" } });
  makeProject(t, "lib");
  makeProject(t, "other");
  const lib = t.core.access.findProject("lib")!;
  other = t.core.access.findProject("other")!;
  await makePerson(t, [{ role: "developer", project: "lib" }]);
  claimPackage(t.core, lib, "cargo", "lib-core", SYSTEM_ACTOR);
  claimPackage(t.core, lib, "npm", "@ops/core", SYSTEM_ACTOR);
  claimPackage(t.core, other, "npm", "@ops/theirs", SYSTEM_ACTOR);
  by = { project: lib, publisher: { name: "dana@ops.test", operatorId: null }, actor: { ...SYSTEM_ACTOR, context: { build: 9 } } };
});
afterAll(() => t.close());

const denials = (target: string) => t.core.sqlite.query<{ reason: string }, [string]>("SELECT reason FROM audit_log WHERE target = ? AND outcome = 'denied'").all(target).map((r) => r.reason);

async function refused(p: Promise<unknown>): Promise<OpsError> {
  const e = await p.catch((x) => x);
  expect(e).toBeInstanceOf(OpsError);
  return e as OpsError;
}

describe("in-process publish", () => {
  test("a crate and an npm version go through the protocols' own publish: version, audit, notice", async () => {
    expect(await publishCargoInProcess(t.core, by, cargoPublishBody(cargoMetadata("lib-core", "1.0.0"), await crateArchive("lib-core", "1.0.0")))).toEqual({ name: "lib-core", version: "1.0.0" });
    expect(await publishNpmInProcess(t.core, by, "@ops/core", npmPublishBody("@ops/core", "1.0.0", await npmTarball("@ops/core", "1.0.0")) as never)).toEqual({ name: "@ops/core", version: "1.0.0" });
    expect(isPublished(t.core, "cargo", "lib-core", "1.0.0+meta")).toBe(true);
    expect(isPublished(t.core, "npm", "@ops/core", "1.0.0")).toBe(true);
    const row = t.core.sqlite.query<{ actor: string; via: string; context: string }, []>("SELECT actor, via, context FROM audit_log WHERE target = 'package:cargo:lib-core@1.0.0'").get()!;
    expect([row.actor, row.via, JSON.parse(row.context).op]).toEqual(["system", "system", "package.publish"]);
    const notices = t.core.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM notices WHERE kind = 'package.published'").get()!;
    expect(notices.n).toBe(2);
  });

  test("the protocols' checks still apply: a republish is 409, a crate whose Cargo.toml disagrees is 400", async () => {
    expect((await refused(publishCargoInProcess(t.core, by, cargoPublishBody(cargoMetadata("lib-core", "1.0.0"), await crateArchive("lib-core", "1.0.0"))))).status).toBe(409);
    expect((await refused(publishCargoInProcess(t.core, by, cargoPublishBody(cargoMetadata("lib-core", "1.1.0"), await crateArchive("lib-core", "1.2.0"))))).status).toBe(400);
  });

  test("unclaimed, another project's claim, out of scope: refused and audited as denied", async () => {
    const unclaimed = await refused(publishCargoInProcess(t.core, by, cargoPublishBody(cargoMetadata("lib-ghost", "1.0.0"), await crateArchive("lib-ghost", "1.0.0"))));
    expect([unclaimed.status, unclaimed.message]).toEqual([403, 'the cargo name "lib-ghost" is not claimed; claim it first (PUT /api/v1/projects/lib/packages/cargo/lib-ghost).']);
    expect(denials("package:cargo:lib-ghost")).toHaveLength(1);
    const theirs = await refused(publishNpmInProcess(t.core, by, "@ops/theirs", npmPublishBody("@ops/theirs", "1.0.0", await npmTarball("@ops/theirs", "1.0.0")) as never));
    expect([theirs.status, theirs.message]).toEqual([403, 'the npm name "@ops/theirs" is claimed by another project.']);
    const scope = await refused(publishNpmInProcess(t.core, by, "@else/x", npmPublishBody("@else/x", "1.0.0", await npmTarball("@else/x", "1.0.0")) as never));
    expect([scope.status, scope.code]).toEqual([403, "out_of_scope"]);
    expect(isPublished(t.core, "npm", "@ops/theirs", "1.0.0")).toBe(false);
  });

  test("a body over OPS_MAX_PUBLISH_BYTES is 413, as over HTTP", async () => {
    const big = new Uint8Array(70_000);
    crypto.getRandomValues(big);
    const e = await refused(publishCargoInProcess(t.core, by, cargoPublishBody(cargoMetadata("lib-core", "2.0.0"), big)));
    expect(e.status).toBe(413);
  });
});
