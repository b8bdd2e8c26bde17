/**
 * Authorization matrix rows of the resources domain (issue 6): the catalog, the typed-resource
 * routes and the type actions (bucket check, database runbook and password, job runs).
 *
 * Where the macro evaluates them: resources of every type but `bucket` live in one environment
 * (`?environment=`, default production), so environment policies apply — the `policyReadOnly`
 * column (a role holding every resources key, read-only in production by policy) is allowed to
 * read but refused every write, destroy, job run and database action in production, and allowed
 * them in staging (the "in staging" rows). Buckets are project-level: no policy applies there.
 * Fixtures are created once through the services (`resourceFixtures`), shared by every row and
 * by the secrets rows.
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import { createResource, findResource, placeFor, requestRun } from "../src/domains/resources/service";
import type { ProjectRef } from "../src/core/core";

const P = (w: World) => `/api/v1/projects/${w.project.slug}`;
const R = (w: World) => `${P(w)}/resources`;

function projectOf(w: World): ProjectRef {
  return w.setupAuth().project as ProjectRef;
}

/** Create a resource through the service unless it exists. */
export async function ensureResource(w: World, type: string, name: string, environment: string | null, spec: unknown): Promise<void> {
  const project = projectOf(w);
  if (findResource(w.t.core.db, placeFor(project, type as never, environment), type as never, name)) return;
  await createResource(w.t.core, { project, type, name, environment }, spec, w.setupAuth(environment));
}

/**
 * What the resources and secrets rows act on, in production and in staging: a secret group
 * `matrix-env` (a secret and a text variable, declared; values set by the secrets rows' setup), a
 * service `matrix-web` mounting it, jobs `matrix-job` and `matrix-logged`, an adopted database
 * `matrix-db` (no plane needed), and the project-level bucket `matrix-files`.
 */
export async function resourceFixtures(w: World): Promise<void> {
  if (w.vars.resourceFixtures) return;
  for (const env of ["production", "staging"]) {
    await ensureResource(w, "secret-group", "matrix-env", env, { variables: [{ name: "API_KEY", kind: "secret" }, { name: "MODE", kind: "text" }] });
    await ensureResource(w, "service", "matrix-web", env, { image: "registry.example/matrix-web:1", env_group: "matrix-env", replicas: 0 });
    await ensureResource(w, "job", "matrix-job", env, { command: "true" });
    await ensureResource(w, "job", "matrix-logged", env, { command: "echo matrix" });
  }
  await ensureResource(w, "database", "matrix-db", "production", { engine: "postgres", adopted: true, database: "matrix_legacy" });
  await ensureResource(w, "bucket", "matrix-files", null, {});
  const place = placeFor(projectOf(w), "job", "production");
  w.vars.loggedRun = String(requestRun(w.t.core, place, "matrix-logged", w.setupAuth("production")).id);
  w.vars.resourceFixtures = "yes";
}

/** A fresh resource for each request of a row (so every allowed caller really acts on one). */
function freshEach(type: string, environment: string | null, spec: unknown) {
  return async (w: World) => {
    w.vars.fresh = w.unique(`matrix-${type === "secret-group" ? "group" : type}`);
    await ensureResource(w, type, w.vars.fresh, environment, spec);
  };
}

