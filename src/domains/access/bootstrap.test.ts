import { describe, test, expect } from "bun:test";
import { createTestApp, expectStatus } from "../../../test/harness";
import { bootstrapOwner } from "./bootstrap";

describe("bootstrap of the estate owner", () => {
  test("from OPS_BOOTSTRAP_EMAIL / OPS_BOOTSTRAP_PASSWORD: an estate-wide owner who can sign in; only once", async () => {
    const t = await createTestApp();
    try {
      const printed: string[] = [];
      const owner = await bootstrapOwner(t.core, (s) => printed.push(s));
      expect(owner?.email).toBe("owner@ops.test");
      expect(printed).toEqual([]);
      expect(await bootstrapOwner(t.core, (s) => printed.push(s))).toBeNull();
      const login = await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: "owner@ops.test", password: "owner-password-for-tests" } }), 200);
      const me = await expectStatus(await t.request("GET", "/api/v1/me", { token: login.token }), 200);
      expect(me.memberships).toEqual([expect.objectContaining({ project: null, role_slug: "owner" })]);
      expect(t.logs.join("\n")).not.toContain("owner-password-for-tests");
    } finally {
      await t.close();
    }
  });

  test("without a password: one is generated, printed once (not logged), and works", async () => {
    const t = await createTestApp({ env: { OPS_BOOTSTRAP_PASSWORD: "" } });
    try {
      const printed: string[] = [];
      await bootstrapOwner(t.core, (s) => printed.push(s));
      expect(printed).toHaveLength(1);
      const password = /password: (\S+)/.exec(printed[0])?.[1] ?? "";
      expect(password.length).toBeGreaterThanOrEqual(20);
      expect(t.logs.join("\n")).not.toContain(password);
      await expectStatus(await t.request("POST", "/api/v1/auth/login", { body: { email: "owner@ops.test", password } }), 200);
    } finally {
      await t.close();
    }
  });
});
