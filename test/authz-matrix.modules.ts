/**
 * Authorization matrix rows of the module reads (issue 14; document 3, Package reads). Both routes
 * are project-level reads with packages.read, like the project's package reads. The setup
 * records a module list as a complete publish would, so every allowed caller reaches the notes.
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import { recordPlanForReads } from "./support/modules";

function recorded(w: World): void {
  if (w.vars.modulesRecorded) return;
  recordPlanForReads(w.t, w.t.core.access.findProject(w.project.slug)!, "1.0.0");
  w.vars.modulesRecorded = "yes";
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/projects/:slug/modules", "packages.read", "project", { setup: recorded, path: (w) => `/api/v1/projects/${w.project.slug}/modules`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/modules/:name/notes", "packages.read", "project", { setup: recorded, path: (w) => `/api/v1/projects/${w.project.slug}/modules/alpha/notes`, status: 200 }),
];

registerMatrixDomain({ tags: ["modules"], rows: ROWS });
