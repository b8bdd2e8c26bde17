/**
 * Status routes: the public document (no credential, shallow) and the admin routes for
 * components and transitions (`estate.manage`). The path parameter is `component`, not `slug`:
 * `slug` names a project to the authorization macro.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { errors, NoContent, ErrorBody } from "../../core/http-schemas";
import { statusModels } from "./model";
import { addComponent, checkSchedulerHeartbeat, listComponents, cachedPublicStatus, recordTransition, removeComponent, toComponentResponse, toTransitionResponse } from "./service";

const ComponentParams = t.Object({ component: t.String({ maxLength: 64 }) });

export function statusRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/status", tags: ["status"] })
    .use(authzPlugin(core))
    .model({ ...statusModels, ErrorBody })
    .get(
      "/public",
      ({ set }) => {
        checkSchedulerHeartbeat(core);
        set.headers["cache-control"] = "public, max-age=15";
        return cachedPublicStatus(core);
      },
      {
        public: true,
        detail: { summary: "The public status: component states, the worst of them, incidents of about the last 30 days" },
        response: { 200: t.Ref("PublicStatusResponse") },
      },
    )
    .get("/components", () => listComponents(core.db).map(toComponentResponse), {
      permission: "estate.manage",
      detail: { summary: "Status components with their current state" },
      response: { 200: t.Array(t.Ref("StatusComponentResponse")), ...errors(401, 403) },
    })
    .post(
      "/components",
      ({ body, auth, set }) => {
        const row = addComponent(core, body, actorOf(auth.principal, auth.meta));
        set.status = 201;
        return toComponentResponse(row);
      },
      {
        permission: "estate.manage",
        body: "WriteStatusComponentBody",
        detail: { summary: "Add a status component" },
        response: { 201: t.Ref("StatusComponentResponse"), ...errors(401, 403, 409, 422) },
      },
    )
    .delete(
      "/components/:component",
      ({ params, auth, set }) => {
        removeComponent(core, params.component, actorOf(auth.principal, auth.meta));
        set.status = 204;
      },
      {
        permission: "estate.manage",
        params: ComponentParams,
        detail: { summary: "Remove a status component and its history (not a platform component)" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409) },
      },
    )
    .post(
      "/components/:component/transitions",
      ({ params, body, auth, set }) => {
        const tr = recordTransition(core, params.component, body.state, body.reason ?? "", actorOf(auth.principal, auth.meta));
        set.status = 201;
        return toTransitionResponse(tr);
      },
      {
        permission: "estate.manage",
        params: ComponentParams,
        body: "WriteStatusTransitionBody",
        detail: { summary: "Record a state change of a component by hand" },
        response: { 201: t.Ref("StatusTransitionResponse"), ...errors(401, 403, 404, 409, 422) },
      },
    );
}
