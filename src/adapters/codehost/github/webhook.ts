/**
 * The GitHub App's webhook deliveries (the route is `POST /api/v1/host/webhook`, in
 * src/domains/sources/webhook.ts). A delivery is believed only when `X-Hub-Signature-256` is the
 * HMAC-SHA256 of the exact body bytes under the webhook secret (compared in constant time); it is
 * acted on once: its `X-GitHub-Delivery` id is recorded in the same transaction as its audit row,
 * and a delivery whose id is already recorded (GitHub's "Redeliver", or a replay) is acknowledged
 * without acting again. Ids are kept for `RETENTION_MS`, past GitHub's redelivery window.
 *
 * What a delivery does:
 * - `push`: one `HostPush` (repository, installation, ref, before, after, the sender's login) to
 *   the host's push subscribers, audited as actor `host-app` via `system` (DESIGN §3);
 * - `installation`, `installation_repositories`: the cached list of installations is dropped, so
 *   a new or removed installation counts at once (audited the same way);
 * - `ping` (sent when the webhook is set up) and any other event: acknowledged, nothing done.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { lt } from "drizzle-orm";
import type { Core } from "../../../core/core";
import { writeAudit } from "../../../core/audit";
import { tx } from "../../../core/db/client";
import { OpsError } from "../../../core/errors";
import type { PushSubscribers } from "../push";
import type { CodeHost, HostPush } from "../types";
import { githubWebhookDeliveries } from "./tables";

/** How long delivery ids are remembered (GitHub redelivers from the last 3 days). */
export const RETENTION_MS = 14 * 24 * 3_600_000;
/** The audit actor of what the code host triggers. */
export const HOST_APP_ACTOR = { actor: "host-app", operatorId: null, via: "system", ip: "" } as const;

/** One delivery as it arrived: the headers that matter and the exact body bytes. */
export interface WebhookDelivery {
  id: string | null;
  event: string | null;
  signature: string | null;
  contentType: string | null;
  body: Uint8Array;
}

/** What the route answers. */
export interface WebhookAck {
  delivery: string;
  event: string;
  /** True when this id was received before: nothing was done this time. */
  duplicate: boolean;
  /** True when ops acted on the delivery (a push, an installation change). */
  handled: boolean;
}

export interface WebhookReceiver {
  receive(delivery: WebhookDelivery): Promise<WebhookAck>;
}

const DELIVERY_RE = /^[A-Za-z0-9-]{1,100}$/;
const EVENT_RE = /^[a-z_]{1,64}$/;
const SHA_RE = /^[0-9a-f]{40}$/;
const RECEIVER = Symbol.for("ops.codehost.webhooks");

/** The webhook receiver of a host, or null when the host takes no webhooks (the built-in host). */
export function webhookReceiverOf(host: CodeHost): WebhookReceiver | null {
  return ((host as unknown as Record<symbol, WebhookReceiver | undefined>)[RECEIVER] ?? null) as WebhookReceiver | null;
}

/** Give `host` its receiver (for `webhookReceiverOf`). */
export function attachWebhookReceiver<T extends CodeHost>(host: T, receiver: WebhookReceiver): T {
  Object.defineProperty(host, RECEIVER, { value: receiver, enumerable: false });
  return host;
}

/** True when `signature` (`sha256=<hex>`) is the HMAC-SHA256 of `body` under `secret`. */
export function signatureMatches(secret: string, body: Uint8Array, signature: string | null): boolean {
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(signature?.trim() ?? "");
  if (!m) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(m[1]!, "hex"));
}

