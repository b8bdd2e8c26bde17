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
 *
 * A second factor in force is removed only by a session signed in within the last 10 minutes or
 * with the current code (401 `mfa_required` without either), so an old or stolen session cannot
 * strip it; confirming one ends the person's other sessions, which may have been someone else's.
 * Decision: docs/decisions/0543-mfa-changes-need-fresh-proof.md.
 */
import { and, eq, isNull, lt, or, type SQL } from "drizzle-orm";
import type { Tx } from "../../core/db/client";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed, writeAudit } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { operators, sessions } from "./tables";
import { findOperator } from "./operators";
import { requireSession } from "./audit-deny";
import { mfaGuard } from "./limiter";
import { newTotpSeed, totpUri, matchTotp } from "./totp";
import { endOtherSessions } from "./sessions";
import type { OperatorRow } from "./rows";

export const TOTP_ISSUER = "ops";
/** Removing a second factor in force without its code needs a sign-in at most this long ago. */
export const RECENT_SIGN_IN_MS = 10 * 60_000;

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

/** Count a wrong or replayed code against the MFA limit, audit it, and return the 401 to throw. */
function wrongCode(core: Core, auth: AuthContext, op: OperatorRow, action: string): OpsError {
  mfaGuard(core).fail(op.id, auth.meta.ip);
  writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action, target: `operator:${op.id}`, outcome: "denied", reason: "wrong or replayed code" });
  return new OpsError("invalid_code", "That code is wrong or was already used.");
}

/** The TOTP step `code` matches for the seed `seedId` (limited per account and address), or a thrown 401. */
function matchCode(core: Core, auth: AuthContext, op: OperatorRow, seedId: string, code: string, action: string): number {
  mfaGuard(core).check(op.id, auth.meta.ip);
  core.secrets.assertUnsealed();
  const counter = matchTotp(core.secrets.get(core.db, seedId), code, core.clock.now(), op.mfaLastCounter);
  if (counter === null) throw wrongCode(core, auth, op, action);
  return counter;
}

/** Accept `counter` once for `op` inside `t`: false when a concurrent request took that step or a later one. */
function takeStep(t: Tx, op: OperatorRow, counter: number, set: Partial<typeof operators.$inferInsert>, also?: SQL): boolean {
  const won = t
    .update(operators)
    .set({ ...set, mfaLastCounter: counter })
    .where(and(eq(operators.id, op.id), also, or(isNull(operators.mfaLastCounter), lt(operators.mfaLastCounter, counter))))
    .returning({ id: operators.id })
    .all();
  return won.length > 0;
}

/** Confirm the staged seed with a current code: it is then in force, and the person's other sessions end. */
export function confirmMfa(core: Core, auth: AuthContext, code: string): void {
  const op = person(core, auth, "mfa.confirm");
  if (op.mfaStagedId === null) throw new OpsError("conflict", "Nothing is waiting for confirmation: enrol first.");
  const staged = op.mfaStagedId;
  const counter = matchCode(core, auth, op, staged, code, "mfa.confirm");
  const now = core.clock.now();
  const ok = tx(core.db, (t) => {
    const won = takeStep(t, op, counter, { mfaSecretId: staged, mfaStagedId: null, updatedAt: now }, and(eq(operators.mfaStagedId, staged), isNull(operators.mfaSecretId)));
    if (!won) return false;
    const ended = endOtherSessions(t, op.id, auth.principal.sessionId, now);
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "mfa.confirm", `operator:${op.id}`, {}, { sessions_ended: ended });
    return true;
  });
  if (!ok) throw wrongCode(core, auth, op, "mfa.confirm");
  mfaGuard(core).succeed(op.id, auth.meta.ip);
}

/** True when the caller's session was signed in (sessions are created only by a sign-in) within RECENT_SIGN_IN_MS. */
function signedInRecently(core: Core, auth: AuthContext): boolean {
  const row = core.db.select({ createdAt: sessions.createdAt }).from(sessions).where(eq(sessions.id, auth.principal.sessionId ?? "")).get();
  return row !== undefined && core.clock.now() - row.createdAt <= RECENT_SIGN_IN_MS;
}

/**
 * Drop the caller's own enrolment (in force or staged). 409 when there is none. One in force needs
 * a sign-in within RECENT_SIGN_IN_MS or the current `code` (a wrong one is 401 and counted).
 */
export function deleteMfa(core: Core, auth: AuthContext, code?: string | null): void {
  const op = person(core, auth, "mfa.delete");
  if (op.mfaSecretId === null && op.mfaStagedId === null) throw new OpsError("conflict", "No second factor is enrolled.");
  const given = code?.trim() ?? "";
  let counter: number | null = null;
  if (op.mfaSecretId !== null) {
    if (given !== "") counter = matchCode(core, auth, op, op.mfaSecretId, given, "mfa.delete");
    else if (!signedInRecently(core, auth)) {
      writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action: "mfa.delete", target: `operator:${op.id}`, outcome: "denied", reason: "needs a sign-in within the last 10 minutes or the current code" });
      throw new OpsError("mfa_required", "Removing two-factor authentication needs the current code from your authenticator app (or a sign-in within the last 10 minutes).");
    }
  }
  const now = core.clock.now();
  const ok = tx(core.db, (t) => {
    const cleared = { mfaSecretId: null, mfaStagedId: null, updatedAt: now };
    if (counter !== null && !takeStep(t, op, counter, cleared)) return false;
    if (counter === null) t.update(operators).set(cleared).where(eq(operators.id, op.id)).run();
    for (const id of [op.mfaSecretId, op.mfaStagedId]) if (id) core.secrets.delete(t, id);
    const proof = op.mfaSecretId === null ? "staged only" : counter !== null ? "code" : "recent sign-in";
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "mfa.delete", `operator:${op.id}`, {}, { proof });
    return true;
  });
  if (!ok) throw wrongCode(core, auth, op, "mfa.delete");
  if (counter !== null) mfaGuard(core).succeed(op.id, auth.meta.ip);
}
