/**
 * Token routes' services: list (own; all for `operators.manage`), the tokens pinned to a project,
 * mint (secret shown once) and revoke (instant: the authentication hook reads `revoked_at` on
 * every request). Mint refusals (machine 403, over-carry 422) are audited as denied.
 */
import { and, desc, eq, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { evaluate } from "../../core/authz/effective";
import { tx } from "../../core/db/client";
import { auditAllowed, writeAudit } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { iso, isoOrNull } from "../../core/clock";
import { tokens, operators, projects } from "./tables";
import { mintTokenIn, type TokenKind } from "./tokens";
import { touchBatch } from "./authn";
import { operatorName, parseList, type TokenRow, type OperatorRow } from "./rows";
import type { MintTokenBody, TokenResponse } from "./model-tokens";

function view(core: Core, tk: TokenRow, op: Pick<OperatorRow, "kind" | "email" | "handle">, projectSlug: string | null): TokenResponse {
  const lastUsed = Math.max(tk.lastUsedAt ?? 0, touchBatch(core).tokens.get(tk.id) ?? 0);
  return {
    id: tk.id,
    name: tk.name,
    kind: tk.kind,
    operator: operatorName(op),
    operator_id: tk.operatorId,
    project: projectSlug,
    role_id: tk.roleId,
    role_name: tk.roleName,
    scopes: parseList(tk.scopes),
    created_at: iso(tk.createdAt),
    expires_at: isoOrNull(tk.expiresAt),
    last_used: lastUsed === 0 ? null : iso(lastUsed),
    revoked: tk.revokedAt !== null,
  };
}

function query(core: Core, where: ReturnType<typeof eq> | undefined): TokenResponse[] {
  return core.db
    .select({ tk: tokens, o: operators, slug: projects.slug })
    .from(tokens)
    .innerJoin(operators, eq(operators.id, tokens.operatorId))
    .leftJoin(projects, eq(projects.id, tokens.projectId))
    .where(where)
    .orderBy(desc(tokens.createdAt))
    .all()
    .map(({ tk, o, slug }) => view(core, tk, o, slug));
}

function managesOperators(core: Core, auth: AuthContext): boolean {
  return evaluate(auth.principal, core.access.grants(auth.principal), { kind: "estate" }).permissions.has("operators.manage");
}

/** The caller's tokens, or every token when the caller manages operators. Newest first. */
export function listTokens(core: Core, auth: AuthContext): TokenResponse[] {
  return query(core, managesOperators(core, auth) ? undefined : eq(tokens.operatorId, auth.principal.operatorId));
}

/** Every token pinned to the project. */
export function projectTokens(core: Core, projectId: string): TokenResponse[] {
  return query(core, eq(tokens.projectId, projectId));
}

/** Mint a token for the caller: all checks in `mintTokenIn`; refusals audited as denied. */
export function mintToken(core: Core, auth: AuthContext, body: MintTokenBody): { secret: string; token: TokenResponse } {
  const actor = actorOf(auth.principal, auth.meta);
  try {
    return tx(core.db, (t) => {
      const { secret, row, project } = mintTokenIn(core, t, auth.principal, {
        name: body.name,
        roleId: body.role_id,
        project: body.project ?? null,
        kind: (body.kind ?? "api") as TokenKind,
        expiresInDays: body.expires_in_days,
      });
      auditAllowed(core, t, actor, "token.mint", `token:${row.id}`, { project: project?.slug ?? null }, { kind: row.kind, role: row.roleId });
      const op = t.select().from(operators).where(eq(operators.id, row.operatorId)).get()!;
      return { secret, token: view(core, row, op, project?.slug ?? null) };
    });
  } catch (e) {
    if (e instanceof OpsError && (e.code === "forbidden" || e.code === "refused")) {
      writeAudit(core, core.db, { ...actor, action: "token.mint", target: `role:${body.role_id}`, outcome: "denied", reason: e.message, project: body.project ?? null });
    }
    throw e;
  }
}

/** Revoke a token the caller owns (or any, for `operators.manage`). 404 otherwise. Idempotent. */
export function revokeToken(core: Core, auth: AuthContext, id: string): void {
  const manages = managesOperators(core, auth);
  const now = core.clock.now();
  tx(core.db, (t) => {
    const row = t.select({ tk: tokens, slug: projects.slug }).from(tokens).leftJoin(projects, eq(projects.id, tokens.projectId)).where(eq(tokens.id, id)).get();
    if (!row || (!manages && row.tk.operatorId !== auth.principal.operatorId)) throw new OpsError("not_found", "No such token.");
    t.update(tokens).set({ revokedAt: now }).where(and(eq(tokens.id, id), isNull(tokens.revokedAt))).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "token.revoke", `token:${id}`, { project: row.slug ?? null });
  });
}
