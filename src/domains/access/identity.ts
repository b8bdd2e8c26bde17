/**
 * Who the caller is (`GET /me`) and their sessions. MeResponse reports memberships with their
 * roles' permissions (Estate keys only where they apply: on estate-wide memberships), the
 * environment policies that narrow those roles, and for a minted token its id, pin and scopes.
 */
import { and, desc, eq, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { ESTATE_KEYS, type PermissionKey } from "../../core/authz/catalog";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { sessions } from "./tables";
import { sessionEndsAt } from "./sessions";
import { touchBatch } from "./authn";
import { sessionView } from "./signin";
import { accessCache, GenerationCache } from "./access-cache";
import type { MeResponse, SessionResponse } from "./model-identity";

interface MembershipJoin {
  project_id: string | null;
  project_slug: string | null;
  role_id: string;
  role_slug: string;
  role_name: string;
  fixed: number;
  permissions: string;
}

/** Everything MeResponse says about the caller (cached per credential and access generation). */
export function me(core: Core, auth: AuthContext): MeResponse {
  const cache = accessCache(core);
  cache.sync();
  const bodies = cache.mapNamed<MeResponse>("me");
  const key = `${auth.principal.operatorId}:${auth.principal.tokenId ?? auth.principal.sessionId}`;
  const hit = bodies.get(key);
  if (hit) return hit;
  const body = readMe(core, auth);
  GenerationCache.put(bodies, key, body);
  return body;
}

function readMe(core: Core, auth: AuthContext): MeResponse {
  const p = auth.principal;
  const op = core.sqlite.query<{ mfa_secret_id: string | null }, [string]>("SELECT mfa_secret_id FROM operators WHERE id = ?").get(p.operatorId);
  const rows = core.sqlite
    .query<MembershipJoin, [string]>(
      `SELECT m.project_id, pr.slug AS project_slug, r.id AS role_id, r.slug AS role_slug, r.display_name AS role_name, r.fixed, r.permissions
         FROM memberships m JOIN roles r ON r.id = m.role_id LEFT JOIN projects pr ON pr.id = m.project_id
        WHERE m.operator_id = ? ORDER BY m.project_id IS NOT NULL, pr.slug`,
    )
    .all(p.operatorId);
  const policies = core.sqlite
    .query<{ slug: string; environment: string; role_id: string; allowed: string }, [string]>(
      `SELECT pr.slug, ep.environment, ep.role_id, ep.allowed
         FROM environment_policies ep
         JOIN memberships m ON m.role_id = ep.role_id AND (m.project_id IS NULL OR m.project_id = ep.project_id)
         JOIN projects pr ON pr.id = ep.project_id
        WHERE m.operator_id = ? ORDER BY pr.slug, ep.environment`,
    )
    .all(p.operatorId);
  return {
    operator_id: p.operatorId,
    actor: p.actor,
    display_name: p.displayName,
    kind: p.kind,
    machine: p.kind === "machine",
    suspended: p.suspended,
    mfa: (op?.mfa_secret_id ?? null) !== null,
    via: p.via,
    memberships: rows.map((m) => ({
      project: m.project_slug,
      role_id: m.role_id,
      role_slug: m.role_slug,
      role_name: m.role_name,
      fixed: m.fixed === 1,
      permissions: (JSON.parse(m.permissions) as string[]).filter((k) => m.project_id === null || !ESTATE_KEYS.has(k as PermissionKey)),
    })),
    policies: policies.map((x) => ({ project: x.slug, environment: x.environment, role_id: x.role_id, allowed: JSON.parse(x.allowed) as string[] })),
    token_id: p.tokenId,
    token_project: p.tokenProjectSlug,
    token_scopes: p.tokenScopes === null ? null : [...p.tokenScopes],
  };
}

/** The caller's live sessions, newest first; `current` marks the one the request came on. */
export function listSessions(core: Core, auth: AuthContext): SessionResponse[] {
  const now = core.clock.now();
  const batch = touchBatch(core);
  return core.db
    .select()
    .from(sessions)
    .where(and(eq(sessions.operatorId, auth.principal.operatorId), isNull(sessions.revokedAt)))
    .orderBy(desc(sessions.createdAt))
    .all()
    .filter((s) => now < sessionEndsAt(s, Math.max(s.lastSeenAt, batch.sessions.get(s.id) ?? 0)))
    .map((s) => sessionView(core, s, auth.principal.sessionId));
}

/** End one of the caller's own live sessions (404 for anyone else's, or one already ended). */
export function revokeSession(core: Core, sessionId: string, auth: AuthContext): void {
  const now = core.clock.now();
  tx(core.db, (t) => {
    const row = t
      .select()
      .from(sessions)
      .where(and(eq(sessions.id, sessionId), eq(sessions.operatorId, auth.principal.operatorId), isNull(sessions.revokedAt)))
      .get();
    if (!row || now >= sessionEndsAt(row, Math.max(row.lastSeenAt, touchBatch(core).sessions.get(row.id) ?? 0))) throw new OpsError("not_found", "No such session.");
    t.update(sessions).set({ revokedAt: now }).where(eq(sessions.id, sessionId)).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "session.revoke", `session:${sessionId}`);
  });
}
