/**
 * The authentication hook and the grants loader the authorization macro calls on every request.
 * They sit on the hot path, so they use statements prepared once per Core (raw bun:sqlite), and
 * `last_seen_at` / `last_used` are batched in memory and flushed by the scheduler
 * (`access.flush-last-used`, every minute) and on shutdown, never written per request.
 * Credential rows and grants are cached per access generation (access-cache.ts); expiry and
 * idle time are still checked on every request from the cached row.
 */
import type { Statement } from "bun:sqlite";
import type { Core, Credentials, AccessHooks, ProjectRef } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import type { Grants, Membership, Policy } from "../../core/authz/effective";
import { isWellFormedSecret, secretDigest } from "../../core/ids";
import { sessionEndsAt } from "./sessions";
import { accessCache, GenerationCache } from "./access-cache";

/** The operator's columns that both credential joins read (`OPERATOR_COLUMNS`). */
interface OperatorJoin {
  operator_id: string;
  o_kind: "person" | "machine";
  email: string | null;
  handle: string | null;
  display_name: string;
  suspended_at: number | null;
}

const OPERATOR_COLUMNS = "o.kind AS o_kind, o.email, o.handle, o.display_name, o.suspended_at";

interface SessionJoin extends OperatorJoin {
  id: string;
  kind: "console" | "cli";
  last_seen_at: number;
  expires_at: number;
  revoked_at: number | null;
}

interface TokenJoin extends OperatorJoin {
  id: string;
  kind: "api" | "cli" | "mcp";
  scopes: string;
  project_id: string | null;
  project_slug: string | null;
  role_id: string;
  expires_at: number | null;
  revoked_at: number | null;
}

/** Who a credential belongs to, as a principal names them (the audit actor: a person's email, or `api-token` for a machine). */
function operatorOf(row: OperatorJoin): Pick<Principal, "operatorId" | "kind" | "name" | "email" | "displayName" | "suspended" | "actor"> {
  const person = row.o_kind === "person";
  return { operatorId: row.operator_id, kind: row.o_kind, name: (person ? row.email : row.handle) ?? "", email: row.email, displayName: row.display_name, suspended: false, actor: person ? (row.email ?? "") : "api-token" };
}

interface ProjectRowRaw {
  id: string;
  slug: string;
  name: string;
  environments: string;
  archived_at: number | null;
}

interface Statements {
  session: Statement<SessionJoin, [string]>;
  token: Statement<TokenJoin, [string]>;
  memberships: Statement<{ project_id: string | null; role_id: string; permissions: string }, [string]>;
  policies: Statement<{ project_id: string; environment: string; role_id: string; allowed: string }, [string]>;
  rolePolicies: Statement<{ project_id: string; environment: string; role_id: string; allowed: string }, [string]>;
  projectBySlug: Statement<ProjectRowRaw, [string]>;
  projectById: Statement<ProjectRowRaw, [string]>;
}

/** In-memory batches of "last seen" times, flushed together. */
export interface TouchBatch {
  sessions: Map<string, number>;
  tokens: Map<string, number>;
}

const BATCH_KEY = "access.touch";

export function touchBatch(core: Core): TouchBatch {
  let b = core.locals.get(BATCH_KEY) as TouchBatch | undefined;
  if (!b) {
    b = { sessions: new Map(), tokens: new Map() };
    core.locals.set(BATCH_KEY, b);
  }
  return b;
}

/** Write the batched last-seen / last-used times in one transaction. */
export function flushTouches(core: Core): number {
  const b = touchBatch(core);
  if (b.sessions.size === 0 && b.tokens.size === 0) return 0;
  const s = [...b.sessions];
  const t = [...b.tokens];
  b.sessions.clear();
  b.tokens.clear();
  const upS = core.sqlite.query("UPDATE sessions SET last_seen_at = max(last_seen_at, ?) WHERE id = ?");
  const upT = core.sqlite.query("UPDATE tokens SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?");
  core.sqlite.transaction(() => {
    for (const [id, at] of s) upS.run(at, id);
    for (const [id, at] of t) upT.run(at, id);
  }).immediate();
  return s.length + t.length;
}

