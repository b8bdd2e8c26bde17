/**
 * Refusals a service decides (beyond what the route's permission already checked) are audited
 * like the macro's: one `denied` row, written on its own (there is no mutation to share a
 * transaction with), then a 403.
 */
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { writeAudit } from "../../core/audit";
import { OpsError } from "../../core/errors";

/** Write a denied audit row for `auth` and return the 403 to throw. */
export function deniedBy(core: Core, auth: Pick<AuthContext, "principal" | "meta">, action: string, target: string, reason: string, message: string, where: { project?: string | null; environment?: string | null } = {}): OpsError {
  const a = actorOf(auth.principal, auth.meta);
  writeAudit(core, core.db, { ...a, action, target, outcome: "denied", reason, project: where.project ?? null, environment: where.environment ?? null });
  return new OpsError("forbidden", message);
}

/** Refuse a minted token where only a signed-in person's session may act (password, MFA). */
export function requireSession(core: Core, auth: Pick<AuthContext, "principal" | "meta">, action: string): void {
  if (auth.principal.sessionId === null) {
    throw deniedBy(core, auth, action, `operator:${auth.principal.operatorId}`, "needs a signed-in session, not a minted token", "Only a signed-in session can change the account's password or second factor, not a token.");
  }
}
