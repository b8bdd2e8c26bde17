/** A project's alert rules and silences: create, list, delete. Evaluation is in evaluate.ts. */
import { and, eq, gt, isNull, or } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { iso } from "../../core/clock";
import { uuidv7 } from "../../core/ids";
import { OpsError, invalid } from "../../core/errors";
import { alertChannels, alertRules, alertSilences } from "./tables";
import type { AlertRuleResponse, AlertSilenceResponse, CreateRuleBody, CreateSilenceBody } from "./model";

type RuleRow = typeof alertRules.$inferSelect;
const LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal", "unspecified"]);

/** When the silences covering `rule` end (the latest), or null when none is active now. */
export function silencedUntil(core: Core, rule: Pick<RuleRow, "id" | "projectId">): number | null {
  const now = core.clock.now();
  const rows = core.db
    .select({ startsAt: alertSilences.startsAt, endsAt: alertSilences.endsAt })
    .from(alertSilences)
    .where(and(eq(alertSilences.projectId, rule.projectId), gt(alertSilences.endsAt, now), or(isNull(alertSilences.ruleId), eq(alertSilences.ruleId, rule.id))))
    .all()
    .filter((s) => s.startsAt <= now);
  return rows.length === 0 ? null : Math.max(...rows.map((s) => s.endsAt));
}

export function ruleView(core: Core, r: RuleRow): AlertRuleResponse {
  const until = silencedUntil(core, r);
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    environment: r.environment,
    service: r.service,
    metric: r.metric,
    op: r.op,
    threshold: r.threshold,
    for_seconds: r.forSeconds,
    query: r.query,
    level: r.level,
    window_seconds: r.windowSeconds,
    channels: JSON.parse(r.channels) as string[],
    enabled: r.enabled,
    state: r.state,
    since: r.since === null ? null : iso(r.since),
    last_value: r.lastValue,
    last_evaluated_at: r.lastEvaluatedAt === null ? null : iso(r.lastEvaluatedAt),
    silenced_until: until === null ? null : iso(until),
    created_at: iso(r.createdAt),
  };
}

export function listRules(core: Core, project: ProjectRef): AlertRuleResponse[] {
  return core.db.select().from(alertRules).where(eq(alertRules.projectId, project.id)).orderBy(alertRules.name).all().map((r) => ruleView(core, r));
}

function findRule(core: Core, projectId: string, id: string): RuleRow {
  const row = core.db.select().from(alertRules).where(and(eq(alertRules.projectId, projectId), eq(alertRules.id, id))).get();
  if (!row) throw new OpsError("not_found", "No such alert rule in this project.");
  return row;
}

/**
 * Make a rule. A metric rule names its metric; a log rule counts lines matching `query`/`level`
 * (at least one of them) and its threshold is a count of at least 1. Every channel must be one of
 * this project's (422 otherwise: another project's channel is not there to name).
 */
