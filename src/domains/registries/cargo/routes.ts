/**
 * The cargo registry at `/cargo/`: `config.json`, the sparse index at every path layout, and the
 * Web API cargo builds as `{api}/api/v1/…` (publish, download, yank, unyank). Configure
 * `index = "sparse+<public>/cargo/"` with a credential provider (`cargo:token`): `config.json`
 * says `auth-required`, so cargo sends the ops token as the bare `Authorization` value on every
 * index, download and API request. The project is the one holding the crate's claim.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../../core/core";
import { authzPlugin, type ResolveContext } from "../../../core/authz/plugin";
import { actorOf } from "../../../core/authz/principal";
import { OpsError } from "../../../core/errors";
import { claimOf, resolveForPublish, resolveForRead, auditDenied } from "../shared/resolve";
import { evaluate } from "../../../core/authz/effective";
import { readDocument, notModified } from "../shared/documents";
import { findFile } from "../shared/reads";
import { setYanked } from "../shared/publish";
import { readBodyWithLimit, rawParse } from "../shared/body";
import { withoutBuild } from "../shared/semver";
import { INDEX, isIndexPathOf, renderCargo } from "./render";
import { parsePublishBody, publishCrate, type ParsedPublish } from "./service";

const TAG = ["cargo registry"];
const detail = (summary: string, extra: Record<string, unknown> = {}) => ({ tags: TAG, summary, "x-protocol": "cargo", ...extra }) as Record<string, unknown>;

export const CargoErrorBody = t.Object({ errors: t.Array(t.Object({ detail: t.String() })) }, { title: "CargoErrorBody" });
export const CargoConfig = t.Object({ dl: t.String(), api: t.String(), "auth-required": t.Boolean() }, { title: "CargoConfig" });
export const CargoPublishResponse = t.Object(
  { warnings: t.Object({ invalid_categories: t.Array(t.String()), invalid_badges: t.Array(t.String()), other: t.Array(t.String()) }) },
  { title: "CargoPublishResponse" },
);
export const CargoOk = t.Object({ ok: t.Boolean() }, { title: "CargoOk" });

const cargoErrors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, t.Ref("CargoErrorBody")]));
const parsedByRequest = new WeakMap<Request, ParsedPublish>();

function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

export function cargoRoutes(core: Core) {
  const read = (nameOf: (p: Record<string, string | undefined>) => string) => ({
    key: "packages.read" as const,
    environment: "none" as const,
    project: (ctx: ResolveContext) => resolveForRead(core, ctx, "cargo", nameOf(ctx.params)),
  });
  const write = { key: "packages.publish" as const, environment: "none" as const, project: (ctx: ResolveContext) => resolveForRead(core, ctx, "cargo", ctx.params.name ?? "") };
  // The crate's name is in the body: read and parse it (400 when malformed) to find the claim.
  const publish = {
    key: "packages.publish" as const,
    environment: "none" as const,
    project: async (ctx: ResolveContext) => {
      // Refuse a caller who may publish nowhere before reading (up to 64 MiB of) body.
      if (!evaluate(ctx.principal, core.access.grants(ctx.principal), { kind: "any" }).permissions.has("packages.publish")) {
        auditDenied(core, ctx, "packages.publish", "role lacks packages.publish in every project");
        throw new OpsError("forbidden", "Your access does not include packages.publish in any project.", { permission: "packages.publish" });
      }
      const parsed = parsePublishBody(await readBodyWithLimit(ctx.request, core.config.maxPublishBytes));
      parsedByRequest.set(ctx.request, parsed);
      return resolveForPublish(core, ctx, "cargo", parsed.metadata.name);
    },
  };

  const indexFile = (layout: (p: Record<string, string>) => string[]) => ({ request, params: raw }: { request: Request; params: Record<string, unknown> }) => {
    const params = raw as Record<string, string>;
    const pkg = claimOf(request);
    const segments = layout(params);
    if (!isIndexPathOf(segments, params.name)) throw new OpsError("not_found", `No such crate "${params.name}" at this index path.`);
    const doc = readDocument(core, pkg, INDEX, renderCargo, request);
    if (doc.body === "") throw new OpsError("not_found", `The crate "${pkg.name}" has no published versions.`);
    const headers = { etag: doc.etag, "last-modified": httpDate(doc.updatedAt), "cache-control": "no-cache" };
    if (notModified(request, doc)) return new Response(null, { status: 304, headers });
    return new Response(doc.body, { headers: { ...headers, "content-type": "text/plain; charset=utf-8" } });
  };
  const indexOpts = (summary: string, params: ReturnType<typeof t.Object>) => ({
    permission: read((p) => p.name ?? ""),
    params,
    detail: detail(summary),
    response: { 200: t.String({ description: "One JSON object per line, one line per version" }), 304: t.Void(), ...cargoErrors(401, 403, 404) },
  });

  return new Elysia({ name: "registries-cargo", prefix: "/cargo" })
    .use(authzPlugin(core))
    .model({ CargoErrorBody, CargoConfig, CargoPublishResponse, CargoOk })
    .get(
      "/config.json",
      () => {
        const base = core.config.publicUrl;
        return { dl: `${base}/cargo/api/v1/crates`, api: `${base}/cargo`, "auth-required": true };
      },
      { public: true, detail: detail("Discovery document: where to download and publish"), response: { 200: t.Ref("CargoConfig") } },
    )
    .get("/1/:name", indexFile(() => ["1"]), indexOpts("Index file of a one-character crate name", t.Object({ name: t.String() })))
    .get("/2/:name", indexFile(() => ["2"]), indexOpts("Index file of a two-character crate name", t.Object({ name: t.String() })))
    .get("/3/:first/:name", indexFile((p) => ["3", p.first]), indexOpts("Index file of a three-character crate name", t.Object({ first: t.String(), name: t.String() })))
    .get("/:prefix/:infix/:name", indexFile((p) => [p.prefix, p.infix]), indexOpts("Index file of a crate name of four or more characters", t.Object({ prefix: t.String(), infix: t.String(), name: t.String() })))
    .put(
      "/api/v1/crates/new",
      async ({ request, auth }) => {
        const parsed = parsedByRequest.get(request)!;
        await publishCrate(core, claimOf(request), auth.project!, parsed, { name: auth.principal.name, operatorId: auth.principal.operatorId }, actorOf(auth.principal, auth.meta));
        return { warnings: { invalid_categories: [], invalid_badges: [], other: [] } };
      },
      {
        permission: publish,
        parse: rawParse,
        detail: detail("Publish one version (length-prefixed metadata and .crate)"),
        response: { 200: t.Ref("CargoPublishResponse"), ...cargoErrors(400, 401, 403, 409, 413) },
      },
    )
    .get(
      "/api/v1/crates/:name/:version/download",
      ({ request, params }) => {
        const pkg = claimOf(request);
        const file = findFile(core, pkg, `${pkg.name}-${params.version}.crate`);
        const blob = file ? core.blobs.open(file.digest) : null;
        if (!file || !blob) throw new OpsError("not_found", `No version ${params.version} of ${pkg.name}.`);
        return new Response(blob, { headers: { "content-type": "application/gzip", "content-length": String(file.size), "cache-control": "private, max-age=31536000, immutable" } });
      },
      {
        permission: read((p) => p.name ?? ""),
        params: t.Object({ name: t.String(), version: t.String() }),
        detail: detail("Download a version's .crate archive"),
        response: { 200: t.Any({ description: "The .crate archive" }), ...cargoErrors(401, 403, 404) },
      },
    )
    .delete(
      "/api/v1/crates/:name/:version/yank",
      ({ request, params, auth }) => {
        setYanked(core, claimOf(request), auth.project!, withoutBuild(params.version), true, actorOf(auth.principal, auth.meta), renderCargo);
        return { ok: true };
      },
      {
        permission: write,
        params: t.Object({ name: t.String(), version: t.String() }),
        detail: detail("Yank a version: new lockfiles stop choosing it"),
        response: { 200: t.Ref("CargoOk"), ...cargoErrors(401, 403, 404) },
      },
    )
    .put(
      "/api/v1/crates/:name/:version/unyank",
      ({ request, params, auth }) => {
        setYanked(core, claimOf(request), auth.project!, withoutBuild(params.version), false, actorOf(auth.principal, auth.meta), renderCargo);
        return { ok: true };
      },
      {
        permission: write,
        parse: rawParse,
        params: t.Object({ name: t.String(), version: t.String() }),
        detail: detail("Unyank a version"),
        response: { 200: t.Ref("CargoOk"), ...cargoErrors(401, 403, 404) },
      },
    );
}
