/**
 * Authorization matrix rows of the secrets domain (issue 6): secret-group variables, rotation and
 * rendered versions; secrets per deploy unit and their dotenv export; the store's admin routes.
 *
 * Secret groups live in one environment (default production): environment policies apply, so
 * the `policyReadOnly` column reads but cannot write, reveal or rotate in production, and can in
 * staging. Secrets per deploy unit are guarded in every environment their service runs in
 * (matrix-web runs in production, so the policy bites there too); a bucket's are project-level,
 * with no policy. The list of names (secrets.read) stays project-level. The store's routes are
 * `estate.manage`. The seal row unseals again after itself, so the rows after it find the store open.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { registerMatrixDomain, guarded, holds, ESTATE, type World, type MatrixRow, type Where } from "./authz-matrix";
import { resourceFixtures } from "./authz-matrix.resources";
import { placeFor } from "../src/domains/resources/service";
import { setVariable, setSecret } from "../src/domains/secrets/service";
import type { ProjectRef } from "../src/core/core";

const P = (w: World) => `/api/v1/projects/${w.project.slug}`;
const G = (w: World) => `${P(w)}/resources/secret-group/matrix-env`;
const TEXT_VALUE = "matrix-text-value";

/** The resource fixtures plus values: API_KEY (secret) and MODE (text) in both environments, a unit secret of matrix-web. */
async function secretFixtures(w: World): Promise<void> {
  await resourceFixtures(w);
  if (w.vars.secretFixtures) return;
  const project = w.setupAuth().project as ProjectRef;
  for (const env of ["production", "staging"]) {
    const place = placeFor(project, "secret-group", env);
    setVariable(w.t.core, place, "matrix-env", "API_KEY", { value: `matrix-secret-${env}` }, w.setupAuth(env));
    setVariable(w.t.core, place, "matrix-env", "MODE", { value: TEXT_VALUE }, w.setupAuth(env));
  }
  setSecret(w.t.core, project, "matrix-web", "MATRIX_TOKEN", "matrix-unit-secret", w.setupAuth());
  w.vars.secretFixtures = "yes";
}

/** A fresh group variable (or unit secret) for each request, named in `w.vars.fresh`. */
function freshVariable(env: string) {
  return async (w: World) => {
    await secretFixtures(w);
    w.vars.fresh = w.unique("MATRIX_VAR").replace(/-/g, "_");
    setVariable(w.t.core, placeFor(w.setupAuth().project as ProjectRef, "secret-group", env), "matrix-env", w.vars.fresh, { value: "doomed" }, w.setupAuth(env));
  };
}
async function freshUnitSecret(w: World): Promise<void> {
  await secretFixtures(w);
  w.vars.fresh = w.unique("MATRIX_DOOMED").replace(/-/g, "_");
  setSecret(w.t.core, w.setupAuth().project as ProjectRef, "matrix-web", w.vars.fresh, "doomed", w.setupAuth());
}

/** Text values are shown exactly to callers holding secrets.reveal where the group lives. */
const textValueShownTo = (where: Where) => (_w: World, c: Parameters<typeof holds>[0], body: string) => {
  const mode = (JSON.parse(body) as Array<{ name: string; value: string | null }>).find((v) => v.name === "MODE");
  const reveal = holds(c, "secrets.reveal", where);
  if (reveal && mode?.value !== TEXT_VALUE) return "holds secrets.reveal here but the text value was not shown";
  if (!reveal && mode?.value !== null) return "lacks secrets.reveal here but the text value was shown";
  return null;
};

function masterKey(w: World): string {
  return readFileSync(path.join(w.t.dataDir, "keys", "secrets.key"), "utf8").trim();
}

