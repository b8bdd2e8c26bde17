import { test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** The spec's schema names for the identity, notification, permission/audit, policy, member, role and token sections. */
const SPEC_SCHEMAS = [
  "MeResponse", "MeMembership", "MePolicy", "MfaConfirmBody", "MfaEnrolResponse", "SessionResponse",
  "NotificationResponse", "UnreadCountResponse", "NotificationSettingResponse", "WriteNotificationSettingsBody",
  "PermissionResponse", "AuditResponse", "EnvironmentPolicyResponse", "WritePolicyBody",
  "MemberResponse", "WriteMembershipBody", "CandidateResponse", "RoleResponse", "WriteRoleBody",
  "TokenResponse", "MintTokenBody", "TokenMintedResponse",
];

test("OpenAPI lists the spec's schemas by name and every access route with its permission", async () => {
  const doc = await expectStatus(await t.request("GET", "/api/docs/json"), 200);
  for (const name of SPEC_SCHEMAS) expect(Object.keys(doc.components.schemas)).toContain(name);
  expect(doc.paths["/api/v1/me"].get["x-permission"]).toBe("authenticated");
  expect(doc.paths["/api/v1/projects/{slug}/audit"].get["x-permission"]).toBe("audit.read");
  expect(doc.paths["/api/v1/projects/{slug}/members"].post.requestBody.content["application/json"].schema.$ref).toBe("#/components/schemas/WriteMembershipBody");
  const auditParams = doc.paths["/api/v1/projects/{slug}/audit"].get.parameters.map((p: { name: string }) => p.name);
  expect(auditParams).toEqual(expect.arrayContaining(["actor", "project", "environment", "action", "outcome", "since", "limit", "cursor"]));
});
