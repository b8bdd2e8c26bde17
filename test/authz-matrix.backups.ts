/** Authorization matrix rows of the backups route (issue 23): the status is `estate.manage`. */
import { registerMatrixDomain, guarded, type MatrixRow } from "./authz-matrix";

const ROWS: MatrixRow[] = [guarded("GET /api/v1/backups", "estate.manage", "estate", { path: () => "/api/v1/backups", status: 200 })];

registerMatrixDomain({ tags: ["backups"], rows: ROWS });
