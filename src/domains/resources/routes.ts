/**
 * Resource routes: the catalog, the generic typed-resource routes and the type-specific actions
 * (bucket check, database runbook and password, job runs). Handlers parse, call a service, return.
 * Secret-group variable routes live in the secrets domain.
 */
import { Elysia, t } from "elysia";
import type { Core, ProjectRef } from "../../core/core";
import { authzPlugin, type ResolveContext } from "../../core/authz/plugin";
import { errors, NoContent, IntParam, IdParam } from "../../core/http-schemas";
import { resourcesModels, NAME_PATTERN } from "./model";
import * as svc from "./service";

/** Buckets are project-level: their routes evaluate permissions without environment policies. */
const typeEnvironment = (ctx: ResolveContext): string | null => (ctx.params.type === "bucket" ? null : ctx.query.environment || "production");

const CommonQuery = t.Object({
  environment: t.Optional(t.String({ description: "Environment (default production; ignored by project-level types)" })),
  kind: t.Optional(t.String({ description: "On the list route: only resources of this type" })),
  confirm: t.Optional(t.String({ description: "Typed confirmation for deletes that ask for one (the resource's name)" })),
});
const TypeParams = t.Object({ slug: t.String(), type: t.String() });
const NameParams = t.Object({ slug: t.String(), type: t.String(), name: t.String() });
const StrictNameParams = t.Object({ slug: t.String(), type: t.String(), name: t.String({ pattern: NAME_PATTERN }) });
const KindNameParams = t.Object({ slug: t.String(), name: t.String() });

function place(project: ProjectRef | null, type: svc.ResourceType, environment: string | undefined) {
  return svc.placeFor(project as ProjectRef, type, environment);
}

