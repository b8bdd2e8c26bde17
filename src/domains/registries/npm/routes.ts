/**
 * The npm registry at `/npm/` (configure `registry=<public>/npm/` with the trailing slash).
 * Scoped names arrive as one encoded segment (`@ops%2flib`, `@ops%2Flib`, `%40ops%2flib`: the
 * router decodes them) or as two segments (`@ops/lib`); the two-segment forms are aliases, hidden
 * from OpenAPI. Every route takes the ops token as `Authorization: Bearer` (from `.npmrc`); the
 * project is the one holding the name's claim.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../../core/core";
import { authzPlugin, type ResolveContext } from "../../../core/authz/plugin";
import { actorOf } from "../../../core/authz/principal";
import { OpsError } from "../../../core/errors";
import { claimOf, resolveForPublish, resolveForRead } from "../shared/resolve";
import { readDocument, notModified } from "../shared/documents";
import { findFile, hasVersions } from "../shared/reads";
import { ABBREVIATED, CORGI_TYPE, FULL, renderNpm } from "./render";
import { publishNpm, addDistTag, removeDistTag, type NpmPublishBody } from "./service";
import { npmModels } from "./model";
import { tagsOf } from "../shared/publish";

const TAG = ["npm registry"];
const npmErrors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, t.Ref("NpmErrorBody")]));

/** The package name a route's params spell, in any of the accepted encodings. */
function nameFrom(params: Record<string, string | undefined>): string {
  const pkg = params.pkg ?? "";
  return params.name !== undefined && pkg.startsWith("@") && !pkg.includes("/") ? `${pkg}/${params.name}` : pkg;
}

function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

