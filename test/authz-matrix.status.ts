/**
 * Authorization matrix rows of the status admin routes (issue 4): components and transitions,
 * all `estate.manage`. The public status document, `/health` and `/readyz` are public.
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import { addComponent } from "../src/domains/status/service";
import { actorOf } from "../src/core/authz/principal";

const C = "/api/v1/status/components";

/** A fresh (operational) component for each request, named in `w.vars.component`. */
function freshComponent(w: World): void {
  const auth = w.setupAuth();
  w.vars.component = w.unique("matrix-component");
  addComponent(w.t.core, { slug: w.vars.component, name: "Matrix component" }, actorOf(auth.principal, auth.meta));
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/status/components", "estate.manage", "estate", { path: () => C, status: 200 }),
  guarded("POST /api/v1/status/components", "estate.manage", "estate", { path: () => C, body: (w) => ({ slug: w.unique("matrix-added"), name: "Added by the matrix" }), status: 201 }),
  guarded("DELETE /api/v1/status/components/:component", "estate.manage", "estate", { each: freshComponent, path: (w) => `${C}/${w.vars.component}`, status: 204 }),
  guarded("POST /api/v1/status/components/:component/transitions", "estate.manage", "estate", {
    each: freshComponent,
    path: (w) => `${C}/${w.vars.component}/transitions`,
    body: () => ({ state: "degraded", reason: "matrix" }),
    status: 201,
  }),
];

registerMatrixDomain({ tags: ["status"], rows: ROWS, publicRoutes: ["GET /health", "GET /readyz", "GET /api/v1/status/public"] });
