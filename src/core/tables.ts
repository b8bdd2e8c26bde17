/**
 * The kernel's own tables in ops.db: the audit log, the scheduler's persistent work, and the
 * secrets store's sealed values. Domain tables live in `src/domains/<name>/tables.ts`.
 * Timestamps are integer epoch milliseconds.
 */
import { sqliteTable, text, integer, blob, index, uniqueIndex } from "drizzle-orm/sqlite-core";

/** One row per audited decision (see DESIGN.md §3 Audit). Never updated, never deleted. */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    at: integer("at").notNull(),
    actor: text("actor").notNull(),
    operatorId: text("operator_id"),
    via: text("via").notNull(),
    ip: text("ip").notNull().default(""),
    action: text("action").notNull(),
    target: text("target").notNull().default(""),
    outcome: text("outcome", { enum: ["allowed", "denied"] }).notNull(),
    reason: text("reason").notNull().default(""),
    project: text("project"),
    environment: text("environment"),
    /** JSON: ids that explain the row (token id, request id …). Never a secret. */
    context: text("context"),
  },
  (t) => [
    index("audit_log_project_id").on(t.project, t.id),
    index("audit_log_actor").on(t.actor),
    index("audit_log_at").on(t.at),
  ],
);

/**
 * One-off work items. A worker leases an item (`leased_until`) before running it; an item whose
 * lease ran out while `running` belonged to a process that died and is picked up again.
 */
export const schedulerItems = sqliteTable(
  "scheduler_items",
  {
    id: text("id").primaryKey(),
    kind: text("kind").notNull(),
    payload: text("payload").notNull().default("{}"),
    state: text("state", { enum: ["pending", "running", "done", "failed"] }).notNull().default("pending"),
    runAt: integer("run_at").notNull(),
    leasedUntil: integer("leased_until"),
    attempts: integer("attempts").notNull().default(0),
    maxAttempts: integer("max_attempts").notNull().default(5),
    lastError: text("last_error"),
    dedupeKey: text("dedupe_key"),
    /** Enqueued again (same dedupe key) while running: back to pending when this run ends. */
    rerun: integer("rerun").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (t) => [index("scheduler_items_due").on(t.state, t.runAt), uniqueIndex("scheduler_items_dedupe").on(t.dedupeKey)],
);

/** Recurring tasks by cron expression; the row keeps the next due time and the lease. */
export const schedulerTasks = sqliteTable("scheduler_tasks", {
  id: text("id").primaryKey(),
  cron: text("cron").notNull(),
  nextRunAt: integer("next_run_at").notNull(),
  lastRunAt: integer("last_run_at"),
  lastStatus: text("last_status"),
  lastError: text("last_error"),
  leasedUntil: integer("leased_until"),
});

/**
 * Master keys the secrets store has used. `verifier` is a known plaintext sealed with the key,
 * so a wrong key is detected (the store stays sealed) instead of producing garbage.
 */
export const secretsKeyring = sqliteTable("secrets_keyring", {
  id: text("id").primaryKey(),
  verifier: blob("verifier", { mode: "buffer" }).notNull(),
  createdAt: integer("created_at").notNull(),
  retiredAt: integer("retired_at"),
});

/**
 * Envelope-encrypted values. Each value has its own data key (DEK), itself encrypted with the
 * master key (`key_id`). Rotating the master key rewraps the DEKs here and touches nothing else;
 * domains keep only the id of their sealed value.
 */
export const sealedValues = sqliteTable("sealed_values", {
  id: text("id").primaryKey(),
  keyId: text("key_id").notNull(),
  wrappedDek: blob("wrapped_dek", { mode: "buffer" }).notNull(),
  ciphertext: blob("ciphertext", { mode: "buffer" }).notNull(),
  /** What the value is for (e.g. `mfa:<operator>`); bound into the encryption as associated data. */
  purpose: text("purpose").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