export function npmRoutes(core: Core) {
  const read = { key: "packages.read" as const, environment: "none" as const, project: (ctx: ResolveContext) => resolveForRead(core, ctx, "npm", nameFrom(ctx.params)) };
  const publish = { key: "packages.publish" as const, environment: "none" as const, project: (ctx: ResolveContext) => resolveForPublish(core, ctx, "npm", nameFrom(ctx.params)) };
  const write = { key: "packages.publish" as const, environment: "none" as const, project: (ctx: ResolveContext) => resolveForRead(core, ctx, "npm", nameFrom(ctx.params)) };

  const packument = ({ request }: { request: Request }) => {
    const pkg = claimOf(request);
    if (!hasVersions(core, pkg)) throw new OpsError("not_found", `"${pkg.name}" is not in this registry: it is claimed but has no published version yet.`);
    const corgi = (request.headers.get("accept") ?? "").includes(CORGI_TYPE);
    const doc = readDocument(core, pkg, corgi ? ABBREVIATED : FULL, renderNpm);
    const headers = { etag: doc.etag, "last-modified": httpDate(doc.updatedAt), "cache-control": "no-cache", vary: "accept, authorization" };
    if (notModified(request, doc)) return new Response(null, { status: 304, headers });
    return new Response(doc.body, { headers: { ...headers, "content-type": corgi ? CORGI_TYPE : "application/json" } });
  };

  const tarball = ({ request, params }: { request: Request; params: Record<string, string> }) => {
    const pkg = claimOf(request);
    const file = findFile(core, pkg, params.file);
    const blob = file ? core.blobs.open(file.digest) : null;
    if (!file || !blob) throw new OpsError("not_found", `${params.file} is not in this registry.`);
    return new Response(blob, { headers: { "content-type": "application/octet-stream", "content-length": String(file.size), "cache-control": "private, max-age=31536000, immutable" } });
  };

  const doPublish = async ({ request, params, body, auth }: { request: Request; params: Record<string, string>; body: unknown; auth: { principal: import("../../../core/authz/principal").Principal; project: import("../../../core/core").ProjectRef | null; meta: import("../../../core/authz/principal").RequestMeta } }) => {
    const pkg = claimOf(request);
    const name = nameFrom(params);
    const res = await publishNpm(core, pkg, auth.project!, name, body as NpmPublishBody, { name: auth.principal.name, operatorId: auth.principal.operatorId }, actorOf(auth.principal, auth.meta));
    return new Response(JSON.stringify({ ok: true, id: pkg.name, version: res.version }), { status: 201, headers: { "content-type": "application/json" } });
  };

  const pkgParams = t.Object({ pkg: t.String() });
  const scopedParams = t.Object({ pkg: t.String(), name: t.String() });

  return new Elysia({ name: "registries-npm", prefix: "/npm" })
    .use(authzPlugin(core))
    .model(npmModels)
    .get("/-/ping", () => ({}), {
      public: true,
      detail: { tags: TAG, summary: "npm ping", "x-protocol": "npm" } as Record<string, unknown>,
      response: { 200: t.Object({}) },
    })
    .get("/-/whoami", ({ auth }) => ({ username: auth.principal.name }), {
      permission: "authenticated",
      detail: { tags: TAG, summary: "npm whoami: the caller's name", "x-protocol": "npm" } as Record<string, unknown>,
      response: { 200: t.Ref("NpmWhoami"), ...npmErrors(401) },
    })
    .get("/-/package/:pkg/dist-tags", ({ request }) => tagsOf(core.db, claimOf(request).id), {
      permission: read,
      params: pkgParams,
      detail: { tags: TAG, summary: "npm dist-tag ls", "x-protocol": "npm" } as Record<string, unknown>,
      response: { 200: t.Ref("NpmDistTags"), ...npmErrors(401, 403, 404) },
    })
    .put(
      "/-/package/:pkg/dist-tags/:tag",
      ({ request, params, body, auth }) => {
        addDistTag(core, claimOf(request), auth.project!, params.tag, body, actorOf(auth.principal, auth.meta));
        return { ok: true };
      },
      {
        permission: write,
        params: t.Object({ pkg: t.String(), tag: t.String() }),
        body: t.Unknown({ description: "The version, as a JSON string" }),
        detail: { tags: TAG, summary: "npm dist-tag add", "x-protocol": "npm" } as Record<string, unknown>,
        response: { 200: t.Object({ ok: t.Boolean() }), ...npmErrors(401, 403, 404, 422) },
      },
    )
    .delete(
      "/-/package/:pkg/dist-tags/:tag",
      ({ request, params, auth }) => {
        removeDistTag(core, claimOf(request), auth.project!, params.tag, actorOf(auth.principal, auth.meta));
        return { ok: true };
      },
      {
        permission: write,
        params: t.Object({ pkg: t.String(), tag: t.String() }),
        detail: { tags: TAG, summary: "npm dist-tag rm", "x-protocol": "npm" } as Record<string, unknown>,
        response: { 200: t.Object({ ok: t.Boolean() }), ...npmErrors(401, 403, 404, 422) },
      },
    )
    .get("/:pkg", packument, {
      permission: read,
      params: pkgParams,
      detail: { tags: TAG, summary: "Package document listing every version and where to download it", "x-protocol": "npm" } as Record<string, unknown>,
      response: { 200: t.Ref("NpmPackageDocument"), 304: t.Void(), ...npmErrors(401, 403, 404) },
    })
    .put("/:pkg", doPublish, {
      permission: publish,
      params: pkgParams,
      body: t.Ref("NpmPublishBody"),
      detail: { tags: TAG, summary: "Publish one version", "x-protocol": "npm" } as Record<string, unknown>,
      response: { 201: t.Ref("NpmPublishResponse"), ...npmErrors(401, 403, 409, 413, 422) },
    })
    .get("/:pkg/-/:file", tarball, {
      permission: read,
      params: t.Object({ pkg: t.String(), file: t.String() }),
      detail: { tags: TAG, summary: "Download a version's tarball", "x-protocol": "npm" } as Record<string, unknown>,
      response: { 200: t.Any({ description: "The .tgz archive" }), ...npmErrors(401, 403, 404) },
    })
    // Aliases for clients that send a scoped name unencoded (`/npm/@ops/lib`).
    .get("/:pkg/:name", packument, {
      permission: read,
      params: scopedParams,
      detail: { hide: true, "x-protocol": "npm" } as Record<string, unknown>,
    })
    .put("/:pkg/:name", doPublish, {
      permission: publish,
      params: scopedParams,
      body: t.Ref("NpmPublishBody"),
      detail: { hide: true, "x-protocol": "npm" } as Record<string, unknown>,
    })
    .get("/:pkg/:name/-/:file", tarball, {
      permission: read,
      params: t.Object({ pkg: t.String(), name: t.String(), file: t.String() }),
      detail: { hide: true, "x-protocol": "npm" } as Record<string, unknown>,
    });
}