function prepare(core: Core): Statements {
  const db = core.sqlite;
  return {
    session: db.query(
      `SELECT s.id, s.operator_id, s.kind, s.last_seen_at, s.expires_at, s.revoked_at, ${OPERATOR_COLUMNS}
         FROM sessions s JOIN operators o ON o.id = s.operator_id WHERE s.digest = ?`,
    ),
    token: db.query(
      `SELECT t.id, t.operator_id, t.kind, t.scopes, t.project_id, p.slug AS project_slug, t.role_id, t.expires_at, t.revoked_at, ${OPERATOR_COLUMNS}
         FROM tokens t JOIN operators o ON o.id = t.operator_id LEFT JOIN projects p ON p.id = t.project_id
        WHERE t.digest = ?`,
    ),
    memberships: db.query(
      `SELECT m.project_id, m.role_id, r.permissions FROM memberships m JOIN roles r ON r.id = m.role_id WHERE m.operator_id = ?`,
    ),
    policies: db.query(
      `SELECT ep.project_id, ep.environment, ep.role_id, ep.allowed
         FROM environment_policies ep
        WHERE ep.role_id IN (SELECT role_id FROM memberships WHERE operator_id = ?)`,
    ),
    rolePolicies: db.query("SELECT project_id, environment, role_id, allowed FROM environment_policies WHERE role_id = ?"),
    projectBySlug: db.query("SELECT id, slug, name, environments, archived_at FROM projects WHERE slug = ?"),
    projectById: db.query("SELECT id, slug, name, environments, archived_at FROM projects WHERE id = ?"),
  };
}

function toRef(r: ProjectRowRaw | null): ProjectRef | null {
  if (!r) return null;
  return { id: r.id, slug: r.slug, name: r.name, archived: r.archived_at !== null, environments: JSON.parse(r.environments) as string[] };
}

