/** `POST /api/v1/estate/self-update`: the console's update button (estate.manage). */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { errors, ErrorBody } from "../../core/http-schemas";
import { updateServer } from "./service";

const SelfUpdateBody = t.Object({ allow_downgrade: t.Optional(t.Boolean()) }, { additionalProperties: false });
const SelfUpdateResponse = t.Object({
  updated: t.Boolean(),
  version: t.String(),
  from: t.Optional(t.String()),
  sha256: t.Optional(t.String()),
  bytes: t.Optional(t.Integer()),
  reason: t.Optional(t.String()),
  restarting: t.Boolean(),
});

export function applianceRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/estate", tags: ["estate"] })
    .use(authzPlugin(core))
    .model({ SelfUpdateBody, SelfUpdateResponse, ErrorBody })
    .post("/self-update", ({ body, auth }) => updateServer(core, body?.allow_downgrade === true, actorOf(auth.principal, auth.meta)), {
      permission: "estate.manage",
      body: t.Optional(t.Ref("SelfUpdateBody")),
      detail: { summary: "Update the server's binary from OPS_UPDATE_URL (signed release, SHA-256 checked) and restart in place" },
      response: { 200: t.Ref("SelfUpdateResponse"), ...errors(401, 403, 404, 409, 422, 502) },
    });
}
