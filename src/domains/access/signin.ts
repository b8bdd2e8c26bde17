/**
 * Sign-in, sign-out and password change (DESIGN.md §3 "Bearer and sessions").
 *
 * An unknown email and a wrong password get the same 401 `invalid_credentials`, the same message
 * and about the same time: an argon2 verify runs in both cases (against a dummy hash when there is
 * no account). The second factor is asked for only after the password was right, so `mfa_required`
 * never tells a stranger anything.
 */
import { and, eq, isNull, or, lt } from "drizzle-orm";
import { randomBytes } from "node:crypto";
import { coreLocal, type Core } from "../../core/core";
import type { RequestMeta } from "../../core/authz/principal";
import { sameOrigin, type AuthContext } from "../../core/authz/plugin";
import { sessionCookieName } from "../../core/authz/credentials";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed, writeAudit } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { operators, sessions, tokens } from "./tables";
import { findOperator, findOperatorByEmail, hashPassword } from "./operators";
import { checkPassword } from "./password-policy";
import { endOtherSessions, insertSession, sessionEndsAt } from "./sessions";
import { matchTotp } from "./totp";
import { signInGuard } from "./limiter";
import { requireSession } from "./audit-deny";
import { touchBatch } from "./authn";
import { iso } from "../../core/clock";
import type { OperatorRow, SessionRow } from "./rows";
import type { SessionResponse } from "./model-identity";

const WRONG = "The email or password is wrong.";

function dummyHash(core: Core): Promise<string> {
  return coreLocal<Promise<string>>(core, "access.dummy-hash", () => hashPassword(randomBytes(24).toString("base64url")));
}

export interface SignInInput {
  email: string;
  password: string;
  code?: string | null;
  client?: "console" | "cli" | null;
}

/** The SessionResponse of `row`; `current` when it is the session of the request. */
export function sessionView(core: Core, row: SessionRow, currentId: string | null): SessionResponse {
  const lastSeen = Math.max(row.lastSeenAt, touchBatch(core).sessions.get(row.id) ?? 0);
  return {
    id: row.id,
    kind: row.kind,
    created_at: iso(row.createdAt),
    expires_at: iso(sessionEndsAt(row, lastSeen)),
    ip: row.ip,
    user_agent: row.userAgent,
    current: row.id === currentId,
  };
}

function failSignIn(core: Core, op: OperatorRow | null, meta: RequestMeta, reason: string, code: "invalid_credentials" | "mfa_required" = "invalid_credentials"): OpsError {
  writeAudit(core, core.db, {
    actor: op?.email ?? "anonymous",
    operatorId: op?.id ?? null,
    via: "console",
    ip: meta.ip,
    action: "auth.login",
    target: op ? `operator:${op.id}` : "auth",
    outcome: "denied",
    reason,
    context: { request: meta.requestId },
  });
  if (code === "mfa_required") return new OpsError("mfa_required", "This account has a second factor: send the code from your authenticator app.");
  return new OpsError("invalid_credentials", WRONG);
}

/**
 * Refuse a sign-in another site could have sent (login CSRF: a page that auto-submits a form with
 * the attacker's credentials would sign the victim's browser in as the attacker). Sign-in takes
 * JSON only, which a cross-site form cannot send and a cross-site script cannot send without a
 * CORS preflight that ops never grants; and a browser's request must come from this server's own
 * origin, like every other cookie request. Clients that are not browsers send no Origin.
 */
export function guardSignInRequest(core: Core, request: Request, meta: RequestMeta): void {
  const type = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  const crossSite = (request.headers.get("origin") !== null && !sameOrigin(core, request)) || request.headers.get("sec-fetch-site") === "cross-site";
  if (type === "application/json" && !crossSite) return;
  const reason = crossSite ? "sign-in from another site" : `sign-in body of type ${JSON.stringify(type.slice(0, 80))}`;
  writeAudit(core, core.db, { actor: "anonymous", operatorId: null, via: "console", ip: meta.ip, action: "auth.login", target: "auth", outcome: "denied", reason, context: { request: meta.requestId } });
  if (crossSite) throw new OpsError("forbidden", "Cross-site sign-in refused: the Origin header does not match this server.");
  throw new OpsError("unsupported_media_type", "Sign in with a JSON body (Content-Type: application/json).");
}

/**
 * Sign a person in: check limits, verify the password (always running argon2), the TOTP code
 * when MFA is in force, then create the session and its audit row in one transaction.
 */
