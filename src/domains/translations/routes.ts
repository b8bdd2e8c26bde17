/**
 * Translation routes (document 3, Translations): under `/api/v1/projects/{slug}/translations`,
 * plus `GET /api/v1/tms/bundles`. Every route is project-level (no environment policy): reads
 * need translations.read and writes translations.write in the project of the path — the bundle's
 * home for entries and versions, the composing project for attachments and overrides.
 */
import { Elysia, t } from "elysia";
import type { Core, ProjectRef } from "../../core/core";
import { authzPlugin, type AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { errors, NoContent, IdParam } from "../../core/http-schemas";
import { translationModels } from "./model";
import { createBundle, projectTranslations, visibleBundles } from "./bundles";
import { deleteEntry, listEntries, setEntry } from "./entries";
import { registerVersion } from "./versions";
import { attachBundle, deleteOverride, detachBundle, setOverride, sharedBundle } from "./sharing";
import { exportLocale } from "./compose";
import { EXPORT_FORMATS } from "./formats";

const TAG = ["translations"];
const READ = { key: "translations.read", environment: "none" } as const;
const WRITE = { key: "translations.write", environment: "none" } as const;
const Slug = t.Object({ slug: t.String() });
const SlugBundle = t.Object({ slug: t.String(), bundle: IdParam("Bundle id") });
const KeyQuery = {
  namespace: t.String({ description: "Namespace of the key" }),
  key: t.String({ description: "Dotted key" }),
};

const project = (auth: AuthContext) => auth.project as ProjectRef;
const actor = (auth: AuthContext) => actorOf(auth.principal, auth.meta);

export function translationRoutes(core: Core) {
  return new Elysia({ name: "translations", prefix: "/api/v1" })
    .use(authzPlugin(core))
    .model(translationModels)
    .get("/projects/:slug/translations", ({ auth }) => projectTranslations(core, project(auth)), {
      permission: READ,
      params: Slug,
      detail: { tags: TAG, summary: "The project's own bundles and the shared ones it composes" },
      response: { 200: t.Ref("ProjectTranslationsResponse"), ...errors(401, 403, 404) },
    })
    .post("/projects/:slug/translations/attachments", ({ auth, body }) => attachBundle(core, project(auth), body, actor(auth)), {
      permission: WRITE,
      params: Slug,
      body: "AttachRequest",
      detail: { tags: TAG, summary: "Attach a package bundle at the installed version, or move it to another (the same call)" },
      response: { 200: t.Ref("SharedBundleSummary"), ...errors(401, 403, 404, 409, 422) },
    })
    .delete(
      "/projects/:slug/translations/attachments/:bundle",
      ({ auth, params, set }) => {
        detachBundle(core, project(auth), params.bundle, actor(auth));
        set.status = 204;
        return undefined;
      },
      {
        permission: WRITE,
        params: SlugBundle,
        detail: { tags: TAG, summary: "Detach a package bundle (the project's overrides of it are kept)" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409) },
      },
    )
    .post(
      "/projects/:slug/translations/bundles",
      ({ auth, body, set }) => {
        const b = createBundle(core, project(auth), body, actor(auth));
        set.status = 201;
        return { id: b.id, name: b.name, owner: b.owner };
      },
      {
        permission: WRITE,
        params: Slug,
        body: "CreateBundleRequest",
        detail: { tags: TAG, summary: "Create an own, estate-shared or package bundle" },
        response: { 201: t.Ref("CreateBundleResponse"), ...errors(401, 403, 404, 409, 422) },
      },
    )
    .post("/projects/:slug/translations/bundles/:bundle/versions", ({ auth, params, body }) => registerVersion(core, project(auth), params.bundle, body, actor(auth)), {
      permission: WRITE,
      params: t.Object({ slug: t.String(), bundle: t.String({ description: "The bundle's id, or its name (a package bundle: the package name)" }) }),
      body: "RegisterVersionRequest",
      detail: { tags: TAG, summary: "Register a package bundle's version for one locale (the publish that ships the locale files calls it once per locale)" },
      response: { 200: t.Ref("RegisterVersionResponse"), ...errors(401, 403, 404, 409, 422) },
    })
    .get("/projects/:slug/translations/entries", ({ auth, query }) => listEntries(core, project(auth), query), {
      permission: READ,
      params: Slug,
      query: t.Object({
        bundle: t.String({ description: "The bundle's id, or the name of one of the project's bundles" }),
        namespace: t.Optional(t.String()),
        q: t.Optional(t.String({ description: "Case-insensitive substring of the key or any locale's value" })),
        missing_only: t.Optional(t.Boolean({ description: "Only keys missing a value in at least one locale" })),
      }),
      detail: { tags: TAG, summary: "The keys of one of the project's bundles with every locale's value" },
      response: { 200: t.Array(t.Ref("EntryResponse")), ...errors(401, 403, 404, 422) },
    })
    .put("/projects/:slug/translations/entries", ({ auth, body }) => setEntry(core, project(auth), body, actor(auth)), {
      permission: WRITE,
      params: Slug,
      body: "SetOwnEntryRequest",
      detail: { tags: TAG, summary: "Create or edit one value in one of the project's bundles (status review awaits approval)" },
      response: { 200: t.Ref("SetEntryResponse"), ...errors(401, 403, 404, 409, 422) },
    })
    .delete(
      "/projects/:slug/translations/entries",
      ({ auth, query, set }) => {
        deleteEntry(core, project(auth), query, actor(auth));
        set.status = 204;
        return undefined;
      },
      {
        permission: WRITE,
        params: Slug,
        query: t.Object({ bundle: t.String(), ...KeyQuery }),
        detail: { tags: TAG, summary: "Remove a key in every locale; its values go to history" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422) },
      },
    )
    .get(
      "/projects/:slug/translations/export/:locale",
      ({ auth, params, query, request, set }) => {
        const r = exportLocale(core, project(auth), { locale: params.locale, bundle: query.bundle, format: query.format, namespace: query.namespace });
        const headers: Record<string, string> = { etag: r.etag, "cache-control": "private, no-cache", vary: "authorization, cookie" };
        const ifNoneMatch = request.headers.get("if-none-match");
        if (ifNoneMatch !== null && ifNoneMatch.split(",").some((e) => e.trim().replace(/^W\//, "") === r.etag)) return new Response(null, { status: 304, headers });
        // The bytes themselves, headers through `set`: a returned Response with a body would be
        // re-wrapped as a stream by Elysia (to add the request id), costing a copy per request.
        Object.assign(set.headers, headers, { "content-type": r.contentType });
        if (query.format === "xliff" || query.format === "po") set.headers["content-disposition"] = `attachment; filename="${r.filename.replace(/[^A-Za-z0-9._@-]/g, "_")}"`;
        return r.body;
      },
      {
        permission: READ,
        params: t.Object({ slug: t.String(), locale: t.String({ description: "BCP 47 tag" }) }),
        query: t.Object({
          bundle: t.Optional(t.String({ description: "Which of the project's own bundles the composition is built on; default the one named like the project" })),
          format: t.Optional(t.Union(EXPORT_FORMATS.map((f) => t.Literal(f)), { description: "json (the locale tree, default), flat (one object of namespace.key), xliff (XLIFF 2.0) or po (gettext)" })),
          namespace: t.Optional(t.String({ description: "Only this namespace (json: its tree alone; flat: bare keys)" })),
        }),
        detail: { tags: TAG, summary: "The composed locale: own text, overrides, then shared bundles at the versions used; per-key fallback to the source locale" },
        response: {
          200: t.Unknown({ description: "The composed locale tree (json), a flat object (flat), an XLIFF 2.0 document (xliff) or a gettext PO file (po)" }),
          304: t.Void({ description: "Not modified (If-None-Match matched the ETag)" }),
          ...errors(401, 403, 404, 422),
        },
      },
    )
    .get("/projects/:slug/translations/shared/:bundle", ({ auth, params, query }) => sharedBundle(core, project(auth), params.bundle, query.locale), {
      permission: READ,
      params: SlugBundle,
      query: t.Object({ locale: t.Optional(t.String({ description: "Default: the bundle's source locale" })) }),
      detail: { tags: TAG, summary: "A shared bundle as this project uses it, with its overrides in one locale" },
      response: { 200: t.Ref("SharedBundleResponse"), ...errors(401, 403, 404, 422) },
    })
    .put("/projects/:slug/translations/shared/:bundle/overrides", ({ auth, params, body }) => setOverride(core, project(auth), params.bundle, body, actor(auth)), {
      permission: WRITE,
      params: SlugBundle,
      body: "SetOverrideRequest",
      detail: { tags: TAG, summary: "Override a shared key in one locale for this project" },
      response: { 200: t.Ref("OverrideResponse"), ...errors(401, 403, 404, 409, 422) },
    })
    .delete(
      "/projects/:slug/translations/shared/:bundle/overrides",
      ({ auth, params, query, set }) => {
        deleteOverride(core, project(auth), params.bundle, query, actor(auth));
        set.status = 204;
        return undefined;
      },
      {
        permission: WRITE,
        params: SlugBundle,
        query: t.Object({ locale: t.String(), ...KeyQuery }),
        detail: { tags: TAG, summary: "Remove an override: the shared bundle's own value composes again" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422) },
      },
    )
    .get("/tms/bundles", ({ auth }) => visibleBundles(core, auth.principal), {
      permission: "translations.read",
      detail: { tags: TAG, summary: "Every bundle visible to the caller: estate-shared, then package, then project bundles" },
      response: { 200: t.Array(t.Ref("BundleSummary")), ...errors(401, 403) },
    });
}
