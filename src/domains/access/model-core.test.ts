import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeMachine, mintToken, principalOf, makeRole } from "../../../test/fixtures";
import { evaluate } from "../../core/authz/effective";
import { OpsError } from "../../core/errors";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe("access core: authentication, grants, minting", () => {
  test("a session bearer authenticates as the person, via console, never narrowed", async () => {
    const owner = await makeOwner(t);
    expect(owner.principal.via).toBe("console");
    expect(owner.principal.tokenScopes).toBeNull();
    expect(owner.principal.actor).toBe(owner.email);
    const ev = evaluate(owner.principal, t.core.access.grants(owner.principal), { kind: "estate" });
    expect(ev.permissions.has("estate.manage")).toBe(true);
  });

  test("a developer's pinned token acts only in its project, with the role's snapshot", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }, { role: "developer", project: b.slug }]);
    const secret = mintToken(t, dev.principal, { role: "viewer", project: a.slug });
    const p = await principalOf(t, secret);
    expect(p.via).toBe("token");
    expect(p.tokenProjectSlug).toBe(a.slug);
    const g = t.core.access.grants(p);
    expect(evaluate(p, g, { kind: "project", projectId: a.id, environment: "production" }).permissions.has("resources.read")).toBe(true);
    expect(evaluate(p, g, { kind: "project", projectId: a.id, environment: "production" }).permissions.has("resources.write")).toBe(false);
    expect(evaluate(p, g, { kind: "project", projectId: b.id, environment: "production" }).permissions.size).toBe(0);
  });

  test("minting more than the minter holds is refused (422); machines cannot mint (403)", async () => {
    const a = makeProject(t);
    const viewer = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    expect(() => mintToken(t, viewer.principal, { role: "developer", project: a.slug })).toThrow(OpsError);
    try {
      mintToken(t, viewer.principal, { role: "developer", project: a.slug });
    } catch (e) {
      expect((e as OpsError).status).toBe(422);
    }
    const m = await makeMachine(t, [{ role: "developer", project: a.slug }]);
    try {
      mintToken(t, m.principal, { role: "viewer", project: a.slug });
      throw new Error("machine minted");
    } catch (e) {
      expect((e as OpsError).status).toBe(403);
    }
    expect(m.principal.via).toBe("api-token");
    expect(m.principal.actor).toBe("api-token");
  });

  test("a token-authenticated minter cannot mint wider than its own scopes", async () => {
    const a = makeProject(t);
    const dev = await makePerson(t, [{ role: "maintainer", project: a.slug }]);
    const narrow = await principalOf(t, mintToken(t, dev.principal, { role: "viewer", project: a.slug }));
    expect(() => mintToken(t, narrow, { role: "developer", project: a.slug })).toThrow();
    expect(() => mintToken(t, narrow, { role: "viewer", project: a.slug })).not.toThrow();
  });

  test("a project role mints within its project", async () => {
    const a = makeProject(t);
    const roleId = makeRole(t, a.slug, "deployer", ["project.read", "deployments.deploy"]);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const p = await principalOf(t, mintToken(t, dev.principal, { role: roleId, project: a.slug }));
    expect([...(p.tokenScopes ?? [])].sort()).toEqual(["deployments.deploy", "project.read"]);
  });

  test("an expired token no longer authenticates", async () => {
    const person = await makePerson(t, [{ role: "viewer", project: null }]);
    const secret = mintToken(t, person.principal, { role: "viewer", expiresInDays: 1 });
    expect(await principalOf(t, secret)).toBeTruthy();
    t.clock.advance(2 * 86_400_000);
    const meta = { requestId: "x", ip: "", userAgent: "" };
    expect(await t.core.access.authenticate({ bearer: secret, basicPassword: null, basicUser: null, cookie: null, meta })).toBeNull();
  });
});
