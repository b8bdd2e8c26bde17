/**
 * Device grants (RFC 8628): a CLI or MCP client starts one, a person approves or denies it on the
 * console, the client redeems it once for a minted token. Only the device code's SHA-256 digest
 * is stored; the token is minted at redemption (so no token secret is ever kept), from the role
 * snapshot the approver was checked against at approval.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";

export const deviceGrants = sqliteTable(
  "device_grants",
  {
    id: text("id").primaryKey(),
    /** SHA-256 of the `opsd_` device code. */
    deviceDigest: text("device_digest").notNull(),
    /** Normalised user code: 8 letters of BCDFGHJKLMNPQRSTVWXZ, no dash. */
    userCode: text("user_code").notNull(),
    client: text("client", { enum: ["cli", "mcp"] }).notNull(),
    /** What the client calls itself: untrusted, at most 80 characters. */
    clientName: text("client_name").notNull().default(""),
    /** Project slug the client asked for; the approver decides. */
    requestedProject: text("requested_project"),
    ip: text("ip").notNull().default(""),
    userAgent: text("user_agent").notNull().default(""),
    status: text("status", { enum: ["pending", "approved", "denied", "expired"] }).notNull(),
    /** Seconds the client must wait between polls; grows by 5 on every `slow_down`. */
    pollInterval: integer("poll_interval").notNull(),
    lastPolledAt: integer("last_polled_at"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    decidedAt: integer("decided_at"),
    /** The approver (or denier); the token acts as them. */
    decidedBy: text("decided_by"),
    roleId: text("role_id"),
    roleName: text("role_name"),
    /** JSON array: the role's permissions when the approval was checked. */
    scopes: text("scopes"),
    /** Pinned project id chosen by the approver, or null. */
    projectId: text("project_id"),
    tokenName: text("token_name"),
    /** Expiry of the token to mint; null = never. */
    tokenExpiresAt: integer("token_expires_at"),
    redeemedAt: integer("redeemed_at"),
    tokenId: text("token_id"),
  },
  (t) => [
    uniqueIndex("device_grants_device_digest").on(t.deviceDigest),
    index("device_grants_user_code").on(t.userCode),
    index("device_grants_status_expires").on(t.status, t.expiresAt),
  ],
);

export type DeviceGrantRow = typeof deviceGrants.$inferSelect;
