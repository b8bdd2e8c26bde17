/**
 * Per-project channel settings of one operator: one entry per kind, defaults in-app on and email
 * off. PUT replaces the whole set (kinds left out go back to the defaults).
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { notificationSettings } from "./tables";
import { NOTIFICATION_KINDS, DEFAULT_CHANNELS, isNotificationKind } from "./kinds";
import type { NotificationSettingResponse } from "./model";

export function getSettings(core: Core, operatorId: string, projectId: string): NotificationSettingResponse[] {
  const rows = new Map(
    core.db
      .select()
      .from(notificationSettings)
      .where(and(eq(notificationSettings.operatorId, operatorId), eq(notificationSettings.projectId, projectId)))
      .all()
      .map((r) => [r.kind, r]),
  );
  return NOTIFICATION_KINDS.map(({ kind, label }) => {
    const r = rows.get(kind);
    return { kind, label, in_app: r?.inApp ?? DEFAULT_CHANNELS.inApp, email: r?.email ?? DEFAULT_CHANNELS.email };
  });
}

/** Replace the caller's settings in the project. 422 for an unknown or repeated kind. */
export function putSettings(core: Core, auth: AuthContext, settings: NotificationSettingResponse[]): void {
  const project = auth.project!;
  const seen = new Set<string>();
  for (const s of settings) {
    if (!isNotificationKind(s.kind)) throw new OpsError("refused", `Unknown notification kind "${s.kind}".`, { kind: s.kind, kinds: NOTIFICATION_KINDS.map((k) => k.kind) });
    if (seen.has(s.kind)) throw new OpsError("refused", `Notification kind "${s.kind}" is listed twice.`, { kind: s.kind });
    seen.add(s.kind);
  }
  const operatorId = auth.principal.operatorId;
  const now = core.clock.now();
  tx(core.db, (t) => {
    t.delete(notificationSettings).where(and(eq(notificationSettings.operatorId, operatorId), eq(notificationSettings.projectId, project.id))).run();
    for (const s of settings) {
      t.insert(notificationSettings).values({ operatorId, projectId: project.id, kind: s.kind, inApp: s.in_app, email: s.email, updatedAt: now }).run();
    }
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "notifications.settings", `notification-settings:${operatorId}`, { project: project.slug });
  });
}
