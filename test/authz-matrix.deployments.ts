/**
 * Authorization matrix rows of the deployments domain (issue 11): deploy and rollback a service
 * (`deployments.deploy` in the service's environment, so environment policies apply: the
 * `policyRestricted` column keeps only deployments.read in production and is refused a deploy
 * there, allowed in staging), the timeline (`deployments.read`), and the ingress's counters, the
 * estate's processes and its nodes (`estate.manage`).
 *
 * Every allowed caller deploys a fresh service of its own with a signed image of it (201: the
 * rollout is recorded; the scheduler does not run here), and rolls back a fresh service that
 * never ran (404: nothing to roll back to).
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import { ensureResource } from "./authz-matrix.resources";
import { pushApp } from "./deploy-fixtures";

const P = (w: World) => `/api/v1/projects/${w.project.slug}`;

/** A fresh service in `environment` with a signed image pushed for it (`w.vars.service`, `w.vars.digest`). */
function freshService(environment: string, withImage: boolean) {
  return async (w: World) => {
    w.vars.service = w.unique("matrix-deploy");
    await ensureResource(w, "service", w.vars.service, environment, { image: `${w.project.slug}/${w.vars.service}` });
    if (withImage) w.vars.digest = await pushApp(w.t, w.project.slug, w.vars.service, { version: "v1" });
  };
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/projects/:slug/deployments", "deployments.read", "production", { path: (w) => `${P(w)}/deployments`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/deployments", "deployments.read", "staging", { name: "in staging", path: (w) => `${P(w)}/deployments?environment=staging`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/resources/service/:name/deploy", "deployments.deploy", "production", {
    each: freshService("production", true),
    path: (w) => `${P(w)}/resources/service/${w.vars.service}/deploy`,
    body: (w) => ({ digest: w.vars.digest }),
    status: 201,
  }),
  guarded("POST /api/v1/projects/:slug/resources/service/:name/deploy", "deployments.deploy", "staging", {
    name: "in staging",
    each: freshService("staging", true),
    path: (w) => `${P(w)}/resources/service/${w.vars.service}/deploy?environment=staging`,
    body: (w) => ({ digest: w.vars.digest }),
    status: 201,
  }),
  guarded("POST /api/v1/projects/:slug/resources/service/:name/rollback", "deployments.deploy", "production", {
    each: freshService("production", false),
    path: (w) => `${P(w)}/resources/service/${w.vars.service}/rollback`,
    status: 404,
  }),
  guarded("POST /api/v1/projects/:slug/resources/service/:name/rollback", "deployments.deploy", "staging", {
    name: "in staging",
    each: freshService("staging", false),
    path: (w) => `${P(w)}/resources/service/${w.vars.service}/rollback?environment=staging`,
    status: 404,
  }),
  guarded("GET /api/v1/admin/ingress", "estate.manage", "estate", { path: () => "/api/v1/admin/ingress", status: 200 }),
  guarded("GET /api/v1/admin/processes", "estate.manage", "estate", { path: () => "/api/v1/admin/processes", status: 200 }),
  guarded("GET /api/v1/admin/nodes", "estate.manage", "estate", { path: () => "/api/v1/admin/nodes", status: 200 }),
];

registerMatrixDomain({ tags: ["deployments"], rows: ROWS });
