/**
 * Routes of the Code host App and Sources sections. Sources are project-level (a repository is
 * not per environment), so every route is evaluated without environment policies. Reads need
 * `sources.read`; connect, disconnect and scan `sources.write`; saves and merges `sources.save`.
 */
import { Elysia, t } from "elysia";
import type { Core, ProjectRef } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors, NoContent, IdParam } from "../../core/http-schemas";
import { sourcesModels } from "./model";
import { connectSource, describeHost, disconnectSource, listHostRepos, listSources } from "./connections";
import { studioFile, studioTree } from "./studio";
import { createSave, getSave, listSaves, mergeSave } from "./saves";
import { getScan, scanRepository } from "./scans";

const read = { key: "sources.read" as const, environment: "none" as const };
const write = { key: "sources.write" as const, environment: "none" as const };
const save = { key: "sources.save" as const, environment: "none" as const };

const Slug = t.Object({ slug: t.String() });
const SourceId = t.Object({ slug: t.String(), id: t.String() });
const NumericId = t.Object({ slug: t.String(), id: IdParam() });

const project = (auth: { project: ProjectRef | null }) => auth.project as ProjectRef;

export function sourcesRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["sources"] })
    .use(authzPlugin(core))
    .model(sourcesModels)
    .get("/host/app", () => describeHost(core), {
      permission: "sources.read",
      detail: { summary: "The code host App (the built-in git host unless OPS_CODE_HOST=github)" },
      response: { 200: "HostAppResponse", ...errors(401, 403, 503) },
    })
    .get("/host/repos", ({ auth }) => listHostRepos(core, auth), {
      permission: "sources.read",
      detail: { summary: "Every repository the App's installations can see, from the projects where the caller reads sources" },
      response: { 200: t.Array(t.Ref("Repo")), ...errors(401, 403, 503) },
    })
    .get("/projects/:slug/sources", ({ auth }) => listSources(core, project(auth)), {
      permission: read,
      params: Slug,
      detail: { summary: "The project's connected repositories" },
      response: { 200: t.Array(t.Ref("SourceResponse")), ...errors(401, 403, 404) },
    })
    .post(
      "/projects/:slug/sources",
      async ({ auth, body, set }) => {
        const res = await connectSource(core, project(auth), body, auth);
        set.status = 201;
        return res;
      },
      {
        permission: write,
        params: Slug,
        body: "CreateSourceRequest",
        detail: { summary: "Connect a repository (the built-in host creates it when missing; default branch as the host reports it)" },
        response: { 201: "SourceResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .get("/projects/:slug/sources/saves/:id", ({ auth, params }) => getSave(core, project(auth), params.id), {
      permission: read,
      params: NumericId,
      detail: { summary: "A studio save (poll it after POST …/saves)" },
      response: { 200: "SaveResponse", ...errors(401, 403, 404) },
    })
    .post("/projects/:slug/sources/saves/:id/merge", ({ auth, params }) => mergeSave(core, project(auth), params.id, auth), {
      permission: save,
      params: NumericId,
      detail: { summary: "Merge an open save's pull request; queues a scan of the default branch" },
      response: { 200: "SaveResponse", ...errors(401, 403, 404, 409, 422, 503) },
    })
    .post(
      "/projects/:slug/sources/scan",
      async ({ auth, body, set }) => {
        const res = await scanRepository(core, project(auth), body, auth);
        set.status = res.status;
        return res.status === 200 ? res.services : { scan_id: res.scan_id, status: "queued" as const };
      },
      {
        permission: write,
        params: Slug,
        body: "ScanSourceRequest",
        detail: { summary: "Scan a repository: 200 with the services its build files describe, or 202 with a queued scan when it has an ops.toml" },
        response: { 200: t.Array(t.Ref("DetectedService")), 202: "ScanQueuedResponse", ...errors(401, 403, 404, 409, 422, 503) },
      },
    )
    .get("/projects/:slug/sources/scans/:id", ({ auth, params }) => getScan(core, project(auth), params.id), {
      permission: read,
      params: NumericId,
      detail: { summary: "A scan, with what it reconciled" },
      response: { 200: "ScanResponse", ...errors(401, 403, 404) },
    })
    .delete(
      "/projects/:slug/sources/:id",
      ({ auth, params, set }) => {
        disconnectSource(core, project(auth), params.id, auth);
        set.status = 204;
      },
      {
        permission: write,
        params: SourceId,
        detail: { summary: "Disconnect a repository (builds and saves keep their history; the repository itself stays on the host)" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409) },
      },
    )
    .get("/projects/:slug/sources/:id/file", ({ auth, params, query }) => studioFile(core, project(auth), params.id, query.path, query.ref), {
      permission: read,
      params: SourceId,
      query: t.Object({ path: t.String({ description: "Repository-relative path" }), ref: t.Optional(t.String({ description: "Branch, tag or sha (default the source's default branch)" })) }),
      detail: { summary: "One file at a ref, for the studio's editor" },
      response: { 200: "StudioFileResponse", ...errors(401, 403, 404, 409, 413, 422, 503) },
    })
    .get("/projects/:slug/sources/:id/saves", ({ auth, params }) => listSaves(core, project(auth), params.id), {
      permission: read,
      params: SourceId,
      detail: { summary: "The source's last 20 saves, newest first" },
      response: { 200: t.Array(t.Ref("SaveResponse")), ...errors(401, 403, 404) },
    })
    .post(
      "/projects/:slug/sources/:id/saves",
      async ({ auth, params, body, set }) => {
        const res = await createSave(core, project(auth), params.id, body, auth);
        set.status = 202;
        return res;
      },
      {
        permission: save,
        params: SourceId,
        body: "CreateSaveRequest",
        detail: { summary: "Save edits as a commit on a new branch and a pull request (queued; poll the save)" },
        response: { 202: "SaveQueuedResponse", ...errors(401, 403, 404, 409, 413, 422, 503) },
      },
    )
    .get("/projects/:slug/sources/:id/tree", ({ auth, params, query }) => studioTree(core, project(auth), params.id, query.ref), {
      permission: read,
      params: SourceId,
      query: t.Object({ ref: t.Optional(t.String({ description: "Branch, tag or sha (default the source's default branch)" })) }),
      detail: { summary: "Every file and directory at a ref, with the refs the studio can open" },
      response: { 200: "StudioTree", ...errors(401, 403, 404, 409, 503) },
    });
}
