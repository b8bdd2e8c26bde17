/** Tokens (self-service mint/list/revoke; project tokens under `project.members`) and the audit log (`audit.read`). */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors, NoContent } from "../../core/http-schemas";
import { accessModels } from "./model";
import { AuditQuery } from "./model-tokens";
import { listTokens, projectTokens, mintToken, revokeToken } from "./token-admin";
import { listAudit } from "./audit-read";

export function tokenRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["access"] })
    .use(authzPlugin(core))
    .model(accessModels)
    .get("/tokens", ({ auth }) => listTokens(core, auth), {
      permission: "authenticated",
      detail: { summary: "The caller's tokens, or every token for a caller who manages operators" },
      response: { 200: t.Array(t.Ref("TokenResponse")), ...errors(401) },
    })
    .post(
      "/tokens",
      ({ auth, body, set }) => {
        const out = mintToken(core, auth, body);
        set.status = 201;
        return out;
      },
      {
        permission: "authenticated",
        body: "MintTokenBody",
        detail: { summary: "Mint a token; the secret is returned once" },
        response: { 201: "TokenMintedResponse", ...errors(401, 403, 404, 422) },
      },
    )
    .delete(
      "/tokens/:id",
      ({ auth, params, status }) => {
        revokeToken(core, auth, params.id);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        detail: { summary: "Revoke a token (yours, or any when you manage operators); instant" },
        response: { 204: NoContent, ...errors(401, 404, 422) },
      },
    )
    .get("/projects/:slug/tokens", ({ auth }) => projectTokens(core, auth.project!.id), {
      permission: { key: "project.members", environment: "none" },
      params: t.Object({ slug: t.String() }),
      detail: { summary: "Every token pinned to the project" },
      response: { 200: t.Array(t.Ref("TokenResponse")), ...errors(401, 403, 404) },
    })
    .get("/projects/:slug/audit", ({ auth, query }) => listAudit(core, auth.project!, query), {
      permission: { key: "audit.read", environment: "none" },
      params: t.Object({ slug: t.String() }),
      query: AuditQuery,
      detail: { summary: "The project's audit log, newest first" },
      response: { 200: t.Array(t.Ref("AuditResponse")), ...errors(401, 403, 404, 422) },
    });
}
