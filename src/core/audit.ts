/**
 * The audit writer. A mutation's audit row is written with the same transaction handle as the
 * mutation (`writeAudit(core, t, …)` inside `tx(...)`), so both commit or neither does; if the
 * audit insert fails the transaction fails (fail closed). Denials are written on their own.
 *
 * Rows never hold a secret: `target` names things (slugs, ids, names), `reason` says why.
 */
import type { Queryable } from "./db/client";
import { auditLog } from "./tables";
import type { Clock } from "./clock";

export type AuditVia = "console" | "token" | "api-token" | "system";

export interface AuditEntry {
  actor: string;
  operatorId?: string | null;
  via: AuditVia;
  ip?: string;
  /** The permission asked for, or the verb of a self-service write (`auth.login`, `mfa.enrol`). */
  action: string;
  target?: string;
  outcome: "allowed" | "denied";
  reason?: string;
  project?: string | null;
  environment?: string | null;
  /** Ids that explain the row (token id, request id …). Never a secret. */
  context?: Record<string, string | number | boolean | null>;
}

/** Who is acting, as the audit log and the HTTP layer see it. */
export interface AuditActor {
  actor: string;
  operatorId: string | null;
  via: AuditVia;
  ip: string;
  context?: Record<string, string | number | boolean | null>;
}

/** The scheduler's own actions. */
export const SYSTEM_ACTOR: AuditActor = { actor: "system", operatorId: null, via: "system", ip: "" };

/** Insert one audit row through `q` (a transaction handle for mutations). */
export function writeAudit(core: { clock: Clock }, q: Queryable, entry: AuditEntry): number {
  const row = q
    .insert(auditLog)
    .values({
      at: core.clock.now(),
      actor: entry.actor,
      operatorId: entry.operatorId ?? null,
      via: entry.via,
      ip: entry.ip ?? "",
      action: entry.action,
      target: entry.target ?? "",
      outcome: entry.outcome,
      reason: entry.outcome === "allowed" ? "" : (entry.reason ?? ""),
      project: entry.project ?? null,
      environment: entry.environment ?? null,
      context: entry.context ? JSON.stringify(entry.context) : null,
    })
    .returning({ id: auditLog.id })
    .get();
  return row.id;
}

/** Convenience: an allowed row for `actor` doing `action` on `target`. */
export function auditAllowed(
  core: { clock: Clock },
  q: Queryable,
  actor: AuditActor,
  action: string,
  target: string,
  where: { project?: string | null; environment?: string | null } = {},
  context?: AuditEntry["context"],
): number {
  return writeAudit(core, q, {
    actor: actor.actor,
    operatorId: actor.operatorId,
    via: actor.via,
    ip: actor.ip,
    action,
    target,
    outcome: "allowed",
    project: where.project ?? null,
    environment: where.environment ?? null,
    context: { ...actor.context, ...context },
  });
}
