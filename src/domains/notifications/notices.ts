/**
 * Notices: `notify` fans a domain event out to the project's people inside the caller's
 * transaction (one notice per person with in-app on, one outbox row per person with email on);
 * the feed routes list, count and mark them.
 */
import { and, desc, eq, isNull, lt, count } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { iso } from "../../core/clock";
import { uuidv7 } from "../../core/ids";
import { estatePeople, projectPeople } from "../access/service";
import { notices, notificationSettings, mailOutbox } from "./tables";
import { isNotificationKind, DEFAULT_CHANNELS, type EstateNotificationKind, type NotificationKind } from "./kinds";
import type { NotificationResponse } from "./model";
import { forwardNotice } from "./forward";

export const DELIVER_EMAIL = "notifications.deliver-email";

export interface NotifyEvent {
  kind: NotificationKind;
  projectId: string;
  /** Slugs, names of things, numbers: never personal data. Must carry `project` (the slug). */
  params: Record<string, string | number | boolean>;
  /** A relative console path the notice opens. */
  link?: string | null;
}

/**
 * Create the notices and email outbox rows for `event` inside the caller's transaction `t`, so
 * they exist exactly when the event's own change commits. Email rows are made only when
 * `OPS_SMTP_URL` is set; the scheduler delivers them (`notifications.deliver-email`).
 */
export function notify(core: Core, t: Tx, event: NotifyEvent): void {
  if (!isNotificationKind(event.kind)) throw new Error(`unknown notification kind ${event.kind}`);
  const project = core.access.findProjectById(event.projectId);
  if (!project) throw new Error(`notify: no project ${event.projectId}`);
  if (event.params.project !== project.slug) throw new Error(`notify: params.project must be the project's slug (${project.slug})`);
  if (event.link != null && !event.link.startsWith("/")) throw new Error("notify: link must be a relative console path");
  const settings = new Map(
    t
      .select()
      .from(notificationSettings)
      .where(and(eq(notificationSettings.projectId, project.id), eq(notificationSettings.kind, event.kind)))
      .all()
      .map((s) => [s.operatorId, s]),
  );
  const now = core.clock.now();
  const params = JSON.stringify(event.params);
  const link = event.link ?? null;
  for (const operatorId of projectPeople(t, project.id)) {
    const s = settings.get(operatorId);
    const inApp = s?.inApp ?? DEFAULT_CHANNELS.inApp;
    const email = s?.email ?? DEFAULT_CHANNELS.email;
    if (inApp) t.insert(notices).values({ id: uuidv7(now), operatorId, projectId: project.id, project: project.slug, kind: event.kind, params, link, createdAt: now }).run();
    if (email && core.config.smtpUrl !== null) {
      const id = uuidv7(now);
      t.insert(mailOutbox).values({ id, operatorId, project: project.slug, kind: event.kind, params, link, createdAt: now }).run();
      core.scheduler.enqueue(t, DELIVER_EMAIL, { outbox: id }, { dedupeKey: `mail:${id}` });
    }
  }
  forwardNotice(core, t, { kind: event.kind, projectId: project.id, params: event.params, link });
}

/**
 * An estate notice (`backup.failing`) for everyone who may manage the estate, inside `t`: in-app
 * always, by email when OPS_SMTP_URL is set. Its project is empty: no project's settings apply.
 */
export function notifyEstate(core: Core, t: Tx, event: { kind: EstateNotificationKind; params: Record<string, string | number | boolean>; link?: string | null }): number {
  const now = core.clock.now();
  const params = JSON.stringify(event.params);
  const link = event.link ?? null;
  const people = estatePeople(t, "estate.manage");
  for (const operatorId of people) {
    t.insert(notices).values({ id: uuidv7(now), operatorId, projectId: "", project: "", kind: event.kind, params, link, createdAt: now }).run();
    if (core.config.smtpUrl !== null) {
      const id = uuidv7(now);
      t.insert(mailOutbox).values({ id, operatorId, project: "", kind: event.kind, params, link, createdAt: now }).run();
      core.scheduler.enqueue(t, DELIVER_EMAIL, { outbox: id }, { dedupeKey: `mail:${id}` });
    }
  }
  return people.length;
}

/** When the newest estate notice of `kind` was made (ms), or null. */
export function lastEstateNoticeAt(core: Core, kind: EstateNotificationKind): number | null {
  return core.db.select({ at: notices.createdAt }).from(notices).where(and(eq(notices.kind, kind), eq(notices.projectId, ""))).orderBy(desc(notices.createdAt)).limit(1).get()?.at ?? null;
}

function view(n: typeof notices.$inferSelect): NotificationResponse {
  return { id: n.id, kind: n.kind, created_at: iso(n.createdAt), link: n.link, params: JSON.parse(n.params), read: n.readAt !== null };
}

export const NOTICE_LIMIT = { default: 50, max: 200 } as const;

/**
 * Whose notices a caller sees: the operator's, and only the pinned project's when the caller is
 * a pinned token (a pinned token acts in that project and nowhere else).
 */
export interface Reader {
  operatorId: string;
  pinnedProjectId: string | null;
}

function mine(r: Reader) {
  return r.pinnedProjectId === null ? eq(notices.operatorId, r.operatorId) : and(eq(notices.operatorId, r.operatorId), eq(notices.projectId, r.pinnedProjectId))!;
}

/** The reader's notices, newest first; `cursor` is the id of the last notice already seen. */
export function listNotices(core: Core, reader: Reader, q: { unread?: boolean; project?: string; limit?: number; cursor?: string }): { items: NotificationResponse[]; next: string | null } {
  const limit = Math.min(Math.max(1, Math.floor(q.limit ?? NOTICE_LIMIT.default)), NOTICE_LIMIT.max);
  const where = [mine(reader)];
  if (q.unread === true) where.push(isNull(notices.readAt));
  if (q.project !== undefined && q.project !== "") where.push(eq(notices.project, q.project));
  if (q.cursor !== undefined && q.cursor !== "") where.push(lt(notices.id, q.cursor));
  const rows = core.db.select().from(notices).where(and(...where)).orderBy(desc(notices.id)).limit(limit + 1).all();
  const more = rows.length > limit;
  const items = rows.slice(0, limit).map(view);
  return { items, next: more ? items[items.length - 1].id : null };
}

export function unreadCount(core: Core, reader: Reader): number {
  return core.db.select({ n: count() }).from(notices).where(and(mine(reader), isNull(notices.readAt))).get()?.n ?? 0;
}

/** Mark one of the reader's notices read (idempotent); 404 for anyone else's. */
export function markRead(core: Core, reader: Reader, id: string): void {
  const row = core.db.select({ id: notices.id, readAt: notices.readAt }).from(notices).where(and(eq(notices.id, id), mine(reader))).get();
  if (!row) throw new OpsError("not_found", "No such notification.");
  if (row.readAt === null) core.db.update(notices).set({ readAt: core.clock.now() }).where(eq(notices.id, id)).run();
}

/** Mark every notice of the reader read. Idempotent; fine on an empty feed. */
export function markAllRead(core: Core, reader: Reader): number {
  return core.db.update(notices).set({ readAt: core.clock.now() }).where(and(mine(reader), isNull(notices.readAt))).returning({ id: notices.id }).all().length;
}
