/**
 * Runs the authorization matrix (test/authz-matrix.ts and the domains' test/authz-matrix.*.ts):
 * every row as every column, plus once without credentials. No 2xx where a deny is expected;
 * every deny leaves a `denied` audit row for the caller's operator; every route of the covered
 * tags has a row; every permission-guarded route of the app is in a covered domain or behind a
 * registry protocol prefix.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, makeRole, type Person } from "./fixtures";
import { MATRIX_ROWS, COLUMNS, PUBLIC_ROUTES, COVERED_TAGS, PROTOCOL_PREFIXES, PROJECT_ROLES, POLICIES, type Column, type World, type ProjectRoleSlug } from "./authz-matrix";
// Each domain's rows register themselves (registerMatrixDomain) when imported, in this order.
import "./authz-matrix.resources";
import "./authz-matrix.secrets";
import "./authz-matrix.device";
import "./authz-matrix.cli";
import "./authz-matrix.status";
import "./authz-matrix.registries";
import "./authz-matrix.sources";
import "./authz-matrix.builds";
import "./authz-matrix.deployments";
import "./authz-matrix.translations";
import "./authz-matrix.obs";
import "./authz-matrix.modules";
import "./authz-matrix.mcp";
import "./authz-matrix.backups";
import "./authz-matrix.alerts";
import { tx } from "../src/core/db/client";
import { fixedRole, insertSession, mintTokenIn, insertOperator } from "../src/domains/access/service";
import { environmentPolicies } from "../src/domains/access/tables";
import { PERMISSION_KEYS } from "../src/core/authz/catalog";

let t: TestApp;
let world: World;
const credential = {} as Record<Column, () => string>;
const operatorOf = {} as Record<Column, string>;

beforeAll(async () => {
  t = await createTestApp();
  const project = makeProject(t, "matrix");
  const other = makeProject(t, "matrix-other");
  const own = Object.fromEntries(Object.entries(PROJECT_ROLES).map(([slug, perms]) => [slug, makeRole(t, project.slug, slug, [...perms])])) as Record<ProjectRoleSlug, string>;
  const roles = {
    owner: fixedRole(t.core, "owner").id,
    maintainer: fixedRole(t.core, "maintainer").id,
    developer: fixedRole(t.core, "developer").id,
    viewer: fixedRole(t.core, "viewer").id,
    ...own,
  };
  for (const [role, byEnv] of Object.entries(POLICIES)) {
    for (const [environment, allowed] of Object.entries(byEnv)) {
      t.core.db
        .insert(environmentPolicies)
        .values({ projectId: project.id, environment, roleId: own[role as ProjectRoleSlug], allowed: JSON.stringify(allowed), updatedAt: t.clock.now() })
        .run();
    }
  }
  const targets = tx(t.core.db, (q) => ({
    person: insertOperator(t.core, q, { kind: "person", email: "matrix-target@ops.test", displayName: "Target" }, null),
    member: insertOperator(t.core, q, { kind: "person", email: "matrix-member@ops.test", displayName: "Member" }, null),
  }));
  // The setups' own caller: an estate owner who is not one of the columns.
  const setupOwner = await makeOwner(t);
  let n = 0;
  let address = 0;
  const setupMeta = () => ({ requestId: `matrix-setup-${++n}`, ip: `10.77.${Math.floor(++address / 250) % 250}.${(address % 250) + 1}`, userAgent: "authz-matrix setup" });
  world = {
    t,
    project,
    other,
    roles,
    targets,
    unique: (p) => `${p}-${++n}`,
    vars: {},
    setupMeta,
    setupAuth: (environment = null) => ({
      principal: setupOwner.principal,
      project: t.core.access.findProject(project.slug),
      environment,
      permissions: new Set(PERMISSION_KEYS),
      meta: setupMeta(),
    }),
  };

  const people: Record<Column, Person> = {
    owner: await makeOwner(t),
    maintainer: await makePerson(t, [{ role: "maintainer", project: project.slug }]),
    developer: await makePerson(t, [{ role: "developer", project: project.slug }]),
    viewer: await makePerson(t, [{ role: "viewer", project: project.slug }]),
    custom: await makePerson(t, [{ role: roles.auditor, project: project.slug }]),
    pinnedElsewhere: await makePerson(t, [{ role: "maintainer", project: project.slug }, { role: "maintainer", project: other.slug }]),
    narrowToken: await makePerson(t, [{ role: "maintainer", project: project.slug }]),
    policyRestricted: await makePerson(t, [{ role: roles.releaser, project: project.slug }]),
    policyReadOnly: await makePerson(t, [{ role: roles.steward, project: project.slug }]),
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

type Detail = { tags?: string[]; "x-permission"?: string; "x-public"?: boolean };
const detailOf = (r: { hooks: unknown }) => ((r.hooks as { detail?: Detail } | undefined)?.detail ?? {}) as Detail;

describe("authorization matrix", () => {
  test("every route of the covered domains has a row (or is listed as public)", () => {
    const inMatrix = new Set(MATRIX_ROWS.map((r) => r.route));
    const missing: string[] = [];
    const unlistedPublic: string[] = [];
    for (const r of t.app.routes) {
      const detail = detailOf(r);
      if (!detail.tags?.some((tag) => COVERED_TAGS.includes(tag))) continue;
      const key = `${r.method} ${r.path}`;
      if (detail["x-public"]) {
        if (!PUBLIC_ROUTES.includes(key)) unlistedPublic.push(key);
        continue;
      }
      if (!inMatrix.has(key)) missing.push(key);
    }
    expect({ missing, unlistedPublic }).toEqual({ missing: [], unlistedPublic: [] });
  });

  test("every permission-guarded route of the app is in a covered domain (registry protocols aside)", () => {
    const uncovered: string[] = [];
    for (const r of t.app.routes) {
      const detail = detailOf(r);
      if (!detail["x-permission"] || PROTOCOL_PREFIXES.some((p) => r.path.startsWith(p))) continue;
      if (!detail.tags?.some((tag) => COVERED_TAGS.includes(tag))) uncovered.push(`${r.method} ${r.path} (tags: ${detail.tags?.join(", ") || "none"})`);
    }
    // A new domain adds test/authz-matrix.<domain>.ts and imports it above.
    expect(uncovered).toEqual([]);
  });

  test("every row names a route of the app and the permission that route declares", () => {
    const declared = new Map(t.app.routes.map((r) => [`${r.method} ${r.path}`, detailOf(r)["x-permission"] ?? null]));
    const problems: string[] = [];
    for (const row of MATRIX_ROWS) {
      if (!declared.has(row.route)) problems.push(`${row.route}: no such route`);
      else if (row.permission !== undefined && declared.get(row.route) !== row.permission) problems.push(`${row.route}: the row says ${row.permission}, the route declares ${declared.get(row.route)}`);
    }
    expect(problems).toEqual([]);
  });

  for (const row of MATRIX_ROWS) {
    test(row.name ? `${row.route} (${row.name})` : row.route, async () => {
      const [method, template] = row.route.split(" ");
      const send = async (token?: string) => {
        await row.each?.(world);
        const raw = row.raw?.(world);
        return t.request(method, row.path(world), raw ? { token, raw: raw.body, headers: raw.headers } : { token, body: row.body?.(world) });
      };
      const failures: string[] = [];
      try {
        await row.setup?.(world);

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
            want === "allow" ? got !== 401 && got !== 403 && got < 500 && (row.status === undefined || got === row.status)
            : want === "deny" ? got === 403 && deniedSince(before, operatorOf[c]) > 0
            : want === "refuse" ? got === 422 && deniedSince(before, operatorOf[c]) > 0
            : got === 401;
          if (!ok) {
            const wanted = want === "allow" && row.status !== undefined ? `allow (${row.status})` : want;
            failures.push(`${c}: expected ${wanted}, got ${got} ${text.slice(0, 160)}${want !== "allow" && want !== "unauth" ? ` (denied audit rows: ${deniedSince(before, operatorOf[c])})` : ""}`);
          }
          if (want !== "allow" && got >= 200 && got < 300) failures.push(`${c}: a 2xx where ${want} was expected`);
          if (ok && want === "allow" && row.verify) {
            const problem = row.verify(world, c, text);
            if (problem) failures.push(`${c}: ${problem}`);
          }
        }
      } finally {
        await row.after?.(world);
      }
      expect(failures, `${template}\n${failures.join("\n")}`).toEqual([]);
    });
  }
});