/** The JSON payload, sent as `application/json` or as the `payload` field of a form. */
function parsePayload(contentType: string | null, body: Uint8Array): Record<string, unknown> {
  let text = Buffer.from(body).toString("utf8");
  if ((contentType ?? "").startsWith("application/x-www-form-urlencoded")) text = new URLSearchParams(text).get("payload") ?? "";
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new OpsError("malformed_json", "The delivery's payload is not valid JSON.");
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) throw new OpsError("bad_request", "The delivery's payload is not a JSON object.");
  return data as Record<string, unknown>;
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The push a `push` payload reports; 400 when it lacks what a push must say. */
function pushOf(p: Record<string, unknown>, at: number): HostPush {
  const repo = str(obj(p.repository).full_name);
  const ref = str(p.ref);
  const before = str(p.before);
  const after = str(p.after);
  if (!repo || !/^[^/\s]+\/[^/\s]+$/.test(repo) || !ref?.startsWith("refs/") || !before || !SHA_RE.test(before) || !after || !SHA_RE.test(after)) {
    throw new OpsError("bad_request", "The push delivery lacks repository.full_name, ref, before or after.");
  }
  const installation = obj(p.installation).id;
  const pusher = str(obj(p.sender).login) ?? str(obj(p.pusher).name) ?? "";
  return { repo, installationId: typeof installation === "number" && Number.isSafeInteger(installation) ? installation : 0, ref, before, after, pusher, at };
}

export interface ReceiverDeps {
  /** The webhook secret, or null when the App is not configured (every delivery is then 503). */
  secret: string | null;
  pushes: PushSubscribers;
  /** Called when the App's installations changed. */
  installationsChanged(): void;
}

/** The receiver of a Core's GitHub App host. */
export function createWebhookReceiver(core: Core, deps: ReceiverDeps): WebhookReceiver {
  /** Record the id (and the audit row of what it does) in one transaction; false when the id was seen. */
  const record = (id: string, event: string, audit: { target: string; context: Record<string, string | number> } | null): boolean =>
    tx(core.db, (t) => {
      const now = core.clock.now();
      t.delete(githubWebhookDeliveries).where(lt(githubWebhookDeliveries.receivedAt, now - RETENTION_MS)).run();
      const inserted = t.insert(githubWebhookDeliveries).values({ id, event, receivedAt: now }).onConflictDoNothing().returning({ id: githubWebhookDeliveries.id }).all();
      if (inserted.length === 0) return false;
      if (audit) writeAudit(core, t, { ...HOST_APP_ACTOR, action: "host.webhook", target: audit.target, outcome: "allowed", context: { delivery: id, event, ...audit.context } });
      return true;
    });

  return {
    async receive(d) {
      if (deps.secret === null) throw new OpsError("unavailable", "The code host App is not configured on this server: webhook deliveries cannot be verified.");
      if (!signatureMatches(deps.secret, d.body, d.signature)) {
        throw new OpsError("unauthorized", "The delivery's X-Hub-Signature-256 does not match its body under the webhook secret.");
      }
      if (!d.id || !DELIVERY_RE.test(d.id)) throw new OpsError("bad_request", "The delivery has no valid X-GitHub-Delivery id.");
      if (!d.event || !EVENT_RE.test(d.event)) throw new OpsError("bad_request", "The delivery has no valid X-GitHub-Event.");
      const payload = parsePayload(d.contentType, d.body);
      const ack = (duplicate: boolean, handled: boolean): WebhookAck => ({ delivery: d.id!, event: d.event!, duplicate, handled });

      switch (d.event) {
        case "push": {
          const push = pushOf(payload, core.clock.now());
          if (!record(d.id, d.event, { target: `repo:${push.repo}`, context: { ref: push.ref, after: push.after } })) return ack(true, false);
          await deps.pushes.deliver(push);
          return ack(false, true);
        }
        case "installation":
        case "installation_repositories": {
          const inst = obj(payload.installation);
          const target = typeof inst.id === "number" ? `installation:${inst.id}` : "installation";
          const action = str(payload.action) ?? "";
          if (!record(d.id, d.event, { target, context: { action, account: str(obj(inst.account).login) ?? "" } })) return ack(true, false);
          deps.installationsChanged();
          return ack(false, true);
        }
        default:
          return ack(!record(d.id, d.event, null), false);
      }
    },
  };
}
