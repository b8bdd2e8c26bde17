/** Schemas of tokens and the audit log (the spec's names). */
import { t } from "elysia";
import { BodyInt, IntParam } from "../../core/http-schemas";

const Uuid = t.String({ format: "uuid" });
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()]);

export const TokenResponse = t.Object({
  id: Uuid,
  name: t.String(),
  kind: t.Union([t.Literal("api"), t.Literal("cli"), t.Literal("mcp")]),
  operator: t.String({ description: "The operator's email, or the machine's handle" }),
  operator_id: Uuid,
  project: t.Optional(Nullable(t.String({ description: "null = the token acts wherever its operator may" }))),
  role_id: Uuid,
  role_name: t.String(),
  scopes: t.Array(t.String()),
  created_at: t.String(),
  expires_at: t.Optional(Nullable(t.String())),
  last_used: t.Optional(Nullable(t.String())),
  revoked: t.Boolean(),
});
export type TokenResponse = typeof TokenResponse.static;

export const MintTokenBody = t.Object({
  name: t.String({ maxLength: 100 }),
  role_id: Uuid,
  project: t.Optional(Nullable(t.String({ description: "null = acts wherever the operator may; a slug pins it" }))),
  kind: t.Optional(Nullable(t.Union([t.Literal("api"), t.Literal("cli"), t.Literal("mcp")], { description: "api (default), cli or mcp" }))),
  expires_in_days: t.Optional(BodyInt({ minimum: 0, maximum: 36500, nullable: true, description: "Omitted = OPS_TOKEN_TTL_DAYS (default 90); 0 = no expiry" })),
});
export type MintTokenBody = typeof MintTokenBody.static;

export const TokenMintedResponse = t.Object({
  secret: t.String({ description: "The raw bearer, prefix opst_. Returned once; never stored" }),
  token: TokenResponse,
});

export const AuditResponse = t.Object({
  id: t.Integer(),
  at: t.String(),
  actor: t.String({ description: "Operator email, or api-token or host-app for a machine caller" }),
  via: t.String({ description: "console, token, api-token or system" }),
  ip: t.String(),
  action: t.String({ description: "The permission that was asked for, or the verb of a self-service write" }),
  target: t.String(),
  outcome: t.Union([t.Literal("allowed"), t.Literal("denied")]),
  reason: t.String({ description: "Deny reason of a refusal; empty when allowed" }),
  project: t.Optional(Nullable(t.String())),
  environment: t.Optional(Nullable(t.String())),
});
export type AuditResponse = typeof AuditResponse.static;

export const AuditQuery = t.Object({
  actor: t.Optional(t.String({ description: "Exact actor, case-insensitive (an email, api-token, host-app, system)" })),
  project: t.Optional(t.String({ description: "Ignored: the path pins the project" })),
  environment: t.Optional(t.String({ description: "Exact environment name" })),
  action: t.Optional(t.String({ description: "Exact action, or a prefix when it ends in * (secrets.*)" })),
  outcome: t.Optional(t.Union([t.Literal("allowed"), t.Literal("denied")])),
  since: t.Optional(t.String({ description: "RFC 3339, or relative: 15m, 24h, 7d" })),
  limit: t.Optional(IntParam({ minimum: 1, description: "Default 100, at most 500 (larger values are capped)" })),
  cursor: t.Optional(IntParam({ minimum: 1, description: "The id of the last row of the previous page" })),
});

export const tokenModels = { TokenResponse, MintTokenBody, TokenMintedResponse, AuditResponse };
