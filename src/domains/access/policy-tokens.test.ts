/**
 * An environment policy on a role narrows a token minted with that role in that environment,
 * exactly as it narrows a member holding the role, even when the minter's own roles carry no
 * policy (an owner minting a `deployer` token).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeRole, mintToken, type Person } from "../../../test/fixtures";

let t: TestApp;
let owner: Person;
let deployer: string;

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  makeProject(t, "pol");
  deployer = makeRole(t, "pol", "deployer", ["project.read", "resources.read", "deployments.read", "deployments.deploy"]);
  await expectStatus(
    await t.request("PUT", `/api/v1/projects/pol/environment-policies/production/${deployer}`, { token: owner.session, body: { allowed: ["project.read", "resources.read", "deployments.read"] } }),
    200,
  );
});
afterAll(() => t.close());

const rollback = (token: string, environment: string) => t.request("POST", `/api/v1/projects/pol/resources/service/nope/rollback?environment=${environment}`, { token });

describe("environment policies and minted tokens", () => {
  test("a token minted with a role is narrowed by that role's policy in the policy's environment only", async () => {
    for (const project of ["pol", null]) {
      const token = mintToken(t, owner.principal, { role: deployer, project });
      const denied = await expectStatus(await rollback(token, "production"), 403);
      expect(denied.error).toBe("forbidden");
      // Staging has no policy: the token's deploy permission holds there (the service is unknown).
      await expectStatus(await rollback(token, "staging"), 404);
      // Reading is still allowed in production.
      await expectStatus(await t.request("GET", "/api/v1/projects/pol/deployments?environment=production", { token }), 200);
    }
    const reasons = (t.core.sqlite.query("SELECT reason FROM audit_log WHERE outcome = 'denied' AND action = 'deployments.deploy'").all() as Array<{ reason: string }>).map((r) => r.reason);
    expect(reasons).toContain("environment policy removes deployments.deploy");
  });

  test("the member holding the role is narrowed the same way", async () => {
    const member: Person = await makePerson(t, [{ role: deployer, project: "pol" }]);
    await expectStatus(await rollback(member.session, "production"), 403);
    await expectStatus(await rollback(member.session, "staging"), 404);
  });

  test("removing the policy gives the token its scopes back at once", async () => {
    const token = mintToken(t, owner.principal, { role: deployer, project: "pol" });
    await expectStatus(await rollback(token, "production"), 403);
    await expectStatus(await t.request("DELETE", `/api/v1/projects/pol/environment-policies/production/${deployer}`, { token: owner.session }), 204);
    await expectStatus(await rollback(token, "production"), 404);
  });
});