export async function signIn(core: Core, input: SignInInput, meta: RequestMeta): Promise<{ secret: string; session: SessionRow; operator: OperatorRow }> {
  const email = input.email.trim().toLowerCase();
  const guard = signInGuard(core);
  guard.check(email, meta.ip);
  const found = email === "" ? null : findOperatorByEmail(core.db, email);
  const op = found && found.kind === "person" ? found : null;
  const hash = op?.passwordHash ?? (await dummyHash(core));
  let ok = false;
  try {
    ok = await Bun.password.verify(input.password, hash);
  } catch {
    ok = false;
  }
  if (!op || !op.passwordHash || !ok || op.suspendedAt !== null) {
    guard.fail(email, meta.ip);
    const reason = !op ? "unknown account" : op.suspendedAt !== null && ok ? "operator is suspended" : "wrong password";
    throw failSignIn(core, op, meta, reason);
  }

  let counter: number | null = null;
  if (op.mfaSecretId !== null) {
    const code = input.code?.trim() ?? "";
    if (code === "") throw failSignIn(core, op, meta, "second factor required", "mfa_required");
    core.secrets.assertUnsealed();
    const seed = core.secrets.get(core.db, op.mfaSecretId);
    counter = matchTotp(seed, code, core.clock.now(), op.mfaLastCounter);
    if (counter === null) {
      guard.fail(email, meta.ip);
      throw failSignIn(core, op, meta, "wrong or replayed second-factor code");
    }
  }

  const kind = input.client === "cli" ? "cli" : "console";
  const out = tx(core.db, (t) => {
    if (counter !== null) {
      // Accept the code once: a concurrent sign-in with the same code loses here.
      const won = t
        .update(operators)
        .set({ mfaLastCounter: counter })
        .where(and(eq(operators.id, op.id), or(isNull(operators.mfaLastCounter), lt(operators.mfaLastCounter, counter))))
        .returning({ id: operators.id })
        .all();
      if (won.length === 0) return null;
    }
    const { secret, row } = insertSession(core, t, op.id, kind, meta);
    writeAudit(core, t, {
      actor: op.email ?? "",
      operatorId: op.id,
      via: "console",
      ip: meta.ip,
      action: "auth.login",
      target: `session:${row.id}`,
      outcome: "allowed",
      context: { request: meta.requestId, session: row.id, client: kind, mfa: counter !== null },
    });
    return { secret, session: row };
  });
  if (!out) {
    guard.fail(email, meta.ip);
    throw failSignIn(core, op, meta, "wrong or replayed second-factor code");
  }
  guard.succeed(email, meta.ip);
  return { ...out, operator: op };
}

/** The Set-Cookie value carrying a console session (or clearing it with `secret` null); `__Host-` over HTTPS (decision 0520). */
export function sessionCookie(core: Core, secret: string | null, maxAgeSeconds: number): string {
  const secure = core.config.publicUrl.startsWith("https:") ? "; Secure" : "";
  return `${sessionCookieName(core.config.publicUrl)}=${secret ?? ""}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${secret === null ? 0 : maxAgeSeconds}${secure}`;
}

/**
 * End the credential the request arrived on: its session, or (for a minted token) the token
 * itself, so `ops logout` with a device-login token really signs the CLI out.
 */
export function signOut(core: Core, auth: AuthContext): void {
  const p = auth.principal;
  const now = core.clock.now();
  tx(core.db, (t) => {
    if (p.sessionId) t.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.id, p.sessionId), isNull(sessions.revokedAt))).run();
    else if (p.tokenId) t.update(tokens).set({ revokedAt: now }).where(and(eq(tokens.id, p.tokenId), isNull(tokens.revokedAt))).run();
    auditAllowed(core, t, actorOf(p, auth.meta), "auth.logout", p.sessionId ? `session:${p.sessionId}` : `token:${p.tokenId}`);
  });
}

/** Change the caller's own password (current one required); ends their other sessions. */
export async function changePassword(core: Core, input: { current_password: string; new_password: string }, auth: AuthContext): Promise<void> {
  requireSession(core, auth, "auth.password");
  const op = findOperator(core.db, auth.principal.operatorId);
  if (!op || op.kind !== "person") throw new OpsError("refused", "A machine operator has no password.");
  const guard = signInGuard(core);
  const account = op.email ?? op.id;
  guard.check(account, auth.meta.ip);
  const ok = op.passwordHash !== null && (await Bun.password.verify(input.current_password, op.passwordHash).catch(() => false));
  if (!ok) {
    guard.fail(account, auth.meta.ip);
    writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action: "auth.password", target: `operator:${op.id}`, outcome: "denied", reason: "wrong current password" });
    throw invalid("current_password", "is not your current password");
  }
  await checkPassword(input.new_password, op.email, "new_password");
  if (input.new_password === input.current_password) throw invalid("new_password", "must differ from the current password");
  const hash = await hashPassword(input.new_password);
  const now = core.clock.now();
  tx(core.db, (t) => {
    t.update(operators).set({ passwordHash: hash, updatedAt: now }).where(eq(operators.id, op.id)).run();
    const ended = endOtherSessions(t, op.id, auth.principal.sessionId, now);
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "auth.password", `operator:${op.id}`, {}, { sessions_ended: ended });
  });
}
