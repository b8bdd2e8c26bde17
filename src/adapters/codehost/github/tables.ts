/**
 * The GitHub App host's own rows: the webhook deliveries already received, by GitHub's
 * `X-GitHub-Delivery` id, so a redelivered id is acknowledged without acting twice. Rows older
 * than the retention (longer than GitHub lets anyone redeliver) are pruned as new ones arrive.
 * Timestamps are integer epoch ms.
 */
import { sqliteTable, text, integer, index } from "drizzle-orm/sqlite-core";

export const githubWebhookDeliveries = sqliteTable(
  "github_webhook_deliveries",
  {
    /** `X-GitHub-Delivery` (a GUID). */
    id: text("id").primaryKey(),
    /** `X-GitHub-Event`. */
    event: text("event").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (t) => [index("github_webhook_deliveries_received").on(t.receivedAt)],
);
