/**
 * Schemas of the device grant routes, named as in the spec. Schemas are the types.
 */
import { t } from "elysia";
import { BodyInt } from "../../core/http-schemas";

const NullableString = t.Union([t.String(), t.Null()]);

export const DeviceAuthorizeBody = t.Object(
  {
    client: t.Optional(t.Union([t.String({ description: "`cli` (default) or `mcp`" }), t.Null()])),
    client_name: t.Optional(t.Union([t.String({ description: "What the client calls itself; untrusted; truncated to 80 characters" }), t.Null()])),
    project: t.Optional(t.Union([t.String({ description: "The project the client would like to be pinned to; the approver decides" }), t.Null()])),
  },
  { description: "Every field is optional; `{}` (or no body) is valid. JSON or form-encoded." },
);
export type DeviceAuthorizeBody = typeof DeviceAuthorizeBody.static;

export const DeviceAuthorizeResponse = t.Object({
  device_code: t.String(),
  expires_in: t.Integer(),
  interval: t.Integer(),
  user_code: t.String({ description: "Display form `XXXX-XXXX`" }),
  verification_uri: t.String(),
  verification_uri_complete: t.String(),
});
export type DeviceAuthorizeResponse = typeof DeviceAuthorizeResponse.static;

export const DevicePollBody = t.Object(
  {
    device_code: t.String(),
    grant_type: t.Optional(t.Union([t.String({ description: "`urn:ietf:params:oauth:grant-type:device_code`; absent is accepted" }), t.Null()])),
  },
  { description: "JSON or form-encoded (RFC 8628 §3.4)." },
);
export type DevicePollBody = typeof DevicePollBody.static;

export const DeviceTokenResponse = t.Object({
  access_token: t.String(),
  expires_in: t.Optional(t.Union([t.Integer(), t.Null()], { description: "Seconds until expiry; null when no expiry was chosen" })),
  operator: t.String({ description: "Who approved it, and therefore who it acts as" }),
  project: t.Optional(t.Union([t.String(), t.Null()], { description: "Pinned slug, or null" })),
  role: t.String(),
  scope: t.String({ description: "Space-separated snapshotted permission keys" }),
  token_type: t.Literal("Bearer"),
});
export type DeviceTokenResponse = typeof DeviceTokenResponse.static;

export const DEVICE_ERRORS = ["authorization_pending", "slow_down", "expired_token", "access_denied", "unsupported_grant_type"] as const;
export type DeviceErrorCode = (typeof DEVICE_ERRORS)[number];

export const DeviceErrorResponse = t.Object({
  error: t.Union([t.Literal("authorization_pending"), t.Literal("slow_down"), t.Literal("expired_token"), t.Literal("access_denied"), t.Literal("unsupported_grant_type")]),
  error_description: t.String({ description: "A sentence for a human" }),
});
export type DeviceErrorResponse = typeof DeviceErrorResponse.static;

export const DeviceRoleOption = t.Object({
  id: t.String({ format: "uuid" }),
  mintable: t.Boolean({ description: "Advisory; approve repeats the real check" }),
  name: t.String(),
  project: t.Optional(NullableString),
});
export type DeviceRoleOption = typeof DeviceRoleOption.static;

export const DeviceGrantResponse = t.Object({
  client: t.String({ description: "`cli` or `mcp`" }),
  client_name: t.String({ description: "Untrusted; empty when the client named nothing" }),
  created_at: t.String(),
  default_project: t.Optional(NullableString),
  default_role_id: t.Optional(t.Union([t.String({ format: "uuid" }), t.Null()], { description: "The approval page preselects it" })),
  expires_at: t.String(),
  ip: t.String(),
  requested_project: t.Optional(NullableString),
  roles: t.Array(t.Ref("DeviceRoleOption")),
  status: t.Union([t.Literal("pending"), t.Literal("approved"), t.Literal("denied"), t.Literal("expired")]),
  user_code: t.String({ description: "Display form" }),
});
export type DeviceGrantResponse = Omit<typeof DeviceGrantResponse.static, "roles"> & { roles: DeviceRoleOption[] };

export const DeviceApproveBody = t.Object({
  expires_in_days: t.Optional(BodyInt({ minimum: 0, maximum: 36500, nullable: true, description: "Omitted = OPS_TOKEN_TTL_DAYS (90); 0 = no expiry" })),
  name: t.Optional(t.Union([t.String({ maxLength: 100 }), t.Null()], { description: "Omitted = 'ops CLI on <client_name>'" })),
  project: t.Optional(t.Union([t.String(), t.Null()], { description: "null = acts wherever the approver may; a slug pins it" })),
  role_id: t.String({ format: "uuid", description: "Required; there is no default role" }),
});
export type DeviceApproveBody = typeof DeviceApproveBody.static;

export const deviceModels = {
  DeviceAuthorizeBody,
  DeviceAuthorizeResponse,
  DevicePollBody,
  DeviceTokenResponse,
  DeviceErrorResponse,
  DeviceRoleOption,
  DeviceGrantResponse,
  DeviceApproveBody,
};
