/**
 * Runs the authorization matrix (test/authz-matrix.ts): every row as every column, plus once
 * without credentials. No 2xx where a deny is expected; every deny leaves a `denied` audit row
 * for the caller's operator; every route of the covered tags has a row.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, makeRole, type Person } from "./fixtures";
import { MATRIX_ROWS, COLUMNS, PUBLIC_ROUTES, COVERED_TAGS, type Column, type World } from "./authz-matrix";
import { tx } from "../src/core/db/client";
import { fixedRole, insertSession, mintTokenIn, insertOperator } from "../src/domains/access/service";
import { environmentPolicies } from "../src/domains/access/tables";

let t: TestApp;
let world: World;
const credential = {} as Record<Column, () => string>;
const operatorOf = {} as Record<Column, string>;

beforeAll(async () => {
  t = await createTestApp();
  const project = makeProject(t, "matrix");
  const other = makeProject(t, "matrix-other");
  const roles = {
    owner: fixedRole(t.core, "owner").id,
    maintainer: fixedRole(t.core, "maintainer").id,
    developer: fixedRole(t.core, "developer").id,
    viewer: fixedRole(t.core, "viewer").id,
    tiny: makeRole(t, project.slug, "tiny", ["project.read"]),
    auditor: makeRole(t, project.slug, "auditor", ["project.read", "audit.read"]),
    releaser: makeRole(t, project.slug, "releaser", ["project.read", "project.members", "audit.read", "deployments.read", "deployments.deploy"]),
    spare: makeRole(t, project.slug, "spare", ["project.read"]),
    doomed: makeRole(t, project.slug, "doomed", ["project.read"]),
  };
  t.core.db
    .insert(environmentPolicies)
    .values({ projectId: project.id, environment: "production", roleId: roles.releaser, allowed: JSON.stringify(["project.read", "deployments.read"]), updatedAt: t.clock.now() })
    .run();
  const targets = tx(t.core.db, (q) => ({
    person: insertOperator(t.core, q, { kind: "person", email: "matrix-target@ops.test", displayName: "Target" }, null),
    member: insertOperator(t.core, q, { kind: "person", email: "matrix-member@ops.test", displayName: "Member" }, null),
  }));
  let n = 0;
  world = { t, project, other, roles, targets, unique: (p) => `${p}-${++n}`, vars: {} };

  const people: Record<string, Person> = {
    owner: await makeOwner(t),
    maintainer: await makePerson(t, [{ role: "maintainer", project: project.slug }]),
    developer: await makePerson(t, [{ role: "developer", project: project.slug }]),
    viewer: await makePerson(t, [{ role: "viewer", project: project.slug }]),
    custom: await makePerson(t, [{ role: roles.auditor, project: project.slug }]),
    pinnedElsewhere: await makePerson(t, [{ role: "maintainer", project: project.slug }, { role: "maintainer", project: other.slug }]),
    narrowToken: await makePerson(t, [{ role: "maintainer", project: project.slug }]),
    policyRestricted: await makePerson(t, [{ role: roles.releaser, project: project.slug }]),
    suspended: await makePerson(t, [{ role: "maintainer", project: project.slug }]),
  };
  t.core.sqlite.query("UPDATE operators SET suspended_at = ? WHERE id = ?").run(t.clock.now(), people.suspended.operator.id);

  const meta = { ip: "127.0.0.1", userAgent: "authz-matrix" };
  const session = (p: Person) => () => tx(t.core.db, (q) => insertSession(t.core, q, p.operator.id, "console", meta).secret);
  for (const c of COLUMNS) {
    operatorOf[c] = people[c].operator.id;
    credential[c] = session(people[c]);
  }
  credential.pinnedElsewhere = () =>
    tx(t.core.db, (q) => mintTokenIn(t.core, q, people.pinnedElsewhere.principal, { name: world.unique("pinned"), roleId: roles.maintainer, project: other.slug }).secret);
  credential.narrowToken = () => tx(t.core.db, (q) => mintTokenIn(t.core, q, people.narrowToken.principal, { name: world.unique("narrow"), roleId: roles.viewer, project: null }).secret);
});
afterAll(() => t.close());

const lastAuditId = () => (t.core.sqlite.query("SELECT coalesce(max(id), 0) AS id FROM audit_log").get() as { id: number }).id;
const deniedSince = (id: number, operatorId: string) =>
  (t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE id > ? AND operator_id = ? AND outcome = 'denied'").get(id, operatorId) as { n: number }).n;

describe("authorization matrix", () => {
  test("every route of the covered domains has a row (or is listed as public)", () => {
    const inMatrix = new Set(MATRIX_ROWS.map((r) => r.route));
    const missing: string[] = [];
    for (const r of t.app.routes) {
      const detail = (r.hooks as { detail?: { tags?: string[]; "x-permission"?: string; "x-public"?: boolean } }).detail;
      if (!detail?.tags?.some((tag) => COVERED_TAGS.includes(tag))) continue;
      const key = `${r.method} ${r.path}`;
      if (detail["x-public"]) {
        expect(PUBLIC_ROUTES).toContain(key);
        continue;
      }
      if (!inMatrix.has(key)) missing.push(key);
    }
    expect(missing).toEqual([]);
  });

  for (const row of MATRIX_ROWS) {
    test(row.route, async () => {
      await row.setup?.(world);
      const [method, template] = row.route.split(" ");
      const path = row.path(world);
      const body = row.body?.(world);
      const send = (token?: string) => t.request(method, path, { token, body });
      const failures: string[] = [];

      const anon = await send();
      if (anon.status !== 401) failures.push(`anonymous: expected 401, got ${anon.status}`);
      await anon.text();

      for (const c of COLUMNS) {
        const before = lastAuditId();
        const res = await send(credential[c]());
        const text = await res.text();
        const want = row.expect[c];
        const got = res.status;
        const ok =
          want === "allow" ? got !== 401 && got !== 403 && got < 500
          : want === "deny" ? got === 403 && deniedSince(before, operatorOf[c]) > 0
          : want === "refuse" ? got === 422 && deniedSince(before, operatorOf[c]) > 0
          : got === 401;
        if (!ok) failures.push(`${c}: expected ${want}, got ${got} ${text.slice(0, 160)}${want !== "allow" && want !== "unauth" ? ` (denied audit rows: ${deniedSince(before, operatorOf[c])})` : ""}`);
        if (want !== "allow" && got >= 200 && got < 300) failures.push(`${c}: a 2xx where ${want} was expected`);
      }
      expect(failures, `${template}\n${failures.join("\n")}`).toEqual([]);
    });
  }
});
