/**
 * Notifications: the in-app notices of each operator, their per-project channel settings, and
 * the email outbox the scheduler delivers. Notices and outbox rows hold no personal data: params
 * are slugs, names of things and numbers; the recipient's address is looked up at send time.
 */
import { sqliteTable, text, integer, index, primaryKey } from "drizzle-orm/sqlite-core";

export const notices = sqliteTable(
  "notices",
  {
    id: text("id").primaryKey(),
    operatorId: text("operator_id").notNull(),
    projectId: text("project_id").notNull(),
    /** The `project` param (a slug), which the list's `project` filter matches. */
    project: text("project").notNull(),
    kind: text("kind").notNull(),
    /** JSON object. */
    params: text("params").notNull(),
    link: text("link"),
    createdAt: integer("created_at").notNull(),
    readAt: integer("read_at"),
  },
  (t) => [index("notices_operator").on(t.operatorId, t.id), index("notices_operator_unread").on(t.operatorId, t.readAt)],
);

export const notificationSettings = sqliteTable(
  "notification_settings",
  {
    operatorId: text("operator_id").notNull(),
    projectId: text("project_id").notNull(),
    kind: text("kind").notNull(),
    inApp: integer("in_app", { mode: "boolean" }).notNull(),
    email: integer("email", { mode: "boolean" }).notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.operatorId, t.projectId, t.kind] }), index("notification_settings_project_kind").on(t.projectId, t.kind)],
);

export const mailOutbox = sqliteTable(
  "mail_outbox",
  {
    id: text("id").primaryKey(),
    operatorId: text("operator_id").notNull(),
    project: text("project").notNull(),
    kind: text("kind").notNull(),
    params: text("params").notNull(),
    link: text("link"),
    state: text("state", { enum: ["pending", "sent", "dropped", "failed"] }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    sentAt: integer("sent_at"),
  },
  (t) => [index("mail_outbox_state").on(t.state, t.createdAt)],
);
