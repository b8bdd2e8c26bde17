/**
 * Authorization matrix rows of the alerts domain (issue 36): reading a project's channels, rules,
 * silences and deliveries takes `obs.read`, changing them `project.settings` (both project-level);
 * the estate's allowed private targets take `estate.manage`.
 */
import { registerMatrixDomain, guarded, type MatrixRow } from "./authz-matrix";

const NO_ID = "0190a0a0-0000-7000-8000-000000000000";
const P = (w: { project: { slug: string } }) => `/api/v1/projects/${w.project.slug}`;

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/projects/:slug/alert-channels", "obs.read", "project", { path: (w) => `${P(w)}/alert-channels`, status: 200 }),
  // The metadata address: every allowed caller gets the 422 of a refused target.
  guarded("POST /api/v1/projects/:slug/alert-channels", "project.settings", "project", {
    path: (w) => `${P(w)}/alert-channels`,
    body: (w) => ({ name: w.unique("ch"), kind: "webhook", url: "http://169.254.169.254/latest/meta-data/" }),
    status: 422,
  }),
  guarded("DELETE /api/v1/projects/:slug/alert-channels/:id", "project.settings", "project", { path: (w) => `${P(w)}/alert-channels/${NO_ID}`, status: 404 }),
  guarded("GET /api/v1/projects/:slug/alert-rules", "obs.read", "project", { path: (w) => `${P(w)}/alert-rules`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/alert-rules", "project.settings", "project", {
    path: (w) => `${P(w)}/alert-rules`,
    body: (w) => ({ name: w.unique("rule"), kind: "metric", metric: "matrix.requests", threshold: 1, channels: [] }),
    status: 201,
  }),
  guarded("DELETE /api/v1/projects/:slug/alert-rules/:id", "project.settings", "project", { path: (w) => `${P(w)}/alert-rules/${NO_ID}`, status: 404 }),
  guarded("GET /api/v1/projects/:slug/alert-silences", "obs.read", "project", { path: (w) => `${P(w)}/alert-silences`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/alert-silences", "project.settings", "project", { path: (w) => `${P(w)}/alert-silences`, body: () => ({ minutes: 1 }), status: 201 }),
  guarded("DELETE /api/v1/projects/:slug/alert-silences/:id", "project.settings", "project", { path: (w) => `${P(w)}/alert-silences/${NO_ID}`, status: 404 }),
  guarded("GET /api/v1/projects/:slug/alert-deliveries", "obs.read", "project", { path: (w) => `${P(w)}/alert-deliveries`, status: 200 }),
  guarded("GET /api/v1/estate/alert-settings", "estate.manage", "estate", { path: () => "/api/v1/estate/alert-settings", status: 200 }),
  guarded("PUT /api/v1/estate/alert-settings", "estate.manage", "estate", { path: () => "/api/v1/estate/alert-settings", body: () => ({ allow_private_targets: [] }), status: 200 }),
];

registerMatrixDomain({ tags: ["alerts"], rows: ROWS });
