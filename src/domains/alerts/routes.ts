/**
 * Alert routes: a project's channels, rules, silences and deliveries (reading needs `obs.read`,
 * changing `project.settings`, both project-level), and the estate's allowed private targets
 * (`estate.manage`).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { errors, NoContent } from "../../core/http-schemas";
import { alertModels, AlertSettingsResponse, DeliveriesQuery } from "./model";
import { createChannel, deleteChannel, listChannels } from "./channels";
import { createRule, createSilence, deleteRule, deleteSilence, listRules, listSilences } from "./rules";
import { listDeliveries } from "./deliveries";
import { allowedPrivateTargets, writeAllowedPrivateTargets } from "./targets";

const READ = { key: "obs.read", environment: "none" } as const;
const WRITE = { key: "project.settings", environment: "none" } as const;
const Slug = t.Object({ slug: t.String() });
const SlugId = t.Object({ slug: t.String(), id: t.String() });

export function alertRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["alerts"] })
    .use(authzPlugin(core))
    .model(alertModels)
    .get("/projects/:slug/alert-channels", ({ auth }) => listChannels(core, auth.project!), {
      permission: READ,
      params: Slug,
      detail: { summary: "The project's outbound channels (webhook, Slack, Discord); URLs show only scheme and host" },
      response: { 200: t.Array(t.Ref("AlertChannelResponse")), ...errors(401, 403, 404) },
    })
    .post("/projects/:slug/alert-channels", async ({ auth, body, status }) => status(201, await createChannel(core, auth, body)), {
      permission: WRITE,
      params: Slug,
      body: "CreateChannelBody",
      detail: { summary: "Add a channel; a private, loopback or link-local target is refused unless the estate allows it. A webhook's signing secret is shown once" },
      response: { 201: t.Composite([alertModels.AlertChannelResponse, t.Object({ signing_secret: t.Union([t.String(), t.Null()]) })]), ...errors(401, 403, 404, 409, 422, 503) },
    })
    .delete(
      "/projects/:slug/alert-channels/:id",
      ({ auth, params, status }) => {
        deleteChannel(core, auth, params.id);
        return status(204, undefined);
      },
      { permission: WRITE, params: SlugId, detail: { summary: "Delete a channel (by id or name)" }, response: { 204: NoContent, ...errors(401, 403, 404) } },
    )
    .get("/projects/:slug/alert-rules", ({ auth }) => listRules(core, auth.project!), {
      permission: READ,
      params: Slug,
      detail: { summary: "The project's alert rules with their state" },
      response: { 200: t.Array(t.Ref("AlertRuleResponse")), ...errors(401, 403, 404) },
    })
    .post("/projects/:slug/alert-rules", ({ auth, body, status }) => status(201, createRule(core, auth, body)), {
      permission: WRITE,
      params: Slug,
      body: "CreateRuleBody",
      detail: { summary: "Add a rule: a metric over or under a threshold for a duration, or a log query matching N times in a window" },
      response: { 201: "AlertRuleResponse", ...errors(401, 403, 404, 409, 422) },
    })
    .delete(
      "/projects/:slug/alert-rules/:id",
      ({ auth, params, status }) => {
        deleteRule(core, auth, params.id);
        return status(204, undefined);
      },
      { permission: WRITE, params: SlugId, detail: { summary: "Delete a rule and its silences" }, response: { 204: NoContent, ...errors(401, 403, 404) } },
    )
    .get("/projects/:slug/alert-silences", ({ auth }) => listSilences(core, auth.project!), {
      permission: READ,
      params: Slug,
      detail: { summary: "The project's silences, active and past" },
      response: { 200: t.Array(t.Ref("AlertSilenceResponse")), ...errors(401, 403, 404) },
    })
    .post("/projects/:slug/alert-silences", ({ auth, body, status }) => status(201, createSilence(core, auth, body)), {
      permission: WRITE,
      params: Slug,
      body: "CreateSilenceBody",
      detail: { summary: "Silence one rule, or every rule of the project, for a while" },
      response: { 201: "AlertSilenceResponse", ...errors(401, 403, 404, 422) },
    })
    .delete(
      "/projects/:slug/alert-silences/:id",
      ({ auth, params, status }) => {
        deleteSilence(core, auth, params.id);
        return status(204, undefined);
      },
      { permission: WRITE, params: SlugId, detail: { summary: "End a silence now" }, response: { 204: NoContent, ...errors(401, 403, 404) } },
    )
    .get("/projects/:slug/alert-deliveries", ({ auth, query }) => listDeliveries(core, auth.project!, query), {
      permission: READ,
      params: Slug,
      query: DeliveriesQuery,
      detail: { summary: "Messages sent to the project's channels, newest first, with their status and last error" },
      response: { 200: t.Array(t.Ref("AlertDeliveryResponse")), ...errors(401, 403, 404, 422) },
    })
    .get("/estate/alert-settings", () => ({ allow_private_targets: allowedPrivateTargets(core) }), {
      permission: "estate.manage",
      detail: { summary: "Private targets alert channels may reach" },
      response: { 200: "AlertSettingsResponse", ...errors(401, 403) },
    })
    .put(
      "/estate/alert-settings",
      ({ auth, body }) =>
        tx(core.db, (q) => {
          const list = writeAllowedPrivateTargets(core, q, body.allow_private_targets);
          auditAllowed(core, q, actorOf(auth.principal, auth.meta), "alerts.settings", "alert-settings");
          return { allow_private_targets: list };
        }),
      {
        permission: "estate.manage",
        body: AlertSettingsResponse,
        detail: { summary: "Replace the private targets (addresses or CIDRs) alert channels may reach" },
        response: { 200: "AlertSettingsResponse", ...errors(401, 403, 422) },
      },
    );
}
