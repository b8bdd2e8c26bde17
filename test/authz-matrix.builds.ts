/**
 * Authorization matrix rows of the builds domain (issue 10). Builds live in one environment: the
 * list and create routes evaluate `builds.read` / `builds.run` in `?environment=` (default
 * production), the routes of one build in that build's environment ("in staging" rows show the
 * build's own environment is what counts). The signing public key is public. Builds are queued
 * through the service and never run here (the matrix does not run the scheduler), so a cancel
 * finds its build queued (200) — or, for the one build the queue started, running (202).
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import type { ProjectRef } from "../src/core/core";
import { commitFiles, connect } from "./sources-fixtures";
import { ensureResource } from "./authz-matrix.resources";
import { createBuild } from "../src/domains/builds/service";

const B = (w: World) => `/api/v1/projects/${w.project.slug}/builds`;

const OPS_TOML = `[services.matrix-app]
build = ["true"]
start = "node server.js"
`;

/** The repository `matrix-builds` with a commit, and the service `matrix-app` building from it in both environments. */
async function buildable(w: World): Promise<void> {
  if (w.vars.buildable) return;
  const s = await connect(w.t, w.setupAuth(), "matrix-builds");
  await commitFiles(w.t, s.repo, { "ops.toml": OPS_TOML, "server.js": "require('http').createServer((q, r) => r.end('ok')).listen(process.env.PORT)\n" });
  for (const env of ["production", "staging"]) await ensureResource(w, "service", "matrix-app", env, { source: { repo: s.repo }, replicas: 0 });
  w.vars.buildable = "yes";
}

/** A queued build of `matrix-app` in `environment`; its id. */
async function queueBuild(w: World, environment: string): Promise<string> {
  await buildable(w);
  const auth = w.setupAuth(environment);
  return String((await createBuild(w.t.core, auth.project as ProjectRef, environment, { service: "matrix-app" }, auth)).id);
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/projects/:slug/builds", "builds.read", "production", { setup: buildable, path: B, status: 200 }),
  guarded("GET /api/v1/projects/:slug/builds", "builds.read", "staging", { name: "in staging", setup: buildable, path: (w) => `${B(w)}?environment=staging`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/builds", "builds.run", "production", { setup: buildable, path: B, body: () => ({ service: "matrix-app" }), status: 201 }),
  guarded("POST /api/v1/projects/:slug/builds", "builds.run", "staging", { name: "in staging", setup: buildable, path: (w) => `${B(w)}?environment=staging`, body: () => ({ service: "matrix-app" }), status: 201 }),
  guarded("GET /api/v1/projects/:slug/builds/:id", "builds.read", "production", {
    setup: async (w) => {
      w.vars.build = await queueBuild(w, "production");
    },
    path: (w) => `${B(w)}/${w.vars.build}`,
    status: 200,
  }),
  guarded("GET /api/v1/projects/:slug/builds/:id", "builds.read", "staging", {
    name: "in staging",
    setup: async (w) => {
      w.vars.stagingBuild = await queueBuild(w, "staging");
    },
    path: (w) => `${B(w)}/${w.vars.stagingBuild}`,
    status: 200,
  }),
  guarded("GET /api/v1/projects/:slug/builds/:id/log", "builds.read", "production", {
    setup: async (w) => {
      w.vars.build ??= await queueBuild(w, "production");
    },
    path: (w) => `${B(w)}/${w.vars.build}/log`,
    status: 200,
  }),
  guarded("POST /api/v1/projects/:slug/builds/:id/retry", "builds.run", "production", {
    setup: async (w) => {
      w.vars.build ??= await queueBuild(w, "production");
    },
    path: (w) => `${B(w)}/${w.vars.build}/retry`,
    status: 201,
  }),
  guarded("POST /api/v1/projects/:slug/builds/:id/cancel", "builds.run", "production", {
    each: async (w) => {
      w.vars.cancellable = await queueBuild(w, "production");
    },
    path: (w) => `${B(w)}/${w.vars.cancellable}/cancel`,
    verify: (_w, _c, body) => {
      const status = (JSON.parse(body) as { status: string }).status;
      return status === "cancelled" || status === "cloning" ? null : `cancel answered a build in ${status}`;
    },
  }),
  guarded("POST /api/v1/projects/:slug/builds/:id/cancel", "builds.run", "staging", {
    name: "in staging",
    each: async (w) => {
      w.vars.cancellableStaging = await queueBuild(w, "staging");
    },
    path: (w) => `${B(w)}/${w.vars.cancellableStaging}/cancel`,
  }),
];

registerMatrixDomain({ tags: ["builds"], rows: ROWS, publicRoutes: ["GET /api/v1/signing/public-key"] });
