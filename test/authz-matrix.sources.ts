/**
 * Authorization matrix rows of the sources domain (issue 9): the Code host App routes (evaluated
 * anywhere; `/host/repos` narrowed to the projects where the caller reads sources), the Sources
 * routes (project-level: a repository is not per environment, so no environment policy applies),
 * and the built-in host's smart HTTP at `/git/<slug>/<repo>.git` (fetch `sources.read`, push
 * `sources.save`, in the owning project). The git routes are sent the minimal requests git
 * itself sends (an empty command list), so an allowed caller gets a real protocol answer; the
 * clone, fetch and push flows themselves are tested with the git CLI (test/sources-git.test.ts).
 * The web pages under `/git/` only redirect to the console and are public.
 */
import { registerMatrixDomain, gate, guarded, holds, type World, type MatrixRow } from "./authz-matrix";
import type { ProjectRef } from "../src/core/core";
import { commitFiles, connect } from "./sources-fixtures";
import { createSave, runSave } from "../src/domains/sources/saves";
import { scanRepository } from "../src/domains/sources/scans";

const S = (w: World) => `/api/v1/projects/${w.project.slug}/sources`;
const REPO = (w: World) => `${w.project.slug}/matrix`;

const OPS_TOML = `[services.web]
start = "node server.js"
port = 3000
`;

/** The project's source `matrix`, with a first commit (README, Dockerfile, ops.toml). */
async function source(w: World): Promise<void> {
  if (w.vars.source) return;
  const s = await connect(w.t, w.setupAuth(), "matrix");
  await commitFiles(w.t, s.repo, { "README.md": "# matrix\n", Dockerfile: "FROM node:22\nEXPOSE 3000\n", "ops.toml": OPS_TOML });
  w.vars.source = s.id;
}

/** A save that has run: its branch and pull request are open. */
async function openSave(w: World): Promise<string> {
  await source(w);
  const auth = w.setupAuth();
  const { save_id } = await createSave(w.t.core, auth.project as ProjectRef, w.vars.source!, { message: "Matrix save", changes: [{ path: `notes/${w.unique("n")}.txt`, text: "hello\n" }] }, auth);
  await runSave(w.t.core, save_id);
  return String(save_id);
}

/** The smart HTTP requests git sends with no refs to fetch or update (a flush packet). */
const flush = (type: string) => () => ({ body: "0000", headers: { "content-type": `application/x-${type}-request` } });

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/host/app", "sources.read", "anywhere", { path: () => "/api/v1/host/app", status: 200 }),
  guarded("GET /api/v1/host/repos", "sources.read", "anywhere", {
    setup: source,
    path: () => "/api/v1/host/repos",
    status: 200,
    // Narrowed per project: the project's repository shows exactly to who reads sources there.
    verify: (w, c, body) => {
      const listed = (JSON.parse(body) as Array<{ full_name: string }>).some((r) => r.full_name === REPO(w));
      const should = holds(c, "sources.read", "project");
      return listed === should ? null : should ? "the project's repository is missing" : "lists a repository of a project it cannot read";
    },
  }),
  guarded("GET /api/v1/projects/:slug/sources", "sources.read", "project", { setup: source, path: S, status: 200 }),
  guarded("POST /api/v1/projects/:slug/sources", "sources.write", "project", { path: S, body: (w) => ({ repo: `${w.project.slug}/${w.unique("matrix-new")}` }), status: 201 }),
  guarded("GET /api/v1/projects/:slug/sources/saves/:id", "sources.read", "project", {
    setup: async (w) => {
      w.vars.save = await openSave(w);
    },
    path: (w) => `${S(w)}/saves/${w.vars.save}`,
    status: 200,
  }),
  guarded("POST /api/v1/projects/:slug/sources/saves/:id/merge", "sources.save", "project", {
    each: async (w) => {
      w.vars.mergeable = await openSave(w);
    },
    path: (w) => `${S(w)}/saves/${w.vars.mergeable}/merge`,
    status: 200,
  }),
  guarded("POST /api/v1/projects/:slug/sources/scan", "sources.write", "project", { setup: source, path: (w) => `${S(w)}/scan`, body: (w) => ({ repo: REPO(w) }), status: 202 }),
  guarded("GET /api/v1/projects/:slug/sources/scans/:id", "sources.read", "project", {
    setup: async (w) => {
      await source(w);
      const auth = w.setupAuth();
      const res = await scanRepository(w.t.core, auth.project as ProjectRef, { repo: REPO(w) }, auth);
      w.vars.scan = String(res.status === 202 ? res.scan_id : 0);
    },
    path: (w) => `${S(w)}/scans/${w.vars.scan}`,
    status: 200,
  }),
  guarded("DELETE /api/v1/projects/:slug/sources/:id", "sources.write", "project", {
    each: async (w) => {
      w.vars.doomed = (await connect(w.t, w.setupAuth(), w.unique("matrix-doomed"))).id;
    },
    path: (w) => `${S(w)}/${w.vars.doomed}`,
    status: 204,
  }),
  guarded("GET /api/v1/projects/:slug/sources/:id/file", "sources.read", "project", { setup: source, path: (w) => `${S(w)}/${w.vars.source}/file?path=README.md`, status: 200 }),
  guarded("GET /api/v1/projects/:slug/sources/:id/saves", "sources.read", "project", { setup: source, path: (w) => `${S(w)}/${w.vars.source}/saves`, status: 200 }),
  guarded("POST /api/v1/projects/:slug/sources/:id/saves", "sources.save", "project", {
    setup: source,
    path: (w) => `${S(w)}/${w.vars.source}/saves`,
    body: (w) => ({ message: "Matrix edit", changes: [{ path: `edits/${w.unique("e")}.md`, text: "edit\n" }] }),
    status: 202,
  }),
  guarded("GET /api/v1/projects/:slug/sources/:id/tree", "sources.read", "project", { setup: source, path: (w) => `${S(w)}/${w.vars.source}/tree`, status: 200 }),
  guarded("GET /git/:slug/:repo/info/refs", "sources.read", "project", { setup: source, path: (w) => `/git/${REPO(w)}.git/info/refs?service=git-upload-pack`, status: 200 }),
  {
    // The route is guarded by sources.read; push discovery also needs sources.save (refused and
    // audited before git builds a pack), so its expectations are those of sources.save.
    route: "GET /git/:slug/:repo/info/refs",
    name: "push discovery",
    permission: "sources.read",
    setup: source,
    path: (w) => `/git/${REPO(w)}.git/info/refs?service=git-receive-pack`,
    status: 200,
    expect: gate("sources.save", "project"),
  },
  guarded("POST /git/:slug/:repo/git-upload-pack", "sources.read", "project", { setup: source, path: (w) => `/git/${REPO(w)}.git/git-upload-pack`, raw: flush("git-upload-pack"), status: 200 }),
  guarded("POST /git/:slug/:repo/git-receive-pack", "sources.save", "project", { setup: source, path: (w) => `/git/${REPO(w)}.git/git-receive-pack`, raw: flush("git-receive-pack"), status: 200 }),
];

registerMatrixDomain({
  tags: ["sources", "git"],
  rows: ROWS,
  publicRoutes: ["POST /api/v1/host/webhook", "GET /git/installations/new", "GET /git/:slug/:repo", "GET /git/:slug/:repo/blob/*", "GET /git/:slug/:repo/pulls/:number"],
});
