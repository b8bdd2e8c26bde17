/**
 * Operators (`operators.manage`) and projects (`estate.manage` to create; `project.read` /
 * `project.settings` in the project).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { errors } from "../../core/http-schemas";
import { accessModels } from "./model";
import { OperatorIdParams } from "./model-identity";
import { SlugParams } from "./model-projects";
import { listOperators, addOperator, updateOperator, operatorView } from "./operator-admin";
import { createProject, listProjects, projectView, updateProject, findProjectRow } from "./projects";
import { OpsError } from "../../core/errors";

export function adminRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["access"] })
    .use(authzPlugin(core))
    .model(accessModels)
    .get("/operators", () => listOperators(core), {
      permission: "operators.manage",
      detail: { summary: "Every operator (people and machines)" },
      response: { 200: t.Array(t.Ref("OperatorResponse")), ...errors(401, 403) },
    })
    .post(
      "/operators",
      async ({ auth, body, set }) => {
        const row = await addOperator(core, body, actorOf(auth.principal, auth.meta));
        set.status = 201;
        return operatorView(core, row);
      },
      {
        permission: "operators.manage",
        body: "CreateOperatorBody",
        detail: { summary: "Add a person (email, optional password) or a machine (handle)" },
        response: { 201: "OperatorResponse", ...errors(401, 403, 404, 409, 422) },
      },
    )
    .patch("/operators/:id", ({ auth, body, params }) => updateOperator(core, params.id, body, auth), {
      permission: "operators.manage",
      params: OperatorIdParams,
      body: "UpdateOperatorBody",
      detail: { summary: "Rename, suspend or unsuspend, reset MFA or password, set the estate-wide role" },
      response: { 200: "OperatorResponse", ...errors(401, 403, 404, 422) },
    })
    .get("/projects", ({ auth }) => listProjects(core, auth.principal), {
      permission: "authenticated",
      detail: { summary: "The projects the caller can see" },
      response: { 200: t.Array(t.Ref("ProjectResponse")), ...errors(401) },
    })
    .post(
      "/projects",
      ({ auth, body, set }) => {
        const row = createProject(core, body, actorOf(auth.principal, auth.meta));
        set.status = 201;
        return projectView(row);
      },
      {
        permission: "estate.manage",
        body: "CreateProjectBody",
        detail: { summary: "Create a project (default environments production, staging)" },
        response: { 201: "ProjectResponse", ...errors(401, 403, 409, 422) },
      },
    )
    .get(
      "/projects/:slug",
      ({ params }) => {
        const row = findProjectRow(core, params.slug);
        if (!row) throw new OpsError("not_found", "No such project.");
        return projectView(row);
      },
      {
        permission: { key: "project.read", environment: "none" },
        params: SlugParams,
        detail: { summary: "One project" },
        response: { 200: "ProjectResponse", ...errors(401, 403, 404) },
      },
    )
    .patch("/projects/:slug", ({ auth, body, params }) => updateProject(core, params.slug, body, actorOf(auth.principal, auth.meta)), {
      permission: { key: "project.settings", environment: "none" },
      params: SlugParams,
      body: "UpdateProjectBody",
      detail: { summary: "Rename, change environments, archive or unarchive" },
      response: { 200: "ProjectResponse", ...errors(401, 403, 404, 409, 422) },
    });
}
