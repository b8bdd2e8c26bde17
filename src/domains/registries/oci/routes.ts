/**
 * The OCI distribution registry at `/v2/` and its token service `/v2/token`.
 *
 * Repositories are exactly `<project>/<service>`, so the routes name both halves as path
 * parameters instead of matching a wildcard name by its suffix: Bun's router then serves `HEAD`
 * through the declared HEAD routes (for wildcard routes Elysia answers HEAD by running the GET
 * handler and reading its whole body to measure it, which for a layer means reading gigabytes).
 *
 * Data routes are `public: true` for the ops macro and check the registry JWT themselves (see
 * access.ts); `/v2/token` is an ordinary `authenticated` route whose credential is the ops token
 * sent as the basic-auth password.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../../core/core";
import { authzPlugin, requestMeta } from "../../../core/authz/plugin";
import { rawParse } from "../shared/body";
import { requireAccess, requireToken, ociError, API_VERSION_HEADER } from "./access";
import { issueRegistryToken } from "./token";
import { blobResponse, ensureRepository, repositoryName, requireRepository } from "./blobs";
import { startUpload, patchUpload, finishUpload, uploadStatus, cancelUpload } from "./uploads";
import { manifestResponse, putManifest, listTags } from "./manifests";

const TAG = ["image registry"];
const detail = (summary: string) => ({ tags: TAG, summary, "x-protocol": "oci-distribution", security: [{ registryToken: [] }] }) as Record<string, unknown>;

export const OciErrorBody = t.Object(
  { errors: t.Array(t.Object({ code: t.String(), message: t.String(), detail: t.Optional(t.Unknown()) })) },
  { title: "OciErrorBody" },
);
export const RegistryTokenResponse = t.Object(
  {
    access_token: t.String(),
    token: t.String({ description: "Same value as access_token (older and newer clients read different fields)" }),
    expires_in: t.Integer(),
    issued_at: t.String(),
  },
  { title: "RegistryTokenResponse" },
);
export const TagList = t.Object({ name: t.String(), tags: t.Array(t.String()) }, { title: "OciTagList" });

const ociErrors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, t.Ref("OciErrorBody")]));
const repoParams = t.Object({ project: t.String(), service: t.String() });
const blobParams = t.Object({ project: t.String(), service: t.String(), digest: t.String() });
const uploadParams = t.Object({ project: t.String(), service: t.String(), id: t.String() });
const manifestParams = t.Object({ project: t.String(), service: t.String(), reference: t.String() });

function queryOf(request: Request): URLSearchParams {
  return new URL(request.url).searchParams;
}

export function ociRoutes(core: Core) {
  const getBlob = async ({ request, params }: { request: Request; params: { project: string; service: string; digest: string } }) => {
    const name = repositoryName(params.project, params.service);
    await requireAccess(core, request, name, ["pull"]);
    return blobResponse(core, requireRepository(core, name), params.digest, request);
  };
  const getManifest = async ({ request, params }: { request: Request; params: { project: string; service: string; reference: string } }) => {
    const name = repositoryName(params.project, params.service);
    await requireAccess(core, request, name, ["pull"]);
    return manifestResponse(core, requireRepository(core, name), params.reference, request);
  };
  const startUploadRoute = async ({ request, params }: { request: Request; params: { project: string; service: string } }) => {
    const name = repositoryName(params.project, params.service);
    const grant = await requireAccess(core, request, name, ["pull", "push"]);
    const q = queryOf(request);
    return startUpload(core, ensureRepository(core, name, grant.subject), grant, { digest: q.get("digest") ?? undefined, mount: q.get("mount") ?? undefined, from: q.get("from") ?? undefined }, request);
  };
  const unsupported = async ({ request, params }: { request: Request; params: { project: string; service: string } }) => {
    await requireAccess(core, request, repositoryName(params.project, params.service), ["pull", "push"]);
    throw ociError(405, "UNSUPPORTED", "Deleting from this registry is not supported.");
  };

  return new Elysia({ name: "registries-oci", prefix: "/v2" })
    .use(authzPlugin(core))
    .model({ OciErrorBody, RegistryTokenResponse, OciTagList: TagList })
    .get(
      "/",
      async ({ request }) => {
        await requireToken(core, request, null);
        return new Response("{}", { headers: { "content-type": "application/json", ...API_VERSION_HEADER } });
      },
      { public: true, detail: detail("API version check: 200 with a registry token, else a 401 challenge"), response: { 200: t.Object({}), ...ociErrors(401) } },
    )
    .get(
      "/token",
      async ({ request, auth }) => {
        const q = queryOf(request);
        return issueRegistryToken(core, auth.principal, auth.meta, q.get("service") ?? "", q.getAll("scope"));
      },
      {
        permission: "authenticated",
        query: t.Object({
          service: t.Optional(t.String({ description: "The registry service (required; unknown → 400)" })),
          scope: t.Optional(t.Union([t.String(), t.Array(t.String())], { description: "repository:<project>/<service>:pull,push (repeatable)" })),
          account: t.Optional(t.String()),
          client_id: t.Optional(t.String()),
          offline_token: t.Optional(t.String()),
        }),
        detail: {
          tags: TAG,
          summary: "Registry token: an ops token as the basic-auth password buys an ES256 JWT for the actions the caller's permissions allow",
          "x-protocol": "docker-token-auth",
          security: [{ basic: [] }],
        } as Record<string, unknown>,
        response: { 200: t.Ref("RegistryTokenResponse"), ...ociErrors(400, 401, 503) },
      },
    )
    .head("/:project/:service/blobs/:digest", getBlob, { public: true, params: blobParams, detail: detail("Blob size and digest"), response: { 200: t.Void(), ...ociErrors(400, 401, 403, 404) } })
    .get("/:project/:service/blobs/:digest", getBlob, {
      public: true,
      params: blobParams,
      detail: detail("Download a blob (Range supported)"),
      response: { 200: t.Any({ description: "The blob" }), 206: t.Any(), ...ociErrors(400, 401, 403, 404) },
    })
    .delete("/:project/:service/blobs/:digest", unsupported, { public: true, params: blobParams, detail: detail("Deleting blobs is not supported (405)"), response: ociErrors(401, 403, 405) })
    .post("/:project/:service/blobs/uploads/", startUploadRoute, {
      public: true,
      parse: rawParse,
      params: repoParams,
      detail: detail("Start a blob upload (202), mount a blob from another repository or upload it in one request with ?digest= (201)"),
      response: { 201: t.Void(), 202: t.Void(), ...ociErrors(400, 401, 403, 404, 413) },
    })
    .get(
      "/:project/:service/blobs/uploads/:id",
      async ({ request, params }) => {
        const name = repositoryName(params.project, params.service);
        await requireAccess(core, request, name, ["pull", "push"]);
        return uploadStatus(core, requireRepository(core, name), params.id);
      },
      { public: true, params: uploadParams, detail: detail("Upload progress, to resume (204 with Range)"), response: { 204: t.Void(), ...ociErrors(401, 403, 404) } },
    )
    .patch(
      "/:project/:service/blobs/uploads/:id",
      async ({ request, params }) => {
        const name = repositoryName(params.project, params.service);
        await requireAccess(core, request, name, ["pull", "push"]);
        return patchUpload(core, requireRepository(core, name), params.id, request);
      },
      { public: true, parse: rawParse, params: uploadParams, detail: detail("Upload a chunk (202); 416 when out of order"), response: { 202: t.Void(), ...ociErrors(400, 401, 403, 404, 413, 416) } },
    )
    .put(
      "/:project/:service/blobs/uploads/:id",
      async ({ request, params }) => {
        const name = repositoryName(params.project, params.service);
        await requireAccess(core, request, name, ["pull", "push"]);
        return finishUpload(core, requireRepository(core, name), params.id, queryOf(request).get("digest") ?? undefined, request);
      },
      { public: true, parse: rawParse, params: uploadParams, detail: detail("Finish an upload with ?digest= (201); 400 DIGEST_INVALID on mismatch"), response: { 201: t.Void(), ...ociErrors(400, 401, 403, 404, 413) } },
    )
    .delete(
      "/:project/:service/blobs/uploads/:id",
      async ({ request, params }) => {
        const name = repositoryName(params.project, params.service);
        await requireAccess(core, request, name, ["pull", "push"]);
        return cancelUpload(core, requireRepository(core, name), params.id);
      },
      { public: true, params: uploadParams, detail: detail("Cancel an upload"), response: { 204: t.Void(), ...ociErrors(401, 403, 404) } },
    )
    .head("/:project/:service/manifests/:reference", getManifest, {
      public: true,
      params: manifestParams,
      detail: detail("Manifest media type, size and digest"),
      response: { 200: t.Void(), ...ociErrors(400, 401, 403, 404) },
    })
    .get("/:project/:service/manifests/:reference", getManifest, {
      public: true,
      params: manifestParams,
      detail: detail("Download a manifest by tag or digest"),
      response: { 200: t.Any({ description: "The manifest bytes as pushed" }), ...ociErrors(400, 401, 403, 404) },
    })
    .put(
      "/:project/:service/manifests/:reference",
      async ({ request, params }) => {
        const name = repositoryName(params.project, params.service);
        const grant = await requireAccess(core, request, name, ["pull", "push"]);
        return putManifest(core, ensureRepository(core, name, grant.subject), params.reference, request, grant, requestMeta(request, null).ip);
      },
      {
        public: true,
        parse: rawParse,
        params: manifestParams,
        detail: detail("Push a manifest by tag or digest (201)"),
        response: { 201: t.Void(), ...ociErrors(400, 401, 403, 404, 413) },
      },
    )
    .delete("/:project/:service/manifests/:reference", unsupported, { public: true, params: manifestParams, detail: detail("Deleting manifests is not supported (405)"), response: ociErrors(401, 403, 405) })
    .get(
      "/:project/:service/tags/list",
      async ({ request, params }) => {
        const name = repositoryName(params.project, params.service);
        await requireAccess(core, request, name, ["pull"]);
        const q = queryOf(request);
        const n = q.get("n");
        if (n !== null && !/^\d+$/.test(n)) throw ociError(400, "PAGINATION_NUMBER_INVALID", "n must be a whole number.");
        return listTags(core, requireRepository(core, name), n === null ? null : Number(n), q.get("last"));
      },
      { public: true, params: repoParams, detail: detail("List tags (sorted; paginated with n and last)"), response: { 200: t.Ref("OciTagList"), ...ociErrors(400, 401, 403, 404) } },
    );
}
