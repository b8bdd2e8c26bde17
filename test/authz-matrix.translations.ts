/**
 * Authorization matrix rows of the translation routes (issue 13; document 3, Translations). Every
 * route under `/projects/{slug}/translations` is project-level — no environment policy applies —
 * with translations.read for reads and translations.write for writes; `GET /api/v1/tms/bundles`
 * is evaluated anywhere and narrowed per project by the service. Each row's setup puts in place
 * what the route acts on, so every allowed caller reaches the real outcome (`status`).
 */
import { registerMatrixDomain, guarded, holds, type World, type MatrixRow } from "./authz-matrix";
import { actorOf } from "../src/core/authz/principal";
import type { ProjectRef } from "../src/core/core";
import { claimPackage } from "../src/domains/registries/service";
import { createBundle, registerVersion } from "../src/domains/translations/service";
import { makePerson } from "./fixtures";
import { publishNpm } from "./support/translations";

const TR = (w: World) => `/api/v1/projects/${w.project.slug}/translations`;
const PKG = "@ops/matrix-tms-kit";

function setupActor(w: World) {
  const auth = w.setupAuth();
  return { project: auth.project as ProjectRef, actor: actorOf(auth.principal, auth.meta) };
}

async function direct(w: World, method: string, path: string, body?: unknown): Promise<void> {
  const res = await w.t.request(method, path, { token: w.vars.setupSession, body });
  if (res.status >= 300) throw new Error(`matrix setup ${method} ${path}: ${res.status} ${await res.text()}`);
}

/**
 * The world's translations: the project's own bundle `matrix` (one entry), the estate-shared
 * bundle `matrix-common` (one key), and the package bundle of `@ops/matrix-tms-kit` with version
 * 1.0.0 registered in English.
 */
async function bundles(w: World): Promise<void> {
  if (w.vars.tmsOwn) return;
  const { project, actor } = setupActor(w);
  const setter = await makePerson(w.t, [{ role: "developer", project: w.project.slug }]);
  w.vars.setupSession = setter.session;
  w.vars.tmsOwn = String(createBundle(w.t.core, project, { name: w.project.slug }, actor).id);
  w.vars.tmsCommon = String(createBundle(w.t.core, project, { name: "matrix-common", estate: true }, actor).id);
  claimPackage(w.t.core, project, "npm", PKG, actor);
  w.vars.tmsPackage = String(createBundle(w.t.core, project, { name: PKG, package: `npm:${PKG}` }, actor).id);
  await publishNpm(w.t, setter, PKG, "1.0.0");
  registerVersion(w.t.core, project, w.vars.tmsPackage, { locale: "en", version: "1.0.0", tree: { kit: { save: "Save" } } }, actor);
  await direct(w, "PUT", `${TR(w)}/entries`, { bundle: w.project.slug, namespace: "app", key: "title", locale: "en", value: "Matrix" });
  await direct(w, "PUT", `${TR(w)}/entries`, { bundle: "matrix-common", namespace: "common", key: "ok", locale: "en", value: "OK" });
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/projects/:slug/translations", "translations.read", "project", { setup: bundles, path: TR, status: 200 }),
  guarded("POST /api/v1/projects/:slug/translations/attachments", "translations.write", "project", {
    setup: bundles,
    path: (w) => `${TR(w)}/attachments`,
    body: (w) => ({ bundle: Number(w.vars.tmsPackage), version: "1.0.0" }),
    status: 200,
  }),
  guarded("DELETE /api/v1/projects/:slug/translations/attachments/:bundle", "translations.write", "project", {
    setup: bundles,
    each: (w) => direct(w, "POST", `${TR(w)}/attachments`, { bundle: Number(w.vars.tmsPackage), version: "1.0.0" }),
    path: (w) => `${TR(w)}/attachments/${w.vars.tmsPackage}`,
    status: 204,
  }),
  guarded("POST /api/v1/projects/:slug/translations/bundles", "translations.write", "project", {
    path: (w) => `${TR(w)}/bundles`,
    body: (w) => ({ name: w.unique("matrix-bundle") }),
    status: 201,
  }),
  guarded("POST /api/v1/projects/:slug/translations/bundles/:bundle/versions", "translations.write", "project", {
    setup: bundles,
    path: (w) => `${TR(w)}/bundles/${w.vars.tmsPackage}/versions`,
    body: () => ({ locale: "fr", version: "1.0.0", tree: { kit: { save: "Enregistrer" } } }),
    status: 200,
  }),
  guarded("GET /api/v1/projects/:slug/translations/entries", "translations.read", "project", { setup: bundles, path: (w) => `${TR(w)}/entries?bundle=${w.project.slug}`, status: 200 }),
  guarded("PUT /api/v1/projects/:slug/translations/entries", "translations.write", "project", {
    setup: bundles,
    path: (w) => `${TR(w)}/entries`,
    body: (w) => ({ bundle: w.project.slug, namespace: "app", key: "title", locale: "de", value: w.unique("Titel") }),
    status: 200,
  }),
  guarded("DELETE /api/v1/projects/:slug/translations/entries", "translations.write", "project", {
    setup: bundles,
    each: async (w) => {
      w.vars.tmsKey = w.unique("doomed").replace(/[^A-Za-z0-9_-]/g, "-");
      await direct(w, "PUT", `${TR(w)}/entries`, { bundle: w.project.slug, namespace: "app", key: w.vars.tmsKey, locale: "en", value: "Soon gone" });
    },
    path: (w) => `${TR(w)}/entries?bundle=${w.project.slug}&namespace=app&key=${w.vars.tmsKey}`,
    status: 204,
  }),
  guarded("GET /api/v1/projects/:slug/translations/export/:locale", "translations.read", "project", { setup: bundles, path: (w) => `${TR(w)}/export/en`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/translations/shared/:bundle", "translations.read", "project", { setup: bundles, path: (w) => `${TR(w)}/shared/${w.vars.tmsCommon}`, status: 200 }),
  guarded("PUT /api/v1/projects/:slug/translations/shared/:bundle/overrides", "translations.write", "project", {
    setup: bundles,
    path: (w) => `${TR(w)}/shared/${w.vars.tmsCommon}/overrides`,
    body: (w) => ({ namespace: "common", key: "ok", locale: "en", value: w.unique("Fine") }),
    status: 200,
  }),
  guarded("DELETE /api/v1/projects/:slug/translations/shared/:bundle/overrides", "translations.write", "project", {
    setup: bundles,
    each: (w) => direct(w, "PUT", `${TR(w)}/shared/${w.vars.tmsCommon}/overrides`, { namespace: "common", key: "ok", locale: "fr", value: "D'accord" }),
    path: (w) => `${TR(w)}/shared/${w.vars.tmsCommon}/overrides?namespace=common&key=ok&locale=fr`,
    status: 204,
  }),
  guarded("GET /api/v1/tms/bundles", "translations.read", "anywhere", {
    setup: bundles,
    path: () => "/api/v1/tms/bundles",
    status: 200,
    // Anywhere, narrowed per project: the project's own bundle shows exactly to who reads translations there.
    verify: (w, c, body) => {
      const listed = (JSON.parse(body) as Array<{ id: number }>).some((b) => String(b.id) === w.vars.tmsOwn);
      const should = holds(c, "translations.read", "project");
      return listed === should ? null : should ? "the project's own bundle is missing" : "lists an own bundle of a project it cannot read";
    },
  }),
];

registerMatrixDomain({ tags: ["translations"], rows: ROWS });
