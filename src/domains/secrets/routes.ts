/**
 * Secret routes: a secret group's variables, rotation and rendered versions; secrets per deploy
 * unit with the dotenv export; the store's status, seal and unseal. Every route that reads or
 * writes values answers 503 `sealed` while the store is sealed; routes that read or delete
 * metadata only need no key and answer as usual (decision 0545).
 */
import { Elysia, t } from "elysia";
import type { Core, ProjectRef } from "../../core/core";
import { authzPlugin, type ResolveContext } from "../../core/authz/plugin";
import { errors, NoContent } from "../../core/http-schemas";
import { placeFor } from "../resources/service";
import { secretsModels } from "./model";
import * as svc from "./service";

const GroupParams = t.Object({ slug: t.String(), name: t.String() });
const VariableParams = t.Object({ slug: t.String(), name: t.String(), key: t.String() });
const CommonQuery = t.Object({ environment: t.Optional(t.String()), kind: t.Optional(t.String()), confirm: t.Optional(t.String()) });
const UnitParams = t.Object({ slug: t.String(), service: t.String() });
const SecretParams = t.Object({ slug: t.String(), service: t.String(), name: t.String() });

function groupPlace(project: ProjectRef | null, environment: string | undefined) {
  return placeFor(project as ProjectRef, "secret-group", environment);
}

export function secretsRoutes(core: Core) {
  // A unit's secrets are guarded in every environment its service runs in (see unitEnvironments).
  const unitScope = (ctx: ResolveContext) => (ctx.project ? svc.unitEnvironments(core.db, ctx.project, ctx.params.service ?? "") : null);
  return new Elysia({ prefix: "/api/v1", tags: ["secrets"] })
    .use(authzPlugin(core))
    .model(secretsModels)
    .post("/projects/:slug/resources/secret-group/:name/rotate", ({ auth, params, query }) => svc.rotateGroup(core, groupPlace(auth.project, query.environment), params.name, auth), {
      permission: "secrets.rotate",
      params: GroupParams,
      query: CommonQuery,
      detail: { summary: "Render the group as <name>.env.v<n> and restart (or mark for restart) the services that mount it" },
      response: { 200: "RotateGroupResponse", ...errors(401, 403, 404, 409, 503) },
    })
    .get("/projects/:slug/resources/secret-group/:name/variables", ({ auth, params, query }) => svc.listVariables(core, groupPlace(auth.project, query.environment), params.name, auth), {
      permission: "secrets.read",
      params: GroupParams,
      query: CommonQuery,
      detail: { summary: "A group's variables; text values only for secrets.reveal (audited), secret values never" },
      response: { 200: t.Array(t.Ref("VariableResponse")), ...errors(401, 403, 404, 503) },
    })
    .put(
      "/projects/:slug/resources/secret-group/:name/variables/:key",
      ({ auth, params, query, body }) => svc.setVariable(core, groupPlace(auth.project, query.environment), params.name, params.key, body, auth),
      {
        permission: "secrets.write",
        params: VariableParams,
        query: CommonQuery,
        body: "SetVariableRequest",
        detail: { summary: "Set a variable; a name the group does not declare is appended to its spec" },
        response: { 200: "VariableResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .delete(
      "/projects/:slug/resources/secret-group/:name/variables/:key",
      ({ auth, params, query, set }) => {
        svc.deleteVariable(core, groupPlace(auth.project, query.environment), params.name, params.key, auth);
        set.status = 204;
      },
      {
        permission: "secrets.write",
        params: VariableParams,
        query: CommonQuery,
        detail: { summary: "Delete a variable's value and declaration" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 503) },
      },
    )
    .get("/projects/:slug/resources/secret-group/:name/versions", ({ auth, params, query }) => svc.listVersions(core, groupPlace(auth.project, query.environment), params.name), {
      permission: "secrets.read",
      params: GroupParams,
      query: CommonQuery,
      detail: { summary: "Rendered versions, newest first" },
      response: { 200: t.Array(t.Ref("RenderedVersion")), ...errors(401, 403, 404) },
    })
    .get("/projects/:slug/secrets", ({ auth }) => svc.listSecrets(core, auth.project as ProjectRef), {
      permission: { key: "secrets.read", environment: "none" },
      params: t.Object({ slug: t.String() }),
      detail: { summary: "Secrets per deploy unit: metadata only, never values" },
      response: { 200: t.Array(t.Ref("SecretMetaResponse")), ...errors(401, 403, 404) },
    })
    .get(
      "/projects/:slug/secrets/:service/env",
      ({ auth, params }) => new Response(svc.exportEnv(core, auth.project as ProjectRef, params.service, auth), { headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" } }),
      {
        permission: { key: "secrets.reveal", environment: unitScope },
        params: UnitParams,
        detail: { summary: "A unit's secrets as a dotenv document: the only value egress; audited" },
        response: { 200: t.String({ description: "dotenv document (text/plain)" }), ...errors(401, 403, 404, 503) },
      },
    )
    .put(
      "/projects/:slug/secrets/:service/:name",
      ({ auth, params, body, set }) => {
        svc.setSecret(core, auth.project as ProjectRef, params.service, params.name, body.value, auth);
        set.status = 204;
      },
      {
        permission: { key: "secrets.write", environment: unitScope },
        params: SecretParams,
        body: "SetSecretRequest",
        detail: { summary: "Create or rotate a unit's secret" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .delete(
      "/projects/:slug/secrets/:service/:name",
      ({ auth, params, set }) => {
        svc.deleteSecret(core, auth.project as ProjectRef, params.service, params.name, auth);
        set.status = 204;
      },
      {
        permission: { key: "secrets.write", environment: unitScope },
        params: SecretParams,
        detail: { summary: "Delete a unit's secret" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409) },
      },
    )
    .get("/admin/secrets", () => svc.storeStatus(core), {
      permission: "estate.manage",
      detail: { summary: "The secrets store: sealed or not, and why" },
      response: { 200: "SecretsStoreStatus", ...errors(401, 403) },
    })
    .post(
      "/admin/secrets/seal",
      ({ auth, set }) => {
        svc.sealStore(core, auth);
        set.status = 204;
      },
      {
        permission: "estate.manage",
        detail: { summary: "Seal the secrets store until an unseal or a restart" },
        response: { 204: NoContent, ...errors(401, 403) },
      },
    )
    .post(
      "/admin/secrets/unseal",
      ({ auth, body, set }) => {
        svc.unsealStore(core, body.key, auth);
        set.status = 204;
      },
      {
        permission: "estate.manage",
        body: "UnsealRequest",
        detail: { summary: "Unseal the secrets store with its master key" },
        response: { 204: NoContent, ...errors(401, 403, 422) },
      },
    );
}