export function createRule(core: Core, auth: AuthContext, b: CreateRuleBody): AlertRuleResponse {
  const project = auth.project!;
  if (b.environment && !project.environments.includes(b.environment)) throw invalid("environment", "not an environment of this project");
  if (b.kind === "metric" && !b.metric) throw invalid("metric", "a metric rule names its metric");
  if (b.kind === "log") {
    if (!b.query && !b.level) throw invalid("query", "a log rule has a query, a level, or both");
    if (!(b.threshold >= 1) || !Number.isInteger(b.threshold)) throw invalid("threshold", "a log rule's threshold is a whole count of lines, at least 1");
    if (b.level && b.level.split(",").some((l) => !LEVELS.has(l.trim().toLowerCase()))) throw invalid("level", "use trace, debug, info, warn, error, fatal or unspecified, comma-separated");
  }
  if (!Number.isFinite(b.threshold)) throw invalid("threshold", "a finite number");
  const channels = [...new Set(b.channels)];
  const now = core.clock.now();
  const id = uuidv7(now);
  return tx(core.db, (t) => {
    for (const c of channels) {
      if (!t.select({ id: alertChannels.id }).from(alertChannels).where(and(eq(alertChannels.id, c), eq(alertChannels.projectId, project.id))).get()) {
        throw new OpsError("validation_failed", `channels: ${c} is no channel of this project.`, { fields: [{ path: "channels", message: "not a channel of this project" }] });
      }
    }
    if (t.select({ id: alertRules.id }).from(alertRules).where(and(eq(alertRules.projectId, project.id), eq(alertRules.name, b.name))).get()) {
      throw new OpsError("already_exists", `A rule named "${b.name}" exists in this project.`);
    }
    t.insert(alertRules)
      .values({
        id,
        projectId: project.id,
        name: b.name,
        kind: b.kind,
        environment: b.environment ?? null,
        service: b.service ?? null,
        metric: b.kind === "metric" ? b.metric! : null,
        op: b.op ?? "above",
        threshold: b.threshold,
        forSeconds: b.for_seconds ?? 0,
        query: b.kind === "log" ? (b.query ?? null) : null,
        level: b.kind === "log" ? (b.level ?? null) : null,
        windowSeconds: b.window_seconds ?? 300,
        channels: JSON.stringify(channels),
        enabled: b.enabled ?? true,
        createdAt: now,
      })
      .run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "alerts.rule.create", `alert-rule:${b.name}`, { project: project.slug });
    return ruleView(core, t.select().from(alertRules).where(eq(alertRules.id, id)).get()!);
  });
}

export function deleteRule(core: Core, auth: AuthContext, id: string): void {
  const project = auth.project!;
  const row = findRule(core, project.id, id);
  tx(core.db, (t) => {
    t.delete(alertRules).where(eq(alertRules.id, row.id)).run();
    t.delete(alertSilences).where(eq(alertSilences.ruleId, row.id)).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "alerts.rule.delete", `alert-rule:${row.name}`, { project: project.slug });
  });
}

function silenceView(core: Core, s: typeof alertSilences.$inferSelect): AlertSilenceResponse {
  const now = core.clock.now();
  return { id: s.id, rule_id: s.ruleId, reason: s.reason, starts_at: iso(s.startsAt), ends_at: iso(s.endsAt), active: s.startsAt <= now && s.endsAt > now };
}

export function listSilences(core: Core, project: ProjectRef): AlertSilenceResponse[] {
  return core.db.select().from(alertSilences).where(eq(alertSilences.projectId, project.id)).orderBy(alertSilences.endsAt).all().map((s) => silenceView(core, s));
}

/** Silence one rule (or every rule of the project) from now for `minutes`: no message is sent meanwhile. */
export function createSilence(core: Core, auth: AuthContext, b: CreateSilenceBody): AlertSilenceResponse {
  const project = auth.project!;
  if (b.rule_id) findRule(core, project.id, b.rule_id);
  const now = core.clock.now();
  const row = { id: uuidv7(now), projectId: project.id, ruleId: b.rule_id ?? null, reason: b.reason ?? "", startsAt: now, endsAt: now + b.minutes * 60_000, createdBy: auth.principal.operatorId };
  tx(core.db, (t) => {
    t.insert(alertSilences).values(row).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "alerts.silence.create", `alert-silence:${row.id}`, { project: project.slug });
  });
  return silenceView(core, row);
}

/** End a silence now (deleting it). */
export function deleteSilence(core: Core, auth: AuthContext, id: string): void {
  const project = auth.project!;
  const row = core.db.select().from(alertSilences).where(and(eq(alertSilences.projectId, project.id), eq(alertSilences.id, id))).get();
  if (!row) throw new OpsError("not_found", "No such silence in this project.");
  tx(core.db, (t) => {
    t.delete(alertSilences).where(eq(alertSilences.id, id)).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "alerts.silence.delete", `alert-silence:${id}`, { project: project.slug });
  });
}
