/**
 * Request and response schemas of the secrets domain, under the spec's names.
 */
import { t } from "elysia";
import { ErrorBody } from "../../core/http-schemas";

export const SkippedService = t.Object({ reason: t.String(), service: t.String() });

export const RotateGroupResponse = t.Object({
  reason: t.Optional(t.Union([t.String(), t.Null()])),
  rolled: t.Array(t.String(), { description: "Services restarted onto the new render" }),
  secret: t.Optional(t.Union([t.String(), t.Null()], { description: "Rendered secret name `<name>.env.v<version>`; null when pending" })),
  skipped: t.Array(t.Ref("SkippedService"), { description: "Services left alone and why" }),
  state: t.String({ description: "`rendered`" }),
  version: t.Optional(t.Union([t.Integer(), t.Null()])),
});
export type RotateGroupResponse = {
  reason: string | null;
  rolled: string[];
  secret: string | null;
  skipped: Array<{ reason: string; service: string }>;
  state: string;
  version: number | null;
};

export const VariableResponse = t.Object({
  has_value: t.Boolean({ description: "Store holds a value" }),
  kind: t.String({ description: "`secret` or `text`" }),
  name: t.String(),
  pending: t.Boolean({ description: "Value changed after the newest render" }),
  updated_at: t.Optional(t.Union([t.String(), t.Null()])),
  value: t.Optional(t.Union([t.String(), t.Null()], { description: "null for a secret and when no value is stored; the value for text (callers with secrets.reveal; audited)" })),
  version: t.Integer({ description: "Store version; 0 when no value" }),
});
export type VariableResponse = typeof VariableResponse.static;

export const SetVariableRequest = t.Object({
  kind: t.Optional(t.Union([t.String(), t.Null()], { description: "`secret` (default) or `text`; read only when the variable is new to the group" })),
  value: t.String(),
});

export const RenderedVersion = t.Object({
  actor: t.String(),
  current: t.Boolean({ description: "Version the group's services mount now" }),
  rendered_at: t.String(),
  secret: t.String(),
  version: t.Integer(),
});
export type RenderedVersion = typeof RenderedVersion.static;

export const SecretMetaResponse = t.Object({
  name: t.String(),
  service: t.String(),
  updated_at: t.String(),
  version: t.Integer({ description: "Bumps on each rotation (PUT over an existing name)" }),
});
export type SecretMetaResponse = typeof SecretMetaResponse.static;

export const SetSecretRequest = t.Object({ value: t.String() });

export const SecretsStoreStatus = t.Object({
  sealed: t.Boolean(),
  key_id: t.Union([t.String(), t.Null()], { description: "Id of the master key in use (not secret)" }),
  reason: t.Union([t.String(), t.Null()], { description: "Why the store is sealed" }),
});

export const UnsealRequest = t.Object({ key: t.String({ minLength: 1, maxLength: 200, description: "The master key: 64 hex characters or base64 of 32 bytes" }) });

export const secretsModels = {
  SkippedService,
  RotateGroupResponse,
  VariableResponse,
  SetVariableRequest,
  RenderedVersion,
  SecretMetaResponse,
  SetSecretRequest,
  SecretsStoreStatus,
  UnsealRequest,
  ErrorBody,
};
