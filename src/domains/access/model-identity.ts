/**
 * Schemas of sign-in, identity, MFA, sessions and operators (the spec's names where it has them;
 * DESIGN.md §3 routes otherwise).
 */
import { t } from "elysia";

const Uuid = t.String({ format: "uuid" });
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()]);

export const SessionResponse = t.Object({
  id: Uuid,
  kind: t.Union([t.Literal("console"), t.Literal("cli")]),
  created_at: t.String(),
  expires_at: t.String({ description: "When the session stops working if unused: the earlier of its absolute expiry and its idle limit" }),
  ip: t.String(),
  user_agent: t.String(),
  current: t.Boolean({ description: "True for the session the request arrived on" }),
});
export type SessionResponse = typeof SessionResponse.static;

export const LoginBody = t.Object({
  email: t.String({ maxLength: 254 }),
  password: t.String({ maxLength: 1024 }),
  code: t.Optional(Nullable(t.String({ maxLength: 16, description: "TOTP code, once MFA is in force" }))),
  client: t.Optional(Nullable(t.Union([t.Literal("console"), t.Literal("cli")], { description: "console (default): also sets the ops_session cookie; cli: a 30-day session, no cookie" }))),
});
export type LoginBody = typeof LoginBody.static;

export const LoginResponse = t.Object({
  token: t.String({ description: "The session bearer (opss_…); shown once" }),
  session: SessionResponse,
});

export const ChangePasswordBody = t.Object({
  current_password: t.String({ maxLength: 1024 }),
  new_password: t.String({ maxLength: 1024, description: "At least 12 characters" }),
});
export type ChangePasswordBody = typeof ChangePasswordBody.static;

export const MeMembership = t.Object({
  project: t.Optional(Nullable(t.String())),
  role_id: Uuid,
  role_slug: t.String(),
  role_name: t.String(),
  fixed: t.Boolean(),
  permissions: t.Array(t.String()),
});

export const MePolicy = t.Object({
  project: t.String(),
  environment: t.String(),
  role_id: Uuid,
  allowed: t.Array(t.String()),
});

export const MeResponse = t.Object({
  operator_id: Uuid,
  actor: t.String({ description: "The audit actor string: the operator's email, or api-token" }),
  display_name: t.String(),
  kind: t.Union([t.Literal("person"), t.Literal("machine")]),
  machine: t.Boolean(),
  suspended: t.Boolean(),
  mfa: t.Boolean({ description: "True when a TOTP authenticator is enrolled" }),
  via: t.Union([t.Literal("console"), t.Literal("token"), t.Literal("api-token")]),
  memberships: t.Array(MeMembership),
  policies: t.Array(MePolicy, { description: "Environment rules that apply" }),
  token_id: t.Optional(Nullable(Uuid)),
  token_project: t.Optional(Nullable(t.String({ description: "A value means the token acts in that project and nowhere else" }))),
  token_scopes: t.Optional(Nullable(t.Array(t.String()), )),
});
export type MeResponse = typeof MeResponse.static;

export const MfaConfirmBody = t.Object({ code: t.String({ maxLength: 16 }) });
/** Not in the spec's DELETE /me/mfa (no body): ops takes the current code here (decision 0543). */
export const MfaDeleteBody = t.Object({ code: t.Optional(t.String({ maxLength: 16, description: "The current TOTP code; needed unless this session signed in within the last 10 minutes" })) });
export const MfaEnrolResponse = t.Object({
  secret: t.String({ description: "Base32, for manual entry; returned once and never again" }),
  uri: t.String({ description: "The otpauth:// URI an authenticator app scans" }),
});

export const SessionIdParams = t.Object({ session_id: Uuid });

export const OperatorResponse = t.Object({
  id: Uuid,
  kind: t.Union([t.Literal("person"), t.Literal("machine")]),
  name: t.String({ description: "Email for a person, handle for a machine" }),
  email: Nullable(t.String()),
  handle: Nullable(t.String()),
  display_name: t.String(),
  suspended: t.Boolean(),
  mfa: t.Boolean(),
  estate_role_id: Nullable(Uuid),
  created_at: t.String(),
});
export type OperatorResponse = typeof OperatorResponse.static;

export const CreateOperatorBody = t.Object({
  kind: t.Union([t.Literal("person"), t.Literal("machine")]),
  email: t.Optional(t.String({ maxLength: 254, description: "People only" })),
  handle: t.Optional(t.String({ maxLength: 63, description: "Machines only" })),
  display_name: t.String({ maxLength: 100 }),
  password: t.Optional(Nullable(t.String({ maxLength: 1024, description: "People only; at least 12 characters" }))),
  estate_role_id: t.Optional(Nullable(t.String({ format: "uuid", description: "A fixed role the operator holds estate-wide (in every project)" }))),
});
export type CreateOperatorBody = typeof CreateOperatorBody.static;

export const UpdateOperatorBody = t.Object({
  display_name: t.Optional(t.String({ maxLength: 100 })),
  suspended: t.Optional(t.Boolean({ description: "true ends every session and token of the operator at once" })),
  reset_mfa: t.Optional(t.Boolean({ description: "true drops the operator's TOTP enrolment" })),
  password: t.Optional(t.String({ maxLength: 1024, description: "Set a new password (people only); ends their sessions" })),
  estate_role_id: t.Optional(Nullable(t.String({ format: "uuid", description: "Fixed role held estate-wide; null removes the estate-wide membership" }))),
});
export type UpdateOperatorBody = typeof UpdateOperatorBody.static;

export const OperatorIdParams = t.Object({ id: Uuid });

export const identityModels = {
  SessionResponse,
  LoginBody,
  LoginResponse,
  ChangePasswordBody,
  MeMembership,
  MePolicy,
  MeResponse,
  MfaConfirmBody,
  MfaDeleteBody,
  MfaEnrolResponse,
  OperatorResponse,
  CreateOperatorBody,
  UpdateOperatorBody,
};
