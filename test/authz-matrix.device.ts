/**
 * Authorization matrix rows of the device login routes (issue 4): the grant lookup, approve and
 * deny (`authenticated`: any signed-in caller; what they may approve is the over-carry rule's,
 * checked by the service like any mint). Start and poll are public: the device has no identity.
 *
 * Every approve and deny acts on a grant of its own (started through the service from a fresh
 * client address, so the per-address start limit never bites), so each caller's answer is
 * decided by who they are, not by an earlier caller having decided the grant. The approval asks
 * for a `viewer` token pinned to the project: refused (422, audited) for callers who do not hold
 * every viewer key there — the custom and policy roles — and for a token pinned elsewhere.
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import { startDeviceGrant } from "../src/domains/device/service";

const D = "/api/v1/auth/device";

function freshGrant(w: World): void {
  w.vars.userCode = startDeviceGrant(w.t.core, { client_name: "matrix laptop", project: w.project.slug }, w.setupMeta()).user_code;
}

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/auth/device/:user_code", "authenticated", "anywhere", { setup: freshGrant, path: (w) => `${D}/${w.vars.userCode}`, status: 200 }),
  guarded("POST /api/v1/auth/device/:user_code/approve", "authenticated", "anywhere", {
    each: freshGrant,
    path: (w) => `${D}/${w.vars.userCode}/approve`,
    body: (w) => ({ role_id: w.roles.viewer, project: w.project.slug }),
    status: 204,
    override: { custom: "refuse", pinnedElsewhere: "refuse", policyRestricted: "refuse", policyReadOnly: "refuse" },
  }),
  guarded("POST /api/v1/auth/device/:user_code/deny", "authenticated", "anywhere", { each: freshGrant, path: (w) => `${D}/${w.vars.userCode}/deny`, status: 204 }),
];

registerMatrixDomain({ tags: ["device login"], rows: ROWS, publicRoutes: ["POST /api/v1/auth/device", "POST /api/v1/auth/device/token"] });
