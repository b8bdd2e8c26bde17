/**
 * Authorization matrix rows of the registries' `/api/v1` routes (issue 7, DESIGN.md §3 claims):
 * package reads (`packages.read`) and name claims (`packages.publish`), project-level — no
 * environment policy applies — and the estate-wide list, open to any signed-in caller and
 * narrowed per project by the service.
 *
 * The protocol routes (`/npm/`, `/cargo/`, `/v2/`) are not in the matrix: they authenticate with
 * their own credential forms (npm bearer and Basic, cargo's bare token, the OCI Docker token
 * flow) and answer in their own error formats, and they are tested with the real clients (npm,
 * cargo, skopeo) in src/domains/registries/. The runner skips them by path (PROTOCOL_PREFIXES).
 */
import { registerMatrixDomain, guarded, holds, type World, type MatrixRow } from "./authz-matrix";
import { claimPackage } from "../src/domains/registries/service";
import { actorOf } from "../src/core/authz/principal";
import type { ProjectRef } from "../src/core/core";

const PK = (w: World) => `/api/v1/projects/${w.project.slug}/packages`;

function claim(w: World, registry: "npm" | "cargo", name: string): void {
  const auth = w.setupAuth();
  claimPackage(w.t.core, auth.project as ProjectRef, registry, name, actorOf(auth.principal, auth.meta));
}

/** The project's packages: the cargo crate `matrix-crate` and the npm package `@ops/matrix-pkg`. */
function packages(w: World): void {
  if (w.vars.packages) return;
  claim(w, "cargo", "matrix-crate");
  claim(w, "npm", "@ops/matrix-pkg");
  w.vars.packages = "yes";
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/packages", "authenticated", "anywhere", {
    setup: packages,
    path: () => "/api/v1/packages",
    status: 200,
    // Any signed-in caller, narrowed per project (decision 0536): the project's crate shows exactly to who reads packages there.
    verify: (_w, c, body) => {
      const listed = (JSON.parse(body) as { cargo: Array<{ name: string }> }).cargo.some((p) => p.name === "matrix-crate");
      const should = holds(c, "packages.read", "project");
      return listed === should ? null : should ? "the project's crate is missing" : "lists a crate of a project it cannot read";
    },
  }),
  guarded("GET /api/v1/projects/:slug/packages", "packages.read", "project", { setup: packages, path: PK, status: 200 }),
  guarded("GET /api/v1/projects/:slug/packages/:registry", "packages.read", "project", { setup: packages, path: (w) => `${PK(w)}/cargo`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/packages/:registry/:name", "packages.read", "project", { setup: packages, path: (w) => `${PK(w)}/npm/${encodeURIComponent("@ops/matrix-pkg")}`, status: 200 }),
  guarded("PUT /api/v1/projects/:slug/packages/:registry/:name", "packages.publish", "project", { path: (w) => `${PK(w)}/cargo/${w.unique("matrix-claimed")}`, status: 201 }),
  guarded("PUT /api/v1/projects/:slug/packages/:registry/:name", "packages.publish", "project", {
    name: "npm scoped name",
    path: (w) => `${PK(w)}/npm/${encodeURIComponent(`@ops/${w.unique("matrix-claimed")}`)}`,
    status: 201,
  }),
  guarded("DELETE /api/v1/projects/:slug/packages/:registry/:name", "packages.publish", "project", {
    each: (w) => {
      w.vars.released = w.unique("matrix-released");
      claim(w, "cargo", w.vars.released);
    },
    path: (w) => `${PK(w)}/cargo/${w.vars.released}`,
    status: 204,
  }),
];

registerMatrixDomain({ tags: ["packages"], rows: ROWS });