const ROWS: MatrixRow[] = [
  guarded("POST /api/v1/projects/:slug/resources/secret-group/:name/rotate", "secrets.rotate", "production", { setup: secretFixtures, path: (w) => `${G(w)}/rotate`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/resources/secret-group/:name/rotate", "secrets.rotate", "staging", {
    name: "in staging",
    setup: secretFixtures,
    path: (w) => `${G(w)}/rotate?environment=staging`,
    status: 200,
  }),
  guarded("GET /api/v1/projects/:slug/resources/secret-group/:name/variables", "secrets.read", "production", {
    setup: secretFixtures,
    path: (w) => `${G(w)}/variables`,
    status: 200,
    verify: textValueShownTo("production"),
  }),
  guarded("GET /api/v1/projects/:slug/resources/secret-group/:name/variables", "secrets.read", "staging", {
    name: "in staging",
    setup: secretFixtures,
    path: (w) => `${G(w)}/variables?environment=staging`,
    status: 200,
    verify: textValueShownTo("staging"),
  }),
  guarded("PUT /api/v1/projects/:slug/resources/secret-group/:name/variables/:key", "secrets.write", "production", {
    setup: secretFixtures,
    path: (w) => `${G(w)}/variables/API_KEY`,
    body: () => ({ value: "matrix-secret-rotated" }),
    status: 200,
  }),
  guarded("PUT /api/v1/projects/:slug/resources/secret-group/:name/variables/:key", "secrets.write", "staging", {
    name: "in staging",
    setup: secretFixtures,
    path: (w) => `${G(w)}/variables/API_KEY?environment=staging`,
    body: () => ({ value: "matrix-secret-rotated" }),
    status: 200,
  }),
  guarded("DELETE /api/v1/projects/:slug/resources/secret-group/:name/variables/:key", "secrets.write", "production", {
    each: freshVariable("production"),
    path: (w) => `${G(w)}/variables/${w.vars.fresh}`,
    status: 204,
  }),
  guarded("DELETE /api/v1/projects/:slug/resources/secret-group/:name/variables/:key", "secrets.write", "staging", {
    name: "in staging",
    each: freshVariable("staging"),
    path: (w) => `${G(w)}/variables/${w.vars.fresh}?environment=staging`,
    status: 204,
  }),
  guarded("GET /api/v1/projects/:slug/resources/secret-group/:name/versions", "secrets.read", "production", { setup: secretFixtures, path: (w) => `${G(w)}/versions`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/secrets", "secrets.read", "project", { setup: secretFixtures, path: (w) => `${P(w)}/secrets`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/secrets/:service/env", "secrets.reveal", "production", { setup: secretFixtures, path: (w) => `${P(w)}/secrets/matrix-web/env`, status: 200 }),
  guarded("PUT /api/v1/projects/:slug/secrets/:service/:name", "secrets.write", "production", {
    setup: secretFixtures,
    path: (w) => `${P(w)}/secrets/matrix-web/MATRIX_TOKEN`,
    body: () => ({ value: "matrix-unit-secret-rotated" }),
    status: 204,
  }),
  guarded("DELETE /api/v1/projects/:slug/secrets/:service/:name", "secrets.write", "production", {
    each: freshUnitSecret,
    path: (w) => `${P(w)}/secrets/matrix-web/${w.vars.fresh}`,
    status: 204,
  }),
  { route: "GET /api/v1/admin/secrets", permission: "estate.manage", path: () => "/api/v1/admin/secrets", status: 200, expect: ESTATE },
  {
    route: "POST /api/v1/admin/secrets/seal",
    permission: "estate.manage",
    path: () => "/api/v1/admin/secrets/seal",
    status: 204,
    expect: ESTATE,
    after: (w) => w.t.core.secrets.unseal(masterKey(w)),
  },
  {
    route: "POST /api/v1/admin/secrets/unseal",
    permission: "estate.manage",
    path: () => "/api/v1/admin/secrets/unseal",
    body: (w) => ({ key: masterKey(w) }),
    status: 204,
    expect: ESTATE,
  },
];

registerMatrixDomain({ tags: ["secrets"], rows: ROWS });
