/**
 * The delivery log and the sender. Each message to a channel is a row of `alert_deliveries`
 * made in the transaction of what caused it, and a scheduler item (`alerts.deliver`) that sends
 * it: a 2xx answer delivers it; anything else (an error status, a refused connection, a timeout,
 * a redirect) is recorded on the row and retried with backoff (30 s, 1 min, 2 min, 4 min) until
 * the fifth attempt fails it for good. A target that has become private is failed at once.
 *
 * Webhooks are signed: `X-Ops-Timestamp` (Unix seconds) and `X-Ops-Signature: sha256=<hex>`, the
 * HMAC-SHA256 with the channel's key over `<timestamp>.<body>`; a receiver checks both and
 * rejects an old timestamp, so a captured request cannot be replayed later.
 */
import { createHmac } from "node:crypto";
import { and, desc, eq, lt } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { uuidv7 } from "../../core/ids";
import { alertChannels, alertDeliveries } from "./tables";
import { formatFor, type AlertMessage } from "./formats";
import { assertReachable, parseChannelUrl } from "./targets";
import { findChannel } from "./channels";
import type { AlertDeliveryResponse } from "./model";

export const DELIVER = "alerts.deliver";
export const DELIVERY_ATTEMPTS = 5;
export const deliveryBackoffMs = (attempt: number) => Math.min(30_000 * 2 ** (attempt - 1), 3_600_000);
const TIMEOUT_MS = 10_000;

/** Record a delivery of `message` to each channel and enqueue its sending, inside `t`. */
export function enqueueDeliveries(core: Core, t: Tx, projectId: string, channelIds: readonly string[], ruleId: string | null, message: AlertMessage): number {
  const now = core.clock.now();
  let n = 0;
  for (const channelId of channelIds) {
    const ch = t.select({ id: alertChannels.id }).from(alertChannels).where(and(eq(alertChannels.id, channelId), eq(alertChannels.projectId, projectId))).get();
    if (!ch) continue;
    const id = uuidv7(now);
    t.insert(alertDeliveries).values({ id, projectId, channelId, ruleId, event: message.event, message: JSON.stringify(message), createdAt: now, nextAttemptAt: now }).run();
    core.scheduler.enqueue(t, DELIVER, { delivery: id }, { dedupeKey: `alert-delivery:${id}` });
    n++;
  }
  return n;
}

/** Sign a webhook body: the value of X-Ops-Signature. */
export function signatureOf(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

async function send(core: Core, payload: unknown, attempt: number): Promise<void> {
  const id = (payload as { delivery?: string })?.delivery;
  if (!id) return;
  const row = core.db.select().from(alertDeliveries).where(eq(alertDeliveries.id, id)).get();
  if (!row || row.state !== "pending") return;
  const record = (set: Partial<typeof alertDeliveries.$inferInsert>) => core.db.update(alertDeliveries).set({ attempts: attempt, ...set }).where(eq(alertDeliveries.id, id)).run();
  const channel = core.db.select().from(alertChannels).where(eq(alertChannels.id, row.channelId)).get();
  if (!channel) {
    record({ state: "failed", lastError: "the channel was deleted", nextAttemptAt: null });
    return;
  }
  let url: URL;
  try {
    url = parseChannelUrl(core.secrets.get(core.db, channel.urlSealedId));
    await assertReachable(core, url);
  } catch (e) {
    // A target that became private (or a sealed store) is no transient failure of the receiver.
    record({ state: "failed", lastError: (e as Error).message.slice(0, 300), nextAttemptAt: null });
    return;
  }
  const body = JSON.stringify(formatFor(channel.kind, JSON.parse(row.message) as AlertMessage));
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "ops-alerts/1", "x-ops-event": row.event, "x-ops-delivery": row.id };
  if (channel.signingSealedId) {
    const timestamp = String(Math.floor(core.clock.now() / 1000));
    headers["x-ops-timestamp"] = timestamp;
    headers["x-ops-signature"] = signatureOf(core.secrets.get(core.db, channel.signingSealedId), timestamp, body);
  }
  let status: number | null = null;
  let error: string;
  try {
    const res = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(TIMEOUT_MS) });
    status = res.status;
    const text = (await res.text().catch(() => "")).slice(0, 200);
    if (res.status >= 200 && res.status < 300) {
      record({ state: "delivered", statusCode: status, lastError: null, deliveredAt: core.clock.now(), nextAttemptAt: null });
      return;
    }
    error = `the receiver answered ${res.status}${text ? `: ${text}` : ""}`;
  } catch (e) {
    error = `could not reach the receiver: ${(e as Error)?.message ?? String(e)}`.slice(0, 300);
  }
  const last = attempt >= DELIVERY_ATTEMPTS;
  record({ state: last ? "failed" : "pending", statusCode: status, lastError: error, nextAttemptAt: last ? null : core.clock.now() + deliveryBackoffMs(attempt) });
  throw new Error(`alert delivery failed: ${error}`);
}

export function defineDeliveryItem(core: Core): void {
  core.scheduler.defineItem(DELIVER, (payload, item) => send(core, payload, item.attempt), { maxAttempts: DELIVERY_ATTEMPTS, backoffMs: deliveryBackoffMs });
}

/** The project's deliveries, newest first; `channel` by id or name (404 when not this project's). */
export function listDeliveries(core: Core, project: ProjectRef, q: { channel?: string; state?: "pending" | "delivered" | "failed"; limit?: number; before?: string }): AlertDeliveryResponse[] {
  const where = [eq(alertDeliveries.projectId, project.id)];
  if (q.channel) where.push(eq(alertDeliveries.channelId, findChannel(core, project.id, q.channel).id));
  if (q.state) where.push(eq(alertDeliveries.state, q.state));
  if (q.before) where.push(lt(alertDeliveries.id, q.before));
  const names = new Map(core.db.select({ id: alertChannels.id, name: alertChannels.name }).from(alertChannels).where(eq(alertChannels.projectId, project.id)).all().map((c) => [c.id, c.name]));
  const limit = Math.min(Math.max(1, Math.floor(q.limit ?? 100)), 500);
  return core.db
    .select()
    .from(alertDeliveries)
    .where(and(...where))
    .orderBy(desc(alertDeliveries.id))
    .limit(limit)
    .all()
    .map((r) => ({
      id: r.id,
      channel_id: r.channelId,
      channel: names.get(r.channelId) ?? "(deleted)",
      rule_id: r.ruleId,
      event: r.event,
      state: r.state,
      attempts: r.attempts,
      status_code: r.statusCode,
      error: r.lastError,
      created_at: iso(r.createdAt),
      delivered_at: r.deliveredAt === null ? null : iso(r.deliveredAt),
      next_attempt_at: r.state === "pending" && r.nextAttemptAt !== null ? iso(r.nextAttemptAt) : null,
    }));
}
