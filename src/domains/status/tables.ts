/**
 * Status components and their transitions. A component has one state at a time; every change is
 * a stored transition, and incidents are folded from the transitions when the status is read.
 */
import { sqliteTable, text, integer, index } from "drizzle-orm/sqlite-core";

export const statusComponents = sqliteTable("status_components", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  state: text("state", { enum: ["operational", "degraded", "down"] }).notNull(),
  /** When the current state began. */
  since: integer("since").notNull(),
  /** The platform's own components (api, database, …) cannot be removed. */
  platform: integer("platform", { mode: "boolean" }).notNull().default(false),
  position: integer("position").notNull().default(0),
  createdAt: integer("created_at").notNull(),
});

export const statusTransitions = sqliteTable(
  "status_transitions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    component: text("component")
      .notNull()
      .references(() => statusComponents.slug, { onDelete: "cascade" }),
    fromState: text("from_state").notNull(),
    toState: text("to_state").notNull(),
    at: integer("at").notNull(),
    /** Why, for operators; never shown on the public status. */
    reason: text("reason").notNull().default(""),
    /** `probe`, `manual` or the reporting domain's name. */
    source: text("source").notNull().default("probe"),
  },
  (t) => [index("status_transitions_component_at").on(t.component, t.at), index("status_transitions_at").on(t.at)],
);

export type StatusComponentRow = typeof statusComponents.$inferSelect;
export type StatusTransitionRow = typeof statusTransitions.$inferSelect;