const job = (command = "true") => ({ command });

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/catalog", "authenticated", "anywhere", { path: () => "/api/v1/catalog", status: 200 }),
  guarded("GET /api/v1/projects/:slug/resources", "resources.read", "production", {
    setup: resourceFixtures,
    path: R,
    status: 200,
    verify: (_w, _c, body) => (JSON.parse(body).some((r: { name: string }) => r.name === "matrix-files") ? null : "the list lacks the project-level bucket"),
  }),
  guarded("GET /api/v1/projects/:slug/resources", "resources.read", "staging", { name: "in staging", setup: resourceFixtures, path: (w) => `${R(w)}?environment=staging`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/resources/bucket/:name/check", "resources.read", "project", { setup: resourceFixtures, path: (w) => `${R(w)}/bucket/matrix-files/check`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/resources/database/:name/restore-runbook", "databases.manage", "production", {
    setup: resourceFixtures,
    path: (w) => `${R(w)}/database/matrix-db/restore-runbook`,
    status: 200,
  }),
  // An adopted database's password is not ops's to rotate: every allowed caller gets that 409.
  guarded("POST /api/v1/projects/:slug/resources/database/:name/rotate-password", "databases.manage", "production", {
    setup: resourceFixtures,
    path: (w) => `${R(w)}/database/matrix-db/rotate-password`,
    status: 409,
  }),
  guarded("POST /api/v1/projects/:slug/resources/job/:name/run", "jobs.run", "production", {
    each: freshEach("job", "production", job()),
    path: (w) => `${R(w)}/job/${w.vars.fresh}/run`,
    status: 202,
  }),
  guarded("POST /api/v1/projects/:slug/resources/job/:name/run", "jobs.run", "staging", {
    name: "in staging",
    each: freshEach("job", "staging", job()),
    path: (w) => `${R(w)}/job/${w.vars.fresh}/run?environment=staging`,
    status: 202,
  }),
  guarded("GET /api/v1/projects/:slug/resources/job/:name/runs", "resources.read", "production", { setup: resourceFixtures, path: (w) => `${R(w)}/job/matrix-logged/runs`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/resources/job/:name/runs/:id/log", "resources.read", "production", {
    setup: resourceFixtures,
    path: (w) => `${R(w)}/job/matrix-logged/runs/${w.vars.loggedRun}/log`,
    status: 200,
  }),
  guarded("GET /api/v1/projects/:slug/resources/:type", "resources.read", "production", { setup: resourceFixtures, path: (w) => `${R(w)}/job`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/resources/:type", "resources.read", "project", { name: "bucket, project-level", setup: resourceFixtures, path: (w) => `${R(w)}/bucket`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/resources/:type", "resources.write", "production", {
    path: (w) => `${R(w)}/job`,
    body: (w) => ({ name: w.unique("matrix-made"), spec: job() }),
    status: 201,
  }),
  guarded("POST /api/v1/projects/:slug/resources/:type", "resources.write", "staging", {
    name: "in staging",
    path: (w) => `${R(w)}/job?environment=staging`,
    body: (w) => ({ name: w.unique("matrix-made"), spec: job() }),
    status: 201,
  }),
  guarded("POST /api/v1/projects/:slug/resources/:type", "resources.write", "project", {
    name: "bucket, project-level",
    path: (w) => `${R(w)}/bucket`,
    body: (w) => ({ name: w.unique("matrix-bucket"), spec: {} }),
    status: 201,
  }),
  guarded("GET /api/v1/projects/:slug/resources/:type/:name", "resources.read", "production", { setup: resourceFixtures, path: (w) => `${R(w)}/job/matrix-job`, status: 200 }),
  guarded("PUT /api/v1/projects/:slug/resources/:type/:name", "resources.write", "production", {
    setup: resourceFixtures,
    path: (w) => `${R(w)}/job/matrix-job`,
    body: () => ({ spec: job("true # matrix") }),
    status: 200,
  }),
  guarded("PUT /api/v1/projects/:slug/resources/:type/:name", "resources.write", "staging", {
    name: "in staging",
    setup: resourceFixtures,
    path: (w) => `${R(w)}/job/matrix-job?environment=staging`,
    body: () => ({ spec: job("true # matrix") }),
    status: 200,
  }),
  guarded("DELETE /api/v1/projects/:slug/resources/:type/:name", "resources.destroy", "production", {
    each: freshEach("job", "production", job()),
    path: (w) => `${R(w)}/job/${w.vars.fresh}`,
    status: 204,
  }),
  guarded("DELETE /api/v1/projects/:slug/resources/:type/:name", "resources.destroy", "staging", {
    name: "in staging",
    each: freshEach("job", "staging", job()),
    path: (w) => `${R(w)}/job/${w.vars.fresh}?environment=staging`,
    status: 204,
  }),
  guarded("DELETE /api/v1/projects/:slug/resources/:type/:name", "resources.destroy", "project", {
    name: "bucket, project-level",
    each: freshEach("bucket", null, {}),
    path: (w) => `${R(w)}/bucket/${w.vars.fresh}`,
    status: 204,
  }),
  guarded("POST /api/v1/projects/:slug/resources/:type/:name/observe", "resources.read", "production", { setup: resourceFixtures, path: (w) => `${R(w)}/job/matrix-job/observe`, status: 200 }),
];

registerMatrixDomain({ tags: ["resources"], rows: ROWS });
