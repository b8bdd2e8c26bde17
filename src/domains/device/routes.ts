/**
 * Device login routes (RFC 8628). Start and poll are public (the device has no identity yet);
 * lookup, approve and deny are for a signed-in person (`authenticated`: what they may approve is
 * the over-carry rule's business, checked in the service like any mint).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors, NoContent, ErrorBody } from "../../core/http-schemas";
import { deviceModels, DeviceAuthorizeBody } from "./model";
import { startDeviceGrant, pollDeviceGrant, getDeviceGrant, approveDeviceGrant, denyDeviceGrant } from "./service";

const UserCodeParams = t.Object({ user_code: t.String({ maxLength: 32, description: "The user code, `XXXX-XXXX`; case and dashes do not matter" }) });

export function deviceRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/auth/device", tags: ["device login"] })
    .use(authzPlugin(core))
    .model({ ...deviceModels, ErrorBody })
    .post(
      "",
      ({ body, meta, set }) => {
        set.headers["cache-control"] = "no-store";
        return startDeviceGrant(core, body, meta);
      },
      {
        public: true,
        body: t.Optional(DeviceAuthorizeBody),
        detail: { summary: "Start a device login (RFC 8628 §3.1); throttled per address" },
        response: { 200: t.Ref("DeviceAuthorizeResponse"), ...errors(422, 429) },
      },
    )
    .post(
      "/token",
      ({ body, meta, set, status }) => {
        set.headers["cache-control"] = "no-store";
        const out = pollDeviceGrant(core, body, meta);
        return out.ok ? out.body : status(400, out.body);
      },
      {
        public: true,
        body: "DevicePollBody",
        detail: { summary: "Poll for the token (RFC 8628 §3.4); every refusal is 400 DeviceErrorResponse" },
        response: { 200: t.Ref("DeviceTokenResponse"), 400: t.Ref("DeviceErrorResponse") },
      },
    )
    .get("/:user_code", ({ params, auth }) => getDeviceGrant(core, params.user_code, auth), {
      permission: "authenticated",
      params: UserCodeParams,
      detail: { summary: "The login request behind a user code, with the roles the caller could approve it with; throttled per address and per person" },
      response: { 200: t.Ref("DeviceGrantResponse"), ...errors(401, 404, 429) },
    })
    .post(
      "/:user_code/approve",
      ({ params, body, auth, set }) => {
        approveDeviceGrant(core, params.user_code, body, auth);
        set.status = 204;
      },
      {
        permission: "authenticated",
        params: UserCodeParams,
        body: "DeviceApproveBody",
        detail: { summary: "Approve a login request; the token goes only to the polling client; throttled per person" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422, 429) },
      },
    )
    .post(
      "/:user_code/deny",
      ({ params, auth, set }) => {
        denyDeviceGrant(core, params.user_code, auth);
        set.status = 204;
      },
      {
        permission: "authenticated",
        params: UserCodeParams,
        detail: { summary: "Deny a login request; throttled per person" },
        response: { 204: NoContent, ...errors(401, 404, 409, 429) },
      },
    );
}
