/**
 * Certificates: one row per host name ops serves HTTPS for, from a domain resource (`tls` not
 * false) or ops's own public host (OPS_TLS=acme, `resource_id` null). The certificate and its key
 * are sealed with the secrets store (`sealed_id`); the row keeps what the status shows and when
 * to act next. Timestamps are integer epoch ms.
 */
import { sqliteTable, text, integer, index } from "drizzle-orm/sqlite-core";

export const certificates = sqliteTable(
  "certificates",
  {
    host: text("host").primaryKey(),
    /** The domain resource the host comes from; null for ops's own host. */
    resourceId: text("resource_id"),
    projectId: text("project_id"),
    /** `acme`: ordered by ops; `uploaded`: TLS_CERT/TLS_KEY of the domain's secret group. */
    source: text("source", { enum: ["acme", "uploaded"] }).notNull(),
    state: text("state", { enum: ["issuing", "valid", "failing"] }).notNull(),
    /** Why the last order failed (null when it did not). */
    reason: text("reason"),
    /** The sealed JSON `{cert, key}` served now, or null before the first certificate. */
    sealedId: text("sealed_id"),
    notBefore: integer("not_before"),
    notAfter: integer("not_after"),
    /** Failed orders in a row (the backoff's step). */
    failures: integer("failures").notNull().default(0),
    /** When the next order is due (null: none, e.g. uploaded). */
    nextAttemptAt: integer("next_attempt_at"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("certificates_due").on(t.nextAttemptAt), index("certificates_resource").on(t.resourceId)],
);
