/**
 * Builds routes (spec "Builds"), and the estate's image-signing public key: public, because
 * verifiers (cosign `--key`, a containers-policy `keyPath`, a CI job checking what it deploys)
 * fetch it without an ops identity, and a public key reveals nothing.
 *
 * Builds live in one environment: the list and create routes evaluate `builds.read` /
 * `builds.run` in `?environment=` (default production), the routes of one build in that build's
 * environment, so environment policies apply to both.
 */
import { Elysia, t } from "elysia";
import type { Core, ProjectRef } from "../../core/core";
import { authzPlugin, type ResolveContext } from "../../core/authz/plugin";
import { OpsError } from "../../core/errors";
import { errors, IdParam } from "../../core/http-schemas";
import { signingPublicKey } from "./signing";
import { buildsModels, BuildListQuery, LogQuery } from "./model";
import { buildDetail, buildLog, cancelBuild, createBuild, environmentOfBuild, listBuilds, retryBuild } from "./service";

const Slug = t.Object({ slug: t.String() });
const BuildId = t.Object({ slug: t.String(), id: IdParam("The build's id") });

const project = (auth: { project: ProjectRef | null }) => auth.project as ProjectRef;

export function buildsRoutes(core: Core) {
  /** The environment of the build the route names (null when there is none: the handler answers 404). */
  const ofBuild = (ctx: ResolveContext) => environmentOfBuild(core, ctx.project!.id, Number(ctx.params.id));
  const read = { key: "builds.read" as const, environment: ofBuild };
  const run = { key: "builds.run" as const, environment: ofBuild };
  return new Elysia({ tags: ["builds"] })
    .use(authzPlugin(core))
    .model(buildsModels)
    .get(
      "/api/v1/signing/public-key",
      () => {
        const key = signingPublicKey(core);
        if (!key) throw new OpsError("not_found", "Image signing is not configured: the estate's signing key is generated when ops serve starts.");
        return new Response(key.pem, {
          headers: { "content-type": "text/plain; charset=utf-8", "x-ops-key-fingerprint": `sha256:${key.fingerprint}`, "cache-control": "no-cache" },
        });
      },
      {
        public: true,
        detail: { summary: "The image-signing public key (PEM, SubjectPublicKeyInfo), as cosign verify --key takes it; its SHA-256 fingerprint in X-Ops-Key-Fingerprint" },
        response: { 200: t.String({ description: "PEM public key (text/plain)" }), ...errors(404) },
      },
    )
    .get("/api/v1/projects/:slug/builds", ({ auth, query }) => listBuilds(core, project(auth), auth.environment ?? "production", query.service ?? null, query.limit ?? 50), {
      permission: "builds.read",
      params: Slug,
      query: BuildListQuery,
      detail: { summary: "Builds of one environment (optionally one service), newest first" },
      response: { 200: t.Array(t.Ref("BuildResponse")), ...errors(401, 403, 404, 422) },
    })
    .post(
      "/api/v1/projects/:slug/builds",
      async ({ auth, body, set }) => {
        const res = await createBuild(core, project(auth), auth.environment ?? "production", body, auth);
        set.status = 201;
        return res;
      },
      {
        permission: "builds.run",
        params: Slug,
        query: BuildListQuery,
        body: "CreateBuildRequest",
        detail: { summary: "Queue a build of the head of a branch of the service's repository (default the service's branch)" },
        response: { 201: "BuildResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .get("/api/v1/projects/:slug/builds/:id", ({ auth, params }) => buildDetail(core, project(auth), params.id), {
      permission: read,
      params: BuildId,
      detail: { summary: "A build with its steps' timings, its code host ids and its rollout" },
      response: { 200: "BuildDetailResponse", ...errors(401, 403, 404, 422) },
    })
    .post(
      "/api/v1/projects/:slug/builds/:id/cancel",
      async ({ auth, params, set }) => {
        const res = await cancelBuild(core, project(auth), params.id, auth);
        set.status = res.status;
        return res.build;
      },
      {
        permission: run,
        params: BuildId,
        detail: { summary: "Cancel a build: 200 cancelled when it was queued; 202 when running (its processes are killed, it reads cancelled at the step's end)" },
        response: { 200: "BuildResponse", 202: "BuildResponse", ...errors(401, 403, 404, 409, 422) },
      },
    )
    .get("/api/v1/projects/:slug/builds/:id/log", ({ auth, params, query }) => buildLog(core, project(auth), params.id, query.after ?? 0, query.limit ?? 500), {
      permission: read,
      params: BuildId,
      query: LogQuery,
      detail: { summary: "One page of a build's log after `after` (poll with `next` while `live`)" },
      response: { 200: "LogResponse", ...errors(401, 403, 404, 422) },
    })
    .post(
      "/api/v1/projects/:slug/builds/:id/retry",
      async ({ auth, params, set }) => {
        const res = await retryBuild(core, project(auth), params.id, auth);
        set.status = 201;
        return res;
      },
      {
        permission: run,
        params: BuildId,
        detail: { summary: "Queue a new build of the same commit, service and kind (trigger retry)" },
        response: { 201: "BuildResponse", ...errors(401, 403, 404, 409, 422) },
      },
    );
}
