/**
 * Alerts: a project's outbound channels (webhook, Slack, Discord; the URL sealed in the secrets
 * store), its alert rules with their evaluation state, silences, and the delivery log of every
 * message sent to a channel. One estate setting row: the private targets channels may reach.
 */
import { sqliteTable, text, integer, real, index, uniqueIndex } from "drizzle-orm/sqlite-core";

export const alertChannels = sqliteTable(
  "alert_channels",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["webhook", "slack", "discord"] }).notNull(),
    /** Sealed value id of the URL (a webhook URL is a credential: whoever has it may post). */
    urlSealedId: text("url_sealed_id").notNull(),
    /** What may be shown of the URL: scheme and host only. */
    urlHint: text("url_hint").notNull(),
    /** Sealed value id of the HMAC key (webhooks only). */
    signingSealedId: text("signing_sealed_id"),
    /** JSON array of notification kinds this channel also receives. */
    noticeKinds: text("notice_kinds").notNull().default("[]"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("alert_channels_project_name").on(t.projectId, t.name)],
);

export const alertRules = sqliteTable(
  "alert_rules",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["metric", "log"] }).notNull(),
    environment: text("environment"),
    service: text("service"),
    /** Metric rules: the metric's name, `above`/`below`, the threshold, how long it must hold. */
    metric: text("metric"),
    op: text("op", { enum: ["above", "below"] }).notNull().default("above"),
    threshold: real("threshold").notNull(),
    forSeconds: integer("for_seconds").notNull().default(0),
    /** Log rules: substring, level families, the window the count is taken over. */
    query: text("query"),
    level: text("level"),
    windowSeconds: integer("window_seconds").notNull().default(300),
    /** JSON array of channel ids. */
    channels: text("channels").notNull().default("[]"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    state: text("state", { enum: ["ok", "pending", "firing"] }).notNull().default("ok"),
    /** When the condition started to hold (pending/firing), ms. */
    since: integer("since"),
    /** Whether this firing was sent (a silenced one is not, and neither is its resolution). */
    notified: integer("notified", { mode: "boolean" }).notNull().default(false),
    lastValue: real("last_value"),
    lastEvaluatedAt: integer("last_evaluated_at"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("alert_rules_project_name").on(t.projectId, t.name)],
);

export const alertSilences = sqliteTable(
  "alert_silences",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    /** Null: every rule of the project. */
    ruleId: text("rule_id"),
    reason: text("reason").notNull().default(""),
    startsAt: integer("starts_at").notNull(),
    endsAt: integer("ends_at").notNull(),
    createdBy: text("created_by"),
  },
  (t) => [index("alert_silences_project").on(t.projectId, t.endsAt)],
);

export const alertDeliveries = sqliteTable(
  "alert_deliveries",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    channelId: text("channel_id").notNull(),
    ruleId: text("rule_id"),
    /** `alert.firing`, `alert.resolved`, or a notification kind. */
    event: text("event").notNull(),
    /** The message (JSON of what the event says; formatted per channel kind when sent). */
    message: text("message").notNull(),
    state: text("state", { enum: ["pending", "delivered", "failed"] }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    statusCode: integer("status_code"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    deliveredAt: integer("delivered_at"),
    nextAttemptAt: integer("next_attempt_at"),
  },
  (t) => [index("alert_deliveries_project").on(t.projectId, t.id), index("alert_deliveries_channel").on(t.channelId, t.id)],
);

/** Estate settings of outbound channels: one row per key (JSON value). */
export const alertSettings = sqliteTable("alert_settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
