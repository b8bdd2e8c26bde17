/** Schemas of the notifications domain (the spec's names). */
import { t } from "elysia";
import { ErrorBody, IntParam } from "../../core/http-schemas";

export const NotificationResponse = t.Object({
  id: t.String({ format: "uuid" }),
  kind: t.String({ description: "One of the notification kinds" }),
  created_at: t.String(),
  link: t.Optional(t.Union([t.String(), t.Null()], { description: "A relative console path the notice opens" })),
  params: t.Any({ description: "Free of personal data: slugs, names of things, numbers; always holds `project`" }),
  read: t.Boolean(),
});
export type NotificationResponse = typeof NotificationResponse.static;

export const UnreadCountResponse = t.Object({ unread: t.Integer({ description: "Global, never per project" }) });

export const NotificationSettingResponse = t.Object({
  kind: t.String(),
  in_app: t.Boolean(),
  email: t.Boolean(),
  label: t.Optional(t.String({ description: "Set by the API; ignored on input" })),
});
export type NotificationSettingResponse = typeof NotificationSettingResponse.static;

export const WriteNotificationSettingsBody = t.Object({
  settings: t.Array(NotificationSettingResponse, { maxItems: 50 }),
});
export type WriteNotificationSettingsBody = typeof WriteNotificationSettingsBody.static;

export const NotificationListQuery = t.Object({
  unread: t.Optional(t.BooleanString({ description: "true = only unread notices" })),
  project: t.Optional(t.String({ description: "Project slug, matched against the notice's project param" })),
  limit: t.Optional(IntParam({ minimum: 1, description: "Default 50, at most 200 (larger values are capped)" })),
  cursor: t.Optional(t.String({ description: "The id of the last notice of the previous page (also sent as the x-next-cursor header)" })),
});

export const notificationModels = { NotificationResponse, UnreadCountResponse, NotificationSettingResponse, WriteNotificationSettingsBody, ErrorBody };
