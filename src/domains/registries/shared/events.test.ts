/**
 * Events: a publish raises `package.published` for the members of the publishing project (in the
 * publish's transaction: a refused publish raises nothing), and is audited with yank and unyank
 * (the audit rows are checked in the npm and cargo suites).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, claim, npmPublishBody, npmTarball, cargoPublishBody, cargoMetadata, crateArchive, type RegistryCast } from "../../../../test/support/registries";

let t: TestApp;
let cast: RegistryCast;

/** The caller's notices (GET /api/v1/notifications). */
const items = async (session: string) => (await expectStatus(await t.request("GET", "/api/v1/notifications", { token: session }), 200)) as Array<Record<string, unknown>>;

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  await claim(t, cast, "npm", "@ops/notified");
  await claim(t, cast, "cargo", "notified-crate");
});
afterAll(() => t.close());

describe("package.published", () => {
  test("an npm publish notifies every member of the project, and nobody else", async () => {
    const tarball = await npmTarball("@ops/notified", "1.0.0");
    await expectStatus(await t.request("PUT", "/npm/@ops%2fnotified", { token: cast.publisherToken, body: npmPublishBody("@ops/notified", "1.0.0", tarball) }), 201);
    for (const who of [cast.publisher, cast.reader]) {
      const mine = (await items(who.session)).filter((n) => n.kind === "package.published");
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({
        kind: "package.published",
        read: false,
        params: { project: cast.project.slug, registry: "npm", name: "@ops/notified", version: "1.0.0" },
        link: `/projects/${cast.project.slug}/packages/npm/%40ops%2Fnotified`,
      });
    }
    expect((await items(cast.outsider.session)).filter((n) => n.kind === "package.published")).toHaveLength(0);
  });

  test("a cargo publish notifies too; a refused publish (409) raises nothing", async () => {
    const raw = cargoPublishBody(cargoMetadata("notified-crate", "0.1.0"), await crateArchive("notified-crate", "0.1.0"));
    await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: cast.publisherToken }, raw }), 200);
    await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: cast.publisherToken }, raw }), 409);
    const crates = (await items(cast.reader.session)).filter((n) => n.kind === "package.published" && (n.params as { registry: string }).registry === "cargo");
    expect(crates).toHaveLength(1);
    expect(crates[0].params).toEqual({ project: cast.project.slug, registry: "cargo", name: "notified-crate", version: "0.1.0" });
  });
});
