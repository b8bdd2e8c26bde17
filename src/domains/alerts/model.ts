/** Schemas of the alerts domain: channels, rules, silences, deliveries and the estate setting. */
import { t } from "elysia";
import { BodyInt, ErrorBody, IntParam } from "../../core/http-schemas";

const nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T, description?: string) => t.Optional(t.Union([s, t.Null()], description ? { description } : {}));
const ChannelKind = t.Union([t.Literal("webhook"), t.Literal("slack"), t.Literal("discord")], { description: "webhook (signed JSON), slack (incoming webhook), discord (webhook)" });

export const CreateChannelBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 64, pattern: "^[a-z0-9][a-z0-9-]*$", description: "Lower-case letters, digits and hyphens" }),
  kind: ChannelKind,
  url: t.String({ minLength: 8, maxLength: 2048, description: "http(s) URL; never returned, stored sealed" }),
  notice_kinds: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: 20, description: "Notification kinds (build.failed, probe.down …) this channel also receives" })),
});
export type CreateChannelBody = typeof CreateChannelBody.static;

export const AlertChannelResponse = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  kind: t.String(),
  url_hint: t.String({ description: "Scheme and host of the URL; the rest is a credential and never shown" }),
  notice_kinds: t.Array(t.String()),
  signed: t.Boolean({ description: "Webhooks carry X-Ops-Signature (HMAC-SHA256 over timestamp + '.' + body) and X-Ops-Timestamp" }),
  created_at: t.String(),
});
export type AlertChannelResponse = typeof AlertChannelResponse.static;

export const CreatedChannelResponse = t.Composite([
  AlertChannelResponse,
  t.Object({ signing_secret: nullable(t.String(), "Webhooks: the HMAC key, shown this once") }),
]);

const RuleFields = {
  name: t.String({ minLength: 1, maxLength: 64 }),
  kind: t.Union([t.Literal("metric"), t.Literal("log")]),
  environment: nullable(t.String({ maxLength: 64 }), "Only this environment; absent = every one"),
  service: nullable(t.String({ maxLength: 128 }), "Only this service; absent = the worst of every service"),
  metric: nullable(t.String({ maxLength: 256 }), "Metric rules: the metric's name"),
  op: t.Optional(t.Union([t.Literal("above"), t.Literal("below")], { description: "Default above" })),
  threshold: t.Number({ description: "Metric: the value (a counter's per-second rate); log: the count of matching lines" }),
  for_seconds: t.Optional(BodyInt({ minimum: 0, maximum: 86_400, description: "Metric rules: how long the condition must hold before firing (default 0)" })),
  query: nullable(t.String({ maxLength: 512 }), "Log rules: case-insensitive substring of the message or target"),
  level: nullable(t.String({ maxLength: 64 }), "Log rules: level families, comma-separated"),
  window_seconds: t.Optional(BodyInt({ minimum: 60, maximum: 86_400, description: "Log rules: the window the count is taken over (default 300)" })),
  channels: t.Array(t.String({ format: "uuid" }), { maxItems: 20, description: "Channel ids of this project" }),
  enabled: t.Optional(t.Boolean()),
};

export const CreateRuleBody = t.Object(RuleFields);
export type CreateRuleBody = typeof CreateRuleBody.static;

export const AlertRuleResponse = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  kind: t.String(),
  environment: t.Union([t.String(), t.Null()]),
  service: t.Union([t.String(), t.Null()]),
  metric: t.Union([t.String(), t.Null()]),
  op: t.String(),
  threshold: t.Number(),
  for_seconds: t.Integer(),
  query: t.Union([t.String(), t.Null()]),
  level: t.Union([t.String(), t.Null()]),
  window_seconds: t.Integer(),
  channels: t.Array(t.String()),
  enabled: t.Boolean(),
  state: t.String({ description: "ok, pending (the condition holds, not yet for long enough) or firing" }),
  since: t.Union([t.String(), t.Null()]),
  last_value: t.Union([t.Number(), t.Null()]),
  last_evaluated_at: t.Union([t.String(), t.Null()]),
  silenced_until: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
});
export type AlertRuleResponse = typeof AlertRuleResponse.static;

export const CreateSilenceBody = t.Object({
  rule_id: nullable(t.String({ format: "uuid" }), "Absent or null: every rule of the project"),
  minutes: BodyInt({ minimum: 1, maximum: 43_200, description: "How long, from now (at most 30 days)" }),
  reason: t.Optional(t.String({ maxLength: 256 })),
});
export type CreateSilenceBody = typeof CreateSilenceBody.static;

export const AlertSilenceResponse = t.Object({
  id: t.String({ format: "uuid" }),
  rule_id: t.Union([t.String(), t.Null()]),
  reason: t.String(),
  starts_at: t.String(),
  ends_at: t.String(),
  active: t.Boolean(),
});
export type AlertSilenceResponse = typeof AlertSilenceResponse.static;

export const AlertDeliveryResponse = t.Object({
  id: t.String({ format: "uuid" }),
  channel_id: t.String(),
  channel: t.String({ description: "The channel's name" }),
  rule_id: t.Union([t.String(), t.Null()]),
  event: t.String({ description: "alert.firing, alert.resolved, alert.test, or a notification kind" }),
  state: t.String({ description: "pending (retries left), delivered or failed" }),
  attempts: t.Integer(),
  status_code: t.Union([t.Integer(), t.Null()], { description: "The receiver's last HTTP status" }),
  error: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
  delivered_at: t.Union([t.String(), t.Null()]),
  next_attempt_at: t.Union([t.String(), t.Null()]),
});
export type AlertDeliveryResponse = typeof AlertDeliveryResponse.static;

export const DeliveriesQuery = t.Object({
  channel: t.Optional(t.String({ description: "Only this channel (id or name)" })),
  state: t.Optional(t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")])),
  limit: t.Optional(IntParam({ minimum: 1, maximum: 500, description: "Default 100" })),
});

export const AlertSettingsResponse = t.Object({
  allow_private_targets: t.Array(t.String(), { maxItems: 50, description: "Addresses or CIDRs (127.0.0.1, 10.0.0.0/8) channels may reach although private, loopback or link-local" }),
});
export type AlertSettingsResponse = typeof AlertSettingsResponse.static;

export const alertModels = { AlertChannelResponse, AlertRuleResponse, AlertSilenceResponse, AlertDeliveryResponse, AlertSettingsResponse, CreateChannelBody, CreateRuleBody, CreateSilenceBody, ErrorBody };
