/**
 * Operator administration under `operators.manage`: list, create, and change (display name,
 * suspension, MFA reset, password reset, estate-wide role). Suspending ends every session and
 * token of the operator in the same transaction, so the next request with any of them is a 401;
 * unsuspending does not bring them back.
 */
import { and, asc, eq, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { iso } from "../../core/clock";
import { operators, sessions, tokens, memberships } from "./tables";
import { insertOperator, hashPassword, findOperator, type CreateOperatorInput } from "./operators";
import { checkPassword } from "./password-policy";
import { upsertMembership } from "./memberships";
import { findRole } from "./roles";
import { operatorName, type OperatorRow } from "./rows";
import type { CreateOperatorBody, OperatorResponse, UpdateOperatorBody } from "./model-identity";
import type { AuditActor } from "../../core/audit";

function estateRoleOf(q: Tx | Core["db"], operatorId: string): string | null {
  return q.select({ roleId: memberships.roleId }).from(memberships).where(and(eq(memberships.operatorId, operatorId), isNull(memberships.projectId))).get()?.roleId ?? null;
}

export function operatorView(core: Core, o: OperatorRow, estateRoleId: string | null = estateRoleOf(core.db, o.id)): OperatorResponse {
  return {
    id: o.id,
    kind: o.kind,
    name: operatorName(o),
    email: o.email,
    handle: o.handle,
    display_name: o.displayName,
    suspended: o.suspendedAt !== null,
    mfa: o.mfaSecretId !== null,
    estate_role_id: estateRoleId,
    created_at: iso(o.createdAt),
  };
}

/** Every operator, people first, then by name. */
export function listOperators(core: Core): OperatorResponse[] {
  const estate = new Map(
    core.db
      .select({ operatorId: memberships.operatorId, roleId: memberships.roleId })
      .from(memberships)
      .where(isNull(memberships.projectId))
      .all()
      .map((m) => [m.operatorId, m.roleId]),
  );
  return core.db
    .select()
    .from(operators)
    .orderBy(asc(operators.kind), asc(operators.email), asc(operators.handle))
    .all()
    .map((o) => operatorView(core, o, estate.get(o.id) ?? null));
}

/** Only fixed roles are held estate-wide (a project's role means nothing outside it). */
function estateRole(t: Tx, roleId: string) {
  const role = findRole(t, roleId);
  if (!role) throw new OpsError("not_found", "No such role.");
  if (!role.fixed) throw new OpsError("refused", "Only a fixed role can be held estate-wide.");
  return role;
}

/**
 * Create an operator, optionally with an estate-wide fixed role. Shared by the route and
 * `ops admin create-operator`.
 */
export async function addOperator(core: Core, body: CreateOperatorBody, actor: AuditActor): Promise<OperatorRow> {
  let input: CreateOperatorInput;
  if (body.kind === "person") {
    if (!body.email) throw invalid("email", "is required for a person");
    if (body.handle) throw invalid("handle", "is for machines; a person has an email");
    input = { kind: "person", email: body.email, displayName: body.display_name };
  } else {
    if (!body.handle) throw invalid("handle", "is required for a machine");
    if (body.email) throw invalid("email", "is for people; a machine has a handle");
    if (body.password) throw invalid("password", "a machine has no password; it acts through tokens");
    input = { kind: "machine", handle: body.handle, displayName: body.display_name };
  }
  let hash: string | null = null;
  if (body.kind === "person" && body.password) {
    await checkPassword(body.password, body.email ?? null);
    hash = await hashPassword(body.password);
  }
  return tx(core.db, (t) => {
    const row = insertOperator(core, t, input, hash);
    if (body.estate_role_id) upsertMembership(core, t, row.id, null, estateRole(t, body.estate_role_id).id);
    auditAllowed(core, t, actor, "operators.manage", `operator:${row.id}`, {}, { op: "operator.create", kind: row.kind, estate_role: body.estate_role_id ?? null });
    return row;
  });
}

/** Change an operator. 404 unknown; 422 suspending yourself or a password for a machine. */
export async function updateOperator(core: Core, id: string, body: UpdateOperatorBody, auth: AuthContext): Promise<OperatorResponse> {
  const existing = findOperator(core.db, id);
  if (!existing) throw new OpsError("not_found", "No such operator.");
  if (body.suspended === true && id === auth.principal.operatorId) throw new OpsError("refused", "You cannot suspend yourself.");
  if (body.estate_role_id !== undefined && id === auth.principal.operatorId) throw new OpsError("refused", "You cannot change your own estate-wide role.");
  let hash: string | null = null;
  if (body.password !== undefined) {
    if (existing.kind !== "person") throw invalid("password", "a machine has no password; it acts through tokens");
    await checkPassword(body.password, existing.email);
    hash = await hashPassword(body.password);
  }
  const displayName = body.display_name?.trim();
  if (displayName !== undefined && (displayName === "" || displayName.length > 100)) throw invalid("display_name", "must be 1 to 100 characters");
  const now = core.clock.now();
  const changes: string[] = [];
  const row = tx(core.db, (t) => {
    const set: Partial<OperatorRow> = { updatedAt: now };
    let endCredentials = false;
    if (displayName !== undefined && displayName !== existing.displayName) {
      set.displayName = displayName;
      changes.push("display_name");
    }
    if (body.suspended === true && existing.suspendedAt === null) {
      set.suspendedAt = now;
      endCredentials = true;
      changes.push("suspend");
    } else if (body.suspended === false && existing.suspendedAt !== null) {
      set.suspendedAt = null;
      changes.push("unsuspend");
    }
    const dropSeeds: string[] = [];
    if (body.reset_mfa === true && (existing.mfaSecretId !== null || existing.mfaStagedId !== null)) {
      if (existing.mfaSecretId) dropSeeds.push(existing.mfaSecretId);
      if (existing.mfaStagedId) dropSeeds.push(existing.mfaStagedId);
      set.mfaSecretId = null;
      set.mfaStagedId = null;
      changes.push("reset_mfa");
    }
    if (hash !== null) {
      set.passwordHash = hash;
      t.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.operatorId, id), isNull(sessions.revokedAt))).run();
      changes.push("password");
    }
    t.update(operators).set(set).where(eq(operators.id, id)).run();
    for (const s of dropSeeds) core.secrets.delete(t, s);
    if (endCredentials) {
      t.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.operatorId, id), isNull(sessions.revokedAt))).run();
      t.update(tokens).set({ revokedAt: now }).where(and(eq(tokens.operatorId, id), isNull(tokens.revokedAt))).run();
    }
    if (body.estate_role_id !== undefined) {
      if (body.estate_role_id === null) t.delete(memberships).where(and(eq(memberships.operatorId, id), isNull(memberships.projectId))).run();
      else upsertMembership(core, t, id, null, estateRole(t, body.estate_role_id).id);
      changes.push("estate_role");
    }
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "operators.manage", `operator:${id}`, {}, { op: "operator.update", changes: changes.join(",") });
    return t.select().from(operators).where(eq(operators.id, id)).get()!;
  });
  return operatorView(core, row);
}
