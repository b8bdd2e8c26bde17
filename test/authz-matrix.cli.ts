/**
 * Authorization matrix rows of the CLI routes (issue 4): install codes (`authenticated`; the code
 * carries the caller's role in the project, so the over-carry rule refuses a token pinned
 * elsewhere and a token narrower than that role), release reads (`project.read` anywhere: any
 * role in any project, a pinned token in its own project) and publishing (`estate.manage`). The
 * installer (`GET /api/v1/cli/install.sh`) is public: the install code is its credential.
 */
import { registerMatrixDomain, guarded, type World, type MatrixRow } from "./authz-matrix";
import { publishRelease, currentRelease } from "../src/domains/cli/service";
import { actorOf } from "../src/core/authz/principal";

const VERSION = "0.0.1-matrix";
const TARGET = "linux-x64";

async function release(w: World): Promise<void> {
  const existing = (() => {
    try {
      return currentRelease(w.t.core, TARGET);
    } catch {
      return null;
    }
  })();
  if (existing) return;
  const auth = w.setupAuth();
  await publishRelease(w.t.core, { version: VERSION, target: TARGET, body: new TextEncoder().encode("#!/bin/sh\necho matrix\n"), publishedBy: auth.principal.operatorId }, actorOf(auth.principal, auth.meta));
}

const ROWS: MatrixRow[] = [
  guarded("POST /api/v1/cli/install-codes", "authenticated", "anywhere", {
    path: () => "/api/v1/cli/install-codes",
    body: (w) => ({ project: w.project.slug }),
    status: 200,
    override: { pinnedElsewhere: "refuse", narrowToken: "refuse" },
  }),
  guarded("GET /api/v1/cli/release", "project.read", "anywhere", { setup: release, path: () => `/api/v1/cli/release?target=${TARGET}`, status: 200 }),
  guarded("GET /api/v1/cli/releases/:version/:target/download", "project.read", "anywhere", { setup: release, path: () => `/api/v1/cli/releases/${VERSION}/${TARGET}/download`, status: 200 }),
  guarded("POST /api/v1/cli/releases", "estate.manage", "estate", {
    path: (w) => `/api/v1/cli/releases?version=${w.unique("0.0.2-matrix")}&target=${TARGET}`,
    raw: () => ({ body: new TextEncoder().encode("#!/bin/sh\necho matrix 2\n"), headers: { "content-type": "application/octet-stream" } }),
    status: 201,
  }),
];

registerMatrixDomain({ tags: ["cli"], rows: ROWS, publicRoutes: ["GET /api/v1/cli/install.sh"] });
