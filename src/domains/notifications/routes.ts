/**
 * The caller's notification feed (self-service) and their per-project settings (members of the
 * project: `project.read`, project-level).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import type { Principal } from "../../core/authz/principal";
import { errors, NoContent } from "../../core/http-schemas";
import { notificationModels, NotificationListQuery } from "./model";
import { listNotices, unreadCount, markRead, markAllRead } from "./notices";
import { getSettings, putSettings } from "./settings";

const reader = (p: Principal) => ({ operatorId: p.operatorId, pinnedProjectId: p.tokenProjectId });

export function notificationRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["notifications"] })
    .use(authzPlugin(core))
    .model(notificationModels)
    .get(
      "/notifications",
      ({ auth, query, set }) => {
        const { items, next } = listNotices(core, reader(auth.principal), query);
        if (next) set.headers["x-next-cursor"] = next;
        return items;
      },
      {
        permission: "authenticated",
        query: NotificationListQuery,
        detail: { summary: "The caller's notices, newest first" },
        response: { 200: t.Array(t.Ref("NotificationResponse")), ...errors(401, 422) },
      },
    )
    .post(
      "/notifications/read-all",
      ({ auth, status }) => {
        markAllRead(core, reader(auth.principal));
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        detail: { summary: "Mark every notice read; idempotent" },
        response: { 204: NoContent, ...errors(401) },
      },
    )
    .get("/notifications/unread-count", ({ auth }) => ({ unread: unreadCount(core, reader(auth.principal)) }), {
      permission: "authenticated",
      detail: { summary: "How many notices are unread (global, never per project)" },
      response: { 200: "UnreadCountResponse", ...errors(401) },
    })
    .post(
      "/notifications/:id/read",
      ({ auth, params, status }) => {
        markRead(core, reader(auth.principal), params.id);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        detail: { summary: "Mark one notice read" },
        response: { 204: NoContent, ...errors(401, 404, 422) },
      },
    )
    .get("/projects/:slug/notification-settings", ({ auth }) => getSettings(core, auth.principal.operatorId, auth.project!.id), {
      permission: { key: "project.read", environment: "none" },
      params: t.Object({ slug: t.String() }),
      detail: { summary: "The caller's channels for each notification kind in the project" },
      response: { 200: t.Array(t.Ref("NotificationSettingResponse")), ...errors(401, 403, 404) },
    })
    .put(
      "/projects/:slug/notification-settings",
      ({ auth, body, status }) => {
        putSettings(core, auth, body.settings);
        return status(204, undefined);
      },
      {
        permission: { key: "project.read", environment: "none" },
        params: t.Object({ slug: t.String() }),
        body: "WriteNotificationSettingsBody",
        detail: { summary: "Replace the caller's settings in the project" },
        response: { 204: NoContent, ...errors(401, 403, 404, 422) },
      },
    );
}