/** Build the access hooks for `core` (installed by the access module). */
export function accessHooks(core: Core): AccessHooks {
  const st = prepare(core);
  const batch = touchBatch(core);
  // Role permission lists are parsed once per distinct JSON text.
  const parsed = new Map<string, string[]>();
  const list = (json: string) => {
    let v = parsed.get(json);
    if (!v) {
      v = JSON.parse(json) as string[];
      if (parsed.size > 10_000) parsed.clear();
      parsed.set(json, v);
    }
    return v;
  };

  const cache = accessCache(core);
  const sessionRows = cache.map<SessionJoin>();
  const tokenRows = cache.map<TokenJoin>();
  const principals = cache.map<Principal>();
  const grantsByOperator = cache.map<Grants>();
  const projectsBySlug = cache.map<ProjectRef>();
  const projectsById = cache.map<ProjectRef>();

  const sessionPrincipal = (row: SessionJoin, viaCookie: boolean): Principal => ({
    ...operatorOf(row),
    via: "console",
    sessionId: row.id,
    sessionKind: row.kind,
    tokenId: null,
    tokenScopes: null,
    tokenProjectId: null,
    tokenProjectSlug: null,
    viaCookie,
  });

  /** The row behind a credential digest, from the generation cache or the database. */
  function rowByDigest<R>(cached: Map<string, R>, stmt: Statement<R, [string]>, digest: string): R | null {
    let row = cached.get(digest);
    if (!row) {
      row = stmt.get(digest) ?? undefined;
      if (!row) return null;
      GenerationCache.put(cached, digest, row);
    }
    return row;
  }

  const fromSession = (secret: string, viaCookie: boolean): Principal | null => {
    const digest = secretDigest(secret);
    const row = rowByDigest(sessionRows, st.session, digest);
    if (!row) return null;
    if (row.revoked_at !== null || row.suspended_at !== null) return null;
    const now = core.clock.now();
    const lastSeen = Math.max(row.last_seen_at, batch.sessions.get(row.id) ?? 0);
    if (now >= sessionEndsAt({ kind: row.kind, expiresAt: row.expires_at }, lastSeen)) return null;
    batch.sessions.set(row.id, now);
    const key = `${viaCookie ? "c" : "s"}:${digest}`;
    let p = principals.get(key);
    if (!p) {
      p = sessionPrincipal(row, viaCookie);
      GenerationCache.put(principals, key, p);
    }
    return p;
  };

  const fromToken = (secret: string): Principal | null => {
    const digest = secretDigest(secret);
    const row = rowByDigest(tokenRows, st.token, digest);
    if (!row) return null;
    if (row.revoked_at !== null || row.suspended_at !== null) return null;
    const now = core.clock.now();
    if (row.expires_at !== null && now >= row.expires_at) return null;
    batch.tokens.set(row.id, now);
    const key = `t:${digest}`;
    let p = principals.get(key);
    if (!p) {
      p = {
        ...operatorOf(row),
        via: row.o_kind === "person" ? "token" : "api-token",
        sessionId: null,
        sessionKind: null,
        tokenId: row.id,
        tokenScopes: list(row.scopes),
        tokenProjectId: row.project_id,
        tokenProjectSlug: row.project_slug,
        tokenKind: row.kind,
        // The policies on the token's own role narrow it in their environments, as they narrow a
        // member of that role (policy changes move the generation, so this is never stale).
        tokenRolePolicies: st.rolePolicies.all(row.role_id).map((r) => ({ projectId: r.project_id, environment: r.environment, roleId: r.role_id, allowed: list(r.allowed) })),
        viaCookie: false,
      };
      GenerationCache.put(principals, key, p);
    }
    return p;
  };

  return {
    authenticate(creds: Credentials): Principal | null {
      const bearer = creds.bearer ?? creds.basicPassword;
      if (!bearer && !creds.cookie) return null;
      cache.sync();
      if (bearer) {
        if (isWellFormedSecret(bearer, ["opss_"])) return fromSession(bearer, false);
        if (isWellFormedSecret(bearer, ["opst_"])) return fromToken(bearer);
        // Some other credential (a registry JWT, an install code): not a principal here.
        if (creds.bearer) return null;
      }
      if (creds.cookie && isWellFormedSecret(creds.cookie, ["opss_"])) return fromSession(creds.cookie, true);
      return null;
    },
    // Projects by slug and id, per access generation (a project's update or delete moves it; a
    // new project is never cached as missing). Inside a transaction the row is read as it stands
    // there (an insert no trigger counts may yet roll back). Every registry read resolves its
    // claim's project; docs/decisions/0641.
    findProject(slug) {
      if (core.sqlite.inTransaction) return toRef(st.projectBySlug.get(slug));
      cache.sync();
      let ref = projectsBySlug.get(slug);
      if (!ref) {
        ref = toRef(st.projectBySlug.get(slug)) ?? undefined;
        if (ref) GenerationCache.put(projectsBySlug, slug, ref);
      }
      return ref ?? null;
    },
    findProjectById(id) {
      if (core.sqlite.inTransaction) return toRef(st.projectById.get(id));
      cache.sync();
      let ref = projectsById.get(id);
      if (!ref) {
        ref = toRef(st.projectById.get(id)) ?? undefined;
        if (ref) GenerationCache.put(projectsById, id, ref);
      }
      return ref ?? null;
    },
    grants(principal: Principal): Grants {
      cache.sync();
      const hit = grantsByOperator.get(principal.operatorId);
      if (hit) return hit;
      const memberships: Membership[] = st.memberships.all(principal.operatorId).map((m) => ({ projectId: m.project_id, roleId: m.role_id, permissions: list(m.permissions) }));
      const policies: Policy[] = st.policies.all(principal.operatorId).map((p) => ({ projectId: p.project_id, environment: p.environment, roleId: p.role_id, allowed: list(p.allowed) }));
      const grants = { memberships, policies };
      GenerationCache.put(grantsByOperator, principal.operatorId, grants);
      return grants;
    },
  };
}
