/**
 * MFA enrolment, exactly the spec's state table (none → staged → in force):
 *
 * | state    | call    | answer                                                        |
 * | none     | enrol   | 200, a fresh seed staged (not yet protecting the account)     |
 * | staged   | enrol   | 200, a fresh seed replaces the staged one                     |
 * | staged   | confirm | 204 with a valid code (→ in force); 401 wrong or replayed     |
 * | none     | confirm | 409 nothing waiting                                           |
 * | in force | enrol   | 409 already enrolled                                          |
 * | in force | delete  | 204 (→ none); none → 409                                      |
 *
 * Seeds are stored only through the secrets store (sealed values; the operator row keeps ids),
 * so a sealed store answers 503. The last accepted TOTP step is kept across enrolments: time
 * steps only move forward, so a code can never be used twice, whichever seed it came from.
 */
import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed, writeAudit } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { operators } from "./tables";
import { findOperator } from "./operators";
import { requireSession } from "./audit-deny";
import { mfaGuard } from "./limiter";
import { newTotpSeed, totpUri, matchTotp } from "./totp";
import type { OperatorRow } from "./rows";

export const TOTP_ISSUER = "ops";

function person(core: Core, auth: AuthContext, action: string): OperatorRow {
  requireSession(core, auth, action);
  const op = findOperator(core.db, auth.principal.operatorId);
  if (!op || op.kind !== "person") throw new OpsError("refused", "A machine operator has no second factor; it acts through tokens.");
  return op;
}

/** Stage a fresh seed; returned once (base32 and the otpauth:// URI). */
export function enrolMfa(core: Core, auth: AuthContext): { secret: string; uri: string } {
  const op = person(core, auth, "mfa.enrol");
  if (op.mfaSecretId !== null) throw new OpsError("conflict", "A second factor is already enrolled; remove it first to enrol another.");
  core.secrets.assertUnsealed();
  const seed = newTotpSeed();
  tx(core.db, (t) => {
    const current = t.select({ staged: operators.mfaStagedId, inForce: operators.mfaSecretId }).from(operators).where(eq(operators.id, op.id)).get();
    if (current?.inForce) throw new OpsError("conflict", "A second factor is already enrolled; remove it first to enrol another.");
    if (current?.staged) core.secrets.replace(t, current.staged, seed);
    else {
      const id = core.secrets.put(t, `mfa:${op.id}`, seed);
      t.update(operators).set({ mfaStagedId: id, updatedAt: core.clock.now() }).where(eq(operators.id, op.id)).run();
    }
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "mfa.enrol", `operator:${op.id}`);
  });
  return { secret: seed, uri: totpUri(seed, op.email ?? op.id, TOTP_ISSUER) };
}

/** Confirm the staged seed with a current code: it is then in force. */
export function confirmMfa(core: Core, auth: AuthContext, code: string): void {
  const op = person(core, auth, "mfa.confirm");
  const guard = mfaGuard(core);
  guard.check(op.id, auth.meta.ip);
  if (op.mfaStagedId === null) throw new OpsError("conflict", "Nothing is waiting for confirmation: enrol first.");
  core.secrets.assertUnsealed();
  const staged = op.mfaStagedId;
  const seed = core.secrets.get(core.db, staged);
  const counter = matchTotp(seed, code, core.clock.now(), op.mfaLastCounter);
  const wrong = () => {
    guard.fail(op.id, auth.meta.ip);
    writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action: "mfa.confirm", target: `operator:${op.id}`, outcome: "denied", reason: "wrong or replayed code" });
    return new OpsError("invalid_code", "That code is wrong or was already used.");
  };
  if (counter === null) throw wrong();
  const ok = tx(core.db, (t) => {
    const won = t
      .update(operators)
      .set({ mfaSecretId: staged, mfaStagedId: null, mfaLastCounter: counter, updatedAt: core.clock.now() })
      .where(and(eq(operators.id, op.id), eq(operators.mfaStagedId, staged), isNull(operators.mfaSecretId), or(isNull(operators.mfaLastCounter), lt(operators.mfaLastCounter, counter))))
      .returning({ id: operators.id })
      .all();
    if (won.length === 0) return false;
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "mfa.confirm", `operator:${op.id}`);
    return true;
  });
  if (!ok) throw wrong();
  guard.succeed(op.id, auth.meta.ip);
}

/** Drop the caller's own enrolment (in force or staged). 409 when there is none. */
export function deleteMfa(core: Core, auth: AuthContext): void {
  const op = person(core, auth, "mfa.delete");
  if (op.mfaSecretId === null && op.mfaStagedId === null) throw new OpsError("conflict", "No second factor is enrolled.");
  tx(core.db, (t) => {
    for (const id of [op.mfaSecretId, op.mfaStagedId]) if (id) core.secrets.delete(t, id);
    t.update(operators).set({ mfaSecretId: null, mfaStagedId: null, updatedAt: core.clock.now() }).where(eq(operators.id, op.id)).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "mfa.delete", `operator:${op.id}`);
  });
}