export function resourcesRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["resources"] })
    .use(authzPlugin(core))
    .model(resourcesModels)
    .get("/catalog", () => svc.catalog(), {
      permission: "authenticated",
      detail: { summary: "Resource types with the JSON Schema of their spec" },
      response: { 200: t.Array(t.Ref("CatalogEntry")), ...errors(401) },
    })
    .get(
      "/projects/:slug/resources",
      ({ auth, query }) => {
        const all = svc.listResources(core, auth.project as ProjectRef, auth.environment as string);
        return query.kind ? all.filter((r) => r.type === query.kind) : all;
      },
      {
        permission: "resources.read",
        params: t.Object({ slug: t.String() }),
        query: CommonQuery,
        detail: { summary: "Every resource of one environment plus the project-level ones, by type then name" },
        response: { 200: t.Array(t.Ref("ResourceResponse")), ...errors(401, 403, 404) },
      },
    )
    .post(
      "/projects/:slug/resources/bucket/:name/check",
      async ({ auth, params }) => {
        const row = svc.getResourceRow(core.db, place(auth.project, "bucket", undefined), "bucket", params.name);
        return svc.toResponse(await svc.observeRow(core, row), (auth.project as ProjectRef).slug);
      },
      {
        permission: { key: "resources.read", environment: "none" },
        params: KindNameParams,
        detail: { summary: "Count a bucket's objects and bytes now (a bucket that does not answer is pending)" },
        response: { 200: "ResourceResponse", ...errors(401, 403, 404) },
      },
    )
    .get("/projects/:slug/resources/database/:name/restore-runbook", ({ auth, params, query }) => svc.restoreRunbook(core, place(auth.project, "database", query.environment), params.name), {
      permission: "databases.manage",
      params: KindNameParams,
      query: CommonQuery,
      detail: { summary: "pgBackRest steps to restore a database" },
      response: { 200: "RestoreRunbookResponse", ...errors(401, 403, 404) },
    })
    .post(
      "/projects/:slug/resources/database/:name/rotate-password",
      ({ auth, params, query }) => svc.rotateDatabasePassword(core, place(auth.project, "database", query.environment), params.name, auth),
      {
        permission: "databases.manage",
        params: KindNameParams,
        query: CommonQuery,
        detail: { summary: "Rotate the database role's password and rewrite every connection string containing it" },
        response: { 200: "ResourceResponse", ...errors(401, 403, 404, 409, 503) },
      },
    )
    .post(
      "/projects/:slug/resources/job/:name/run",
      ({ auth, params, query, set }) => {
        set.status = 202;
        return svc.requestRun(core, place(auth.project, "job", query.environment), params.name, auth);
      },
      {
        permission: "jobs.run",
        params: KindNameParams,
        query: t.Object({ environment: t.Optional(t.String()), limit: t.Optional(IntParam({ description: "Accepted and ignored" })) }),
        detail: { summary: "Queue a manual run of a job" },
        response: { 202: "JobRunResponse", ...errors(401, 403, 404, 409) },
      },
    )
    .get(
      "/projects/:slug/resources/job/:name/runs",
      ({ auth, params, query }) => svc.listRuns(core, place(auth.project, "job", query.environment), params.name, query.limit ?? 50),
      {
        permission: "resources.read",
        params: KindNameParams,
        query: t.Object({ environment: t.Optional(t.String()), limit: t.Optional(IntParam({ minimum: 1, maximum: 500, description: "1 to 500, default 50" })) }),
        detail: { summary: "A job's runs, newest first" },
        response: { 200: t.Array(t.Ref("JobRunResponse")), ...errors(401, 403, 404, 422) },
      },
    )
    .get(
      "/projects/:slug/resources/job/:name/runs/:id/log",
      ({ auth, params, query }) => svc.runLog(core, place(auth.project, "job", query.environment), params.name, params.id, query.after ?? 0, query.limit ?? 500),
      {
        permission: "resources.read",
        params: t.Object({ slug: t.String(), name: t.String(), id: IdParam("The run's id") }),
        query: t.Object({
          environment: t.Optional(t.String()),
          after: t.Optional(IntParam({ minimum: 0, description: "Sequence to read after (default from the start)" })),
          limit: t.Optional(IntParam({ minimum: 1, maximum: 5000, description: "1 to 5000, default 500" })),
        }),
        detail: { summary: "A page of a job run's output" },
        response: { 200: "JobLogResponse", ...errors(401, 403, 404, 422) },
      },
    )
    .get("/projects/:slug/resources/:type", ({ auth, params, query }) => svc.listResourcesOfType(core, auth.project as ProjectRef, params.type, query.environment), {
      permission: { key: "resources.read", environment: typeEnvironment },
      params: TypeParams,
      query: CommonQuery,
      detail: { summary: "Resources of one type, by name" },
      response: { 200: t.Array(t.Ref("ResourceResponse")), ...errors(401, 403, 404, 422) },
    })
    .post(
      "/projects/:slug/resources/:type",
      async ({ auth, params, query, body, set }) => {
        const res = await svc.createResource(core, { project: auth.project as ProjectRef, type: params.type, name: body.name, environment: query.environment }, body.spec, auth);
        set.status = 201;
        return res;
      },
      {
        permission: { key: "resources.write", environment: typeEnvironment },
        params: TypeParams,
        query: CommonQuery,
        body: "CreateResourceRequest",
        detail: { summary: "Create a resource" },
        response: { 201: "ResourceResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .get("/projects/:slug/resources/:type/:name", ({ auth, params, query }) => svc.getResource(core, { project: auth.project as ProjectRef, type: params.type, name: params.name, environment: query.environment }), {
      permission: { key: "resources.read", environment: typeEnvironment },
      params: NameParams,
      query: CommonQuery,
      detail: { summary: "One resource" },
      response: { 200: "ResourceResponse", ...errors(401, 403, 404, 422) },
    })
    .put(
      "/projects/:slug/resources/:type/:name",
      async ({ auth, params, query, body, set }) => {
        const out = await svc.putResource(core, { project: auth.project as ProjectRef, type: params.type, name: params.name, environment: query.environment }, body, auth);
        set.status = out.created ? 201 : 200;
        return out.resource;
      },
      {
        permission: { key: "resources.write", environment: typeEnvironment },
        params: StrictNameParams,
        query: CommonQuery,
        body: "SetResourceRequest",
        detail: { summary: "Create (201) or replace (200) a resource; a stale `version` is 409" },
        response: { 200: "ResourceResponse", 201: "ResourceResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .delete(
      "/projects/:slug/resources/:type/:name",
      async ({ auth, params, query, set }) => {
        await svc.deleteResource(core, { project: auth.project as ProjectRef, type: params.type, name: params.name, environment: query.environment }, query.confirm, auth);
        set.status = 204;
      },
      {
        permission: { key: "resources.destroy", environment: typeEnvironment },
        params: StrictNameParams,
        query: CommonQuery,
        detail: { summary: "Delete a resource (refused while it would leave something running unmanaged; databases ask for confirm)" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422) },
      },
    )
    .post(
      "/projects/:slug/resources/:type/:name/observe",
      ({ auth, params, query }) => svc.observeResource(core, { project: auth.project as ProjectRef, type: params.type, name: params.name, environment: query.environment }),
      {
        permission: { key: "resources.read", environment: typeEnvironment },
        params: StrictNameParams,
        query: CommonQuery,
        detail: { summary: "Observe a resource now and store its status" },
        response: { 200: "ResourceResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    );
}
