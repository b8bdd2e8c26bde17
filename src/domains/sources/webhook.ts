/**
 * `POST /api/v1/host/webhook`: where the code host App delivers its webhooks (DESIGN §3 lists the
 * route; the spec does not). It is `public: true` for the authorization macro because GitHub
 * sends no ops credential: the delivery authenticates itself with `X-Hub-Signature-256`, checked
 * by the host over the exact body bytes, so the body is read raw here (the host's `bodyLimits`
 * marks the path `raw`, keeping the kernel's JSON parser off it). What a delivery does — a push
 * to the push subscribers, once per delivery id — is the host's (codehost/github/webhook.ts).
 *
 * The sources module mounts it beside its routes, on its root Elysia (no prefix: the path here is
 * absolute): `new Elysia({ name: "sources" }).use(sourcesRoutes(core)).use(hostWebhookRoutes(core))`.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { readBodyWithLimit } from "../../core/body";
import { OpsError } from "../../core/errors";
import { errors, ErrorBody } from "../../core/http-schemas";
import { codeHostFor } from "../../adapters/codehost";
import { webhookReceiverOf, WEBHOOK_MAX_BYTES, WEBHOOK_PATH } from "../../adapters/codehost/github";

const RAW_WEBHOOK_BODY = Symbol("webhook raw body");

export const WebhookAckResponse = t.Object({
  delivery: t.String({ description: "The X-GitHub-Delivery id" }),
  event: t.String({ description: "The X-GitHub-Event name" }),
  duplicate: t.Boolean({ description: "The id was received before: acknowledged, nothing done again" }),
  handled: t.Boolean({ description: "ops acted on the delivery (a push, an installation change); other events are acknowledged only" }),
});

export function hostWebhookRoutes(core: Core) {
  return new Elysia({ name: "sources-webhook", tags: ["sources"] })
    .use(authzPlugin(core))
    .model({ ErrorBody })
    .post(
      WEBHOOK_PATH,
      async ({ request }) => {
        const receiver = webhookReceiverOf(codeHostFor(core));
        if (!receiver) throw new OpsError("not_found", "This server's code host takes no webhooks: pushes to the built-in git host arrive over /git/.");
        if (request.bodyUsed) throw new OpsError("bad_request", "The delivery's body was consumed before its signature could be checked.");
        const body = await readBodyWithLimit(request, WEBHOOK_MAX_BYTES);
        const h = request.headers;
        return receiver.receive({
          id: h.get("x-github-delivery"),
          event: h.get("x-github-event"),
          signature: h.get("x-hub-signature-256"),
          contentType: h.get("content-type"),
          body,
        });
      },
      {
        public: true,
        // The signature covers the exact bytes: nothing may parse the body before the handler reads it.
        parse: () => RAW_WEBHOOK_BODY,
        detail: {
          summary: "Receive a code host App webhook delivery (X-Hub-Signature-256 over the raw body; a redelivered X-GitHub-Delivery id is acknowledged without acting twice)",
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: { type: "object", description: "GitHub's webhook payload (push, ping, installation, …)" } },
              "application/x-www-form-urlencoded": { schema: { type: "object", properties: { payload: { type: "string" } } } },
            },
          },
          parameters: [
            { in: "header", name: "X-Hub-Signature-256", required: true, schema: { type: "string" }, description: "sha256=<HMAC-SHA256 of the body under the webhook secret, hex>" },
            { in: "header", name: "X-GitHub-Delivery", required: true, schema: { type: "string" }, description: "The delivery's id" },
            { in: "header", name: "X-GitHub-Event", required: true, schema: { type: "string" }, description: "The event: push, ping, installation, …" },
          ],
        },
        response: { 200: WebhookAckResponse, ...errors(400, 401, 404, 413, 503) },
      },
    );
}
