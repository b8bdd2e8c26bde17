/**
 * CLI routes: releases (publish, current, download), install codes and the installer.
 *
 * Release reads need `project.read` somewhere (held by every fixed role): anyone with a role in
 * any project may fetch the CLI, an operator with none gets 403. Publishing is `estate.manage`;
 * the body is the raw binary (`?version=&target=`), streamed into the blob store.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { errors, ErrorBody } from "../../core/http-schemas";
import { OpsError } from "../../core/errors";
import { cliModels, PublishReleaseQuery, ReleaseParams, ReleaseQuery } from "./model";
import { createInstallCode, currentRelease, installerRefusal, openRelease, publishRelease, redeemInstallCode, toReleaseResponse } from "./service";

function bearerOf(request: Request): string | null {
  const h = request.headers.get("authorization")?.trim() ?? "";
  return /^bearer\s+/i.test(h) ? h.replace(/^bearer\s+/i, "").trim() || null : null;
}

/** True when the client asks for JSON first (an API client rather than curl piping into sh). */
function wantsJson(request: Request): boolean {
  const accept = request.headers.get("accept") ?? "";
  return /^\s*application\/(problem\+)?json/i.test(accept);
}

export function cliRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/cli", tags: ["cli"] })
    .use(authzPlugin(core))
    .model({ ...cliModels, ErrorBody })
    .post("/install-codes", ({ body, auth }) => createInstallCode(core, body.project, auth), {
      permission: "authenticated",
      body: "InstallCodeBody",
      detail: { summary: "Mint a single-use install code (opsi_) for the caller's role in one project" },
      response: { 200: t.Ref("InstallCodeResponse"), ...errors(401, 403, 404, 422) },
    })
    .get(
      "/install.sh",
      ({ request, meta }) => {
        const headers = { "content-type": "text/x-shellscript; charset=utf-8", "cache-control": "no-store", "content-disposition": 'inline; filename="install.sh"' };
        try {
          return new Response(redeemInstallCode(core, bearerOf(request), meta), { headers });
        } catch (e) {
          // A refusal piped into sh must say why, not run JSON as a command (docs/decisions/0360).
          if (!(e instanceof OpsError) || wantsJson(request)) throw e;
          return new Response(installerRefusal(e.message), { status: e.status, headers: { ...headers, ...e.headers } });
        }
      },
      {
        public: true,
        detail: {
          summary: "The installer (text/x-shellscript), holding a freshly minted token; the install code arrives as Authorization: Bearer opsi_…",
          description: "A refusal (401, 503) is a two-line script that prints the reason and exits 1, unless the request accepts application/json.",
        },
        response: { 200: t.String({ description: "text/x-shellscript" }), ...errors(401, 503) },
      },
    )
    .get("/release", ({ query }) => toReleaseResponse(currentRelease(core, query.target)), {
      permission: "project.read",
      query: ReleaseQuery,
      detail: { summary: "The current release for a target (the one published last)" },
      response: { 200: t.Ref("CliReleaseResponse"), ...errors(401, 403, 404, 422) },
    })
    .get(
      "/releases/:version/:target/download",
      ({ params }) => {
        const { row, blob } = openRelease(core, params.version, params.target);
        return new Response(blob, {
          headers: {
            "content-type": "application/octet-stream",
            "content-length": String(row.size),
            "content-disposition": `attachment; filename="ops-${row.target}"`,
            etag: `"${row.digest}"`,
            "x-ops-digest": `sha256:${row.digest}`,
            "cache-control": "private, max-age=31536000, immutable",
          },
        });
      },
      {
        permission: "project.read",
        params: ReleaseParams,
        detail: { summary: "Download a release's binary (application/octet-stream)" },
        response: { 200: t.String({ format: "binary", description: "The binary, application/octet-stream" }), ...errors(401, 403, 404, 422) },
      },
    )
    .post(
      "/releases",
      async ({ query, request, auth, set }) => {
        if (request.bodyUsed) throw new OpsError("unsupported_media_type", "Send the binary as application/octet-stream.");
        if (!request.body) throw new OpsError("validation_failed", "body: send the binary as the request body.", { fields: [{ path: "body", message: "missing" }] });
        const release = await publishRelease(core, { version: query.version, target: query.target, digest: query.digest, body: request.body, publishedBy: auth.principal.operatorId }, actorOf(auth.principal, auth.meta));
        set.status = 201;
        return release;
      },
      {
        permission: "estate.manage",
        // The handler streams request.body into the blob store; nothing is buffered here.
        parse: () => ({}),
        query: PublishReleaseQuery,
        detail: {
          summary: "Publish a CLI binary (raw bytes as the body; ?version=&target=)",
          requestBody: { required: true, content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
        },
        response: { 201: t.Ref("CliReleaseResponse"), ...errors(401, 403, 409, 413, 415, 422) },
      },
    );
}
