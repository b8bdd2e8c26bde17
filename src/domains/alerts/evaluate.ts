/**
 * Rule evaluation, every minute on the scheduler (`alerts.evaluate`). A rule is `ok`, `pending`
 * (its condition holds, not yet for `for_seconds`) or `firing`; only the moves into and out of
 * `firing` send anything, so a rule fires once and resolves once however long it lasts
 * (Prometheus's model). A silenced rule still changes state but sends nothing; when the silence
 * ends with the rule still firing, the firing is sent then. A resolution is sent for every firing
 * that was sent, silenced or not: it closes what a receiver was told, and is sent for nothing else.
 *
 * The value of a metric rule, per service (the worst one counts when the rule names none): a
 * gauge's or a histogram's latest bucket on the Metrics page's buckets; a counter's per-second
 * rate over the last five minutes (its first and last cumulative values there). A log rule's
 * value is the count of lines matching its query and level in its window.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { countProjectLogs, projectSeries } from "../observability/service";
import { alertRules } from "./tables";
import { enqueueDeliveries } from "./deliveries";
import { silencedUntil } from "./rules";
import type { AlertMessage } from "./formats";

export const EVALUATE_TASK = "alerts.evaluate";
const LOOKBACK_MS = 5 * 60_000;

type RuleRow = typeof alertRules.$inferSelect;

function metricValue(core: Core, r: RuleRow, now: number): number | null {
  const s = projectSeries(core, { projectId: r.projectId, environment: r.environment, name: r.metric ?? "", service: r.service, fromMs: now - LOOKBACK_MS, toMs: now });
  const values: number[] = [];
  for (const series of s.series) {
    const pts = series.points.filter((p) => p.value !== null && p.value !== undefined) as Array<{ t: string; value: number }>;
    if (pts.length === 0) continue;
    if (s.kind === "counter") {
      if (pts.length < 2) continue;
      const first = pts[0];
      const last = pts[pts.length - 1];
      const seconds = (Date.parse(last.t) - Date.parse(first.t)) / 1000;
      if (seconds > 0) values.push(Math.max(0, last.value - first.value) / seconds);
    } else values.push(pts[pts.length - 1].value);
  }
  if (values.length === 0) return null;
  return r.op === "below" ? Math.min(...values) : Math.max(...values);
}

function logCount(core: Core, r: RuleRow, now: number): number {
  const limit = Math.min(Math.max(1, Math.ceil(r.threshold)), 10_000);
  return countProjectLogs(core, { projectId: r.projectId, environment: r.environment, service: r.service, q: r.query, level: r.level, fromMs: now - r.windowSeconds * 1000, toMs: now, limit });
}

function describe(r: RuleRow, value: number | null): string {
  const where = `${r.service ? ` for ${r.service}` : ""}${r.environment ? ` in ${r.environment}` : ""}`;
  const shown = value === null ? "no data" : Number.isInteger(value) ? String(value) : value.toPrecision(4);
  if (r.kind === "log") return `${shown} log lines matching ${JSON.stringify(r.query ?? "")}${r.level ? ` at ${r.level}` : ""} in ${r.windowSeconds} s${where} (threshold ${r.threshold})`;
  return `${r.metric} is ${shown}${where} (${r.op} ${r.threshold}${r.forSeconds ? ` for ${r.forSeconds} s` : ""})`;
}

function message(core: Core, r: RuleRow, slug: string, event: "alert.firing" | "alert.resolved", value: number | null): AlertMessage {
  return {
    event,
    project: slug,
    title: `${event === "alert.firing" ? "[FIRING]" : "[RESOLVED]"} ${r.name}`,
    text: describe(r, value),
    url: `${core.config.publicUrl}/projects/${slug}/alerts`,
    at: iso(core.clock.now()),
    rule: { id: r.id, name: r.name, value, threshold: r.threshold, op: r.kind === "log" ? "at least" : r.op },
  };
}

/** Evaluate one rule now: its new state, and the messages its change sends. */
export function evaluateRule(core: Core, r: RuleRow): void {
  const project = core.access.findProjectById(r.projectId);
  if (!project) return;
  const now = core.clock.now();
  const value = r.kind === "log" ? logCount(core, r, now) : metricValue(core, r, now);
  const breach = value !== null && (r.kind === "log" ? value >= r.threshold : r.op === "below" ? value < r.threshold : value > r.threshold);
  const channels = JSON.parse(r.channels) as string[];
  const silenced = silencedUntil(core, r) !== null;
  let { state, since, notified } = r;
  const send: Array<"alert.firing" | "alert.resolved"> = [];
  if (breach) {
    since ??= now;
    if (state !== "firing") state = now - since >= r.forSeconds * 1000 ? "firing" : "pending";
    if (state === "firing" && !notified && !silenced) {
      send.push("alert.firing");
      notified = true;
    }
  } else {
    if (state === "firing" && notified) send.push("alert.resolved");
    state = "ok";
    since = null;
    notified = false;
  }
  tx(core.db, (t) => {
    t.update(alertRules).set({ state, since, notified, lastValue: value, lastEvaluatedAt: now }).where(eq(alertRules.id, r.id)).run();
    for (const event of send) enqueueDeliveries(core, t, r.projectId, channels, r.id, message(core, r, project.slug, event, value));
  });
}

/** Evaluate every enabled rule; one rule's failure is logged and does not stop the others. */
export function evaluateRules(core: Core): void {
  for (const r of core.db.select().from(alertRules).where(eq(alertRules.enabled, true)).all()) {
    try {
      evaluateRule(core, r);
    } catch (e) {
      core.log.error("alert rule evaluation failed", { rule: r.id, err: e });
    }
  }
}

export function defineEvaluateTask(core: Core): void {
  core.scheduler.defineTask(EVALUATE_TASK, "* * * * *", () => evaluateRules(core));
}
