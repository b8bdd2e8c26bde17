/**
 * Principals for tests, created through the access services (never pasted): people with a
 * session bearer, machines with a minted token, projects, project roles, tokens.
 */
import type { TestApp } from "./harness";
import type { Principal } from "../src/core/authz/principal";
import { tx } from "../src/core/db/client";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { hashPassword, insertOperator, upsertMembership, fixedRole, insertSession, createProject, mintTokenIn, type OperatorRow, type ProjectRow, type MintRequest } from "../src/domains/access/service";
import { roles } from "../src/domains/access/tables";
import { uuidv7 } from "../src/core/ids";
import type { PermissionKey } from "../src/core/authz/catalog";

let counter = 0;
const unique = (p: string) => `${p}${++counter}${Math.random().toString(36).slice(2, 6)}`;

export interface Person {
  operator: OperatorRow;
  email: string;
  password: string;
  /** A console session bearer (`opss_…`). */
  session: string;
  principal: Principal;
}

export interface MembershipSpec {
  /** Fixed role slug (owner, maintainer, developer, viewer) or a role id. */
  role: string;
  /** Project slug; null = estate-wide. */
  project: string | null;
}

function roleIdOf(t: TestApp, role: string): string {
  return /^[0-9a-f-]{36}$/.test(role) ? role : fixedRole(t.core, role).id;
}

/** Resolve a credential to its principal, as the HTTP layer would. */
export async function principalOf(t: TestApp, secret: string): Promise<Principal> {
  const p = await t.core.access.authenticate({ bearer: secret, basicPassword: null, basicUser: null, cookie: null, meta: { requestId: "test", ip: "127.0.0.1", userAgent: "test" } });
  if (!p) throw new Error("credential did not authenticate");
  return p;
}

/** A project (default environments production, staging). */
export function makeProject(t: TestApp, slug = unique("proj"), environments?: string[]): ProjectRow {
  return createProject(t.core, { slug, name: slug, environments }, SYSTEM_ACTOR);
}

/** A person with the given memberships and a live console session. */
export async function makePerson(t: TestApp, memberships: MembershipSpec[] = [], opts: { email?: string; password?: string; displayName?: string } = {}): Promise<Person> {
  const email = opts.email ?? `${unique("person")}@ops.test`;
  const password = opts.password ?? `pw-${unique("secret")}-long`;
  const hash = await hashPassword(password);
  const { operator, session } = tx(t.core.db, (q) => {
    const operator = insertOperator(t.core, q, { kind: "person", email, displayName: opts.displayName ?? email.split("@")[0] }, hash);
    for (const m of memberships) {
      const projectId = m.project === null ? null : projectIdOf(t, m.project);
      upsertMembership(t.core, q, operator.id, projectId, roleIdOf(t, m.role));
    }
    const { secret } = insertSession(t.core, q, operator.id, "console", { ip: "127.0.0.1", userAgent: "test" });
    return { operator, session: secret };
  });
  return { operator, email, password, session, principal: await principalOf(t, session) };
}

function projectIdOf(t: TestApp, slug: string): string {
  const ref = t.core.access.findProject(slug);
  if (!ref) throw new Error(`no project ${slug}`);
  return ref.id;
}

/** The estate owner: a person with an estate-wide owner membership. */
export function makeOwner(t: TestApp, opts: { email?: string } = {}): Promise<Person> {
  return makePerson(t, [{ role: "owner", project: null }], opts);
}

/** A machine operator with memberships and a minted token (minted on its behalf by the system). */
export async function makeMachine(t: TestApp, memberships: MembershipSpec[], token: { role?: string; project?: string | null } = {}): Promise<{ operator: OperatorRow; token: string; principal: Principal }> {
  const handle = unique("machine");
  const { insertToken, findRole } = await import("../src/domains/access/service");
  const secret = tx(t.core.db, (q) => {
    const operator = insertOperator(t.core, q, { kind: "machine", handle, displayName: handle }, null);
    for (const m of memberships) upsertMembership(t.core, q, operator.id, m.project === null ? null : projectIdOf(t, m.project), roleIdOf(t, m.role));
    const role = findRole(q, roleIdOf(t, token.role ?? memberships[0]?.role ?? "viewer"));
    if (!role) throw new Error("no role");
    const projectId = token.project === undefined ? (memberships[0]?.project ? projectIdOf(t, memberships[0].project) : null) : token.project === null ? null : projectIdOf(t, token.project);
    return insertToken(t.core, q, { operatorId: operator.id, name: "test machine token", kind: "api", role, projectId, expiresAt: null }).secret;
  });
  const principal = await principalOf(t, secret);
  return { operator: (await import("../src/domains/access/service")).findOperator(t.core.db, principal.operatorId)!, token: secret, principal };
}

/** Mint a token as `minter` (all the real checks apply). Returns the secret. */
export function mintToken(t: TestApp, minter: Principal, req: Partial<MintRequest> & { role: string }): string {
  return tx(t.core.db, (q) => mintTokenIn(t.core, q, minter, { name: req.name ?? "test token", roleId: roleIdOf(t, req.role), project: req.project ?? null, kind: req.kind ?? "api", expiresInDays: req.expiresInDays })).secret;
}

/** A project role with exactly `permissions`. Returns its id. */
export function makeRole(t: TestApp, projectSlug: string, slug: string, permissions: PermissionKey[]): string {
  const projectId = projectIdOf(t, projectSlug);
  const now = t.core.clock.now();
  const id = uuidv7(now);
  t.core.db
    .insert(roles)
    .values({ id, projectId, slug, displayName: slug, description: "", permissions: JSON.stringify(permissions), fixed: false, scope: projectId, createdAt: now, updatedAt: now })
    .run();
  return id;
}
