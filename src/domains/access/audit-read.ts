/**
 * The project's audit log, newest first, with the spec's filters. Matching rules: `actor` is
 * exact and case-insensitive; `action` is exact, or a prefix when it ends in `*` (`secrets.*`,
 * `auth*`); `environment` is exact; `outcome` is `allowed` or `denied`; `since` is RFC 3339 or
 * relative (`15m`, `24h`, `7d`); the cursor is the id of the last row of the previous page.
 */
import { and, desc, eq, gte, lt, like, sql, type SQL } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { auditLog } from "../../core/tables";
import { iso, parseTimeParam } from "../../core/clock";
import { invalid } from "../../core/errors";
import type { AuditResponse } from "./model-tokens";

export const AUDIT_LIMIT = { default: 100, max: 500 } as const;

export interface AuditFilter {
  actor?: string;
  environment?: string;
  action?: string;
  outcome?: "allowed" | "denied";
  since?: string;
  limit?: number;
  cursor?: number;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function listAudit(core: Core, project: ProjectRef, f: AuditFilter): AuditResponse[] {
  const where: SQL[] = [eq(auditLog.project, project.slug)];
  if (f.actor) where.push(sql`lower(${auditLog.actor}) = ${f.actor.toLowerCase()}`);
  if (f.environment) where.push(eq(auditLog.environment, f.environment));
  if (f.action) {
    if (f.action.endsWith("*")) where.push(like(auditLog.action, `${escapeLike(f.action.slice(0, -1))}%`));
    else where.push(eq(auditLog.action, f.action));
  }
  if (f.outcome) where.push(eq(auditLog.outcome, f.outcome));
  if (f.since) {
    const since = parseTimeParam(f.since, core.clock.now());
    if (since === null) throw invalid("since", "must be RFC 3339 (2026-11-21T12:00:00Z) or relative (15m, 24h, 7d)");
    where.push(gte(auditLog.at, since));
  }
  if (f.cursor !== undefined) where.push(lt(auditLog.id, Math.floor(f.cursor)));
  const limit = Math.min(Math.max(1, Math.floor(f.limit ?? AUDIT_LIMIT.default)), AUDIT_LIMIT.max);
  return core.db
    .select()
    .from(auditLog)
    .where(and(...where))
    .orderBy(desc(auditLog.id))
    .limit(limit)
    .all()
    .map((r) => ({
      id: r.id,
      at: iso(r.at),
      actor: r.actor,
      via: r.via,
      ip: r.ip,
      action: r.action,
      target: r.target,
      outcome: r.outcome,
      reason: r.reason,
      project: r.project,
      environment: r.environment,
    }));
}
