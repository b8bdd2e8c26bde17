/**
 * The module reads under `/api/v1` (document 3, Package reads): project-level, `packages.read`,
 * like the project's package reads beside them.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors } from "../../core/http-schemas";
import { moduleModels } from "./model";
import { notesOf, projectModules } from "./reads";

const TAG = ["modules"];

export function moduleRoutes(core: Core) {
  return new Elysia({ name: "modules", prefix: "/api/v1" })
    .use(authzPlugin(core))
    .model(moduleModels)
    .get("/projects/:slug/modules", ({ auth }) => projectModules(core, auth.project!), {
      permission: { key: "packages.read", environment: "none" },
      params: t.Object({ slug: t.String() }),
      detail: { tags: TAG, summary: "The modules the project's modules/ tree publishes: halves, requirements, consumers, and the tag version" },
      response: { 200: t.Ref("ProjectModulesResponse"), ...errors(401, 403, 404) },
    })
    .get("/projects/:slug/modules/:name/notes", ({ auth, params }) => notesOf(core, auth.project!, params.name), {
      permission: { key: "packages.read", environment: "none" },
      params: t.Object({ slug: t.String(), name: t.String() }),
      detail: { tags: TAG, summary: "A module's release notes (its CHANGELOG section per version), newest first" },
      response: { 200: t.Array(t.Ref("ModuleNotes")), ...errors(401, 403, 404) },
    });
}
