/** Authorization matrix rows of issue 23: the backup status and the self-update button, both `estate.manage`. */
import { registerMatrixDomain, guarded, type MatrixRow } from "./authz-matrix";

const ROWS: MatrixRow[] = [guarded("GET /api/v1/backups", "estate.manage", "estate", { path: () => "/api/v1/backups", status: 200 })];

registerMatrixDomain({ tags: ["backups"], rows: ROWS });

// The console's update button: estate.manage; a test server runs from a checkout, so the allowed
// answer is its 409.
registerMatrixDomain({
  tags: ["estate"],
  rows: [guarded("POST /api/v1/estate/self-update", "estate.manage", "estate", { path: () => "/api/v1/estate/self-update", body: () => ({}), status: 409 })],
});
