/**
 * Members, candidates, roles and environment policies of a project. Reads need `project.read`,
 * changes `project.members`; all are project-level (`environment: "none"`: a policy never narrows
 * the right to manage policies).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors, NoContent } from "../../core/http-schemas";
import { accessModels } from "./model";
import { listMembers, listCandidates, setMembership, removeMember } from "./members";
import { listRoles, createRole, updateRole, deleteRole } from "./role-admin";
import { listPolicies, putPolicy, deletePolicy } from "./policies";

const Uuid = t.String({ format: "uuid" });
const read = { key: "project.read", environment: "none" } as const;
const manage = { key: "project.members", environment: "none" } as const;

export function projectAccessRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/projects/:slug", tags: ["access"] })
    .use(authzPlugin(core))
    .model(accessModels)
    .get("/members", ({ auth }) => listMembers(core, auth.project!), {
      permission: read,
      params: t.Object({ slug: t.String() }),
      detail: { summary: "Members of the project, then estate-wide members (project null)" },
      response: { 200: t.Array(t.Ref("MemberResponse")), ...errors(401, 403, 404) },
    })
    .post(
      "/members",
      ({ auth, body, status }) => {
        setMembership(core, auth, body.operator_id, body.role_id, false);
        return status(204, undefined);
      },
      {
        permission: manage,
        params: t.Object({ slug: t.String() }),
        body: "WriteMembershipBody",
        detail: { summary: "Add a member, or change an existing member's role" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422) },
      },
    )
    .get("/members/candidates", ({ auth }) => listCandidates(core, auth.project!), {
      permission: manage,
      params: t.Object({ slug: t.String() }),
      detail: { summary: "Operators who could be added (identity only)" },
      response: { 200: t.Array(t.Ref("CandidateResponse")), ...errors(401, 403, 404) },
    })
    .put(
      "/members/:operator_id",
      ({ auth, body, params, status }) => {
        setMembership(core, auth, params.operator_id, body.role_id, true);
        return status(204, undefined);
      },
      {
        permission: manage,
        params: t.Object({ slug: t.String(), operator_id: Uuid }),
        body: "WriteMembershipBody",
        detail: { summary: "Change a member's role (a differing operator_id in the body is ignored)" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422) },
      },
    )
    .delete(
      "/members/:operator_id",
      ({ auth, params, status }) => {
        removeMember(core, auth, params.operator_id);
        return status(204, undefined);
      },
      {
        permission: manage,
        params: t.Object({ slug: t.String(), operator_id: Uuid }),
        detail: { summary: "Remove a member from the project" },
        response: { 204: NoContent, ...errors(401, 403, 404, 422) },
      },
    )
    .get("/roles", ({ auth }) => listRoles(core, auth.project!), {
      permission: read,
      params: t.Object({ slug: t.String() }),
      detail: { summary: "The fixed roles plus the project's own" },
      response: { 200: t.Array(t.Ref("RoleResponse")), ...errors(401, 403, 404) },
    })
    .post(
      "/roles",
      ({ auth, body, set }) => {
        const role = createRole(core, auth, body);
        set.status = 201;
        return role;
      },
      {
        permission: manage,
        params: t.Object({ slug: t.String() }),
        body: "WriteRoleBody",
        detail: { summary: "Create a project role (the path decides the project)" },
        response: { 201: "RoleResponse", ...errors(401, 403, 404, 409, 422) },
      },
    )
    .put("/roles/:id", ({ auth, body, params }) => updateRole(core, auth, params.id, body), {
      permission: manage,
      params: t.Object({ slug: t.String(), id: Uuid }),
      body: "WriteRoleBody",
      detail: { summary: "Change a project role's names and permissions" },
      response: { 200: "RoleResponse", ...errors(401, 403, 404, 409, 422) },
    })
    .delete(
      "/roles/:id",
      ({ auth, params, status }) => {
        deleteRole(core, auth, params.id);
        return status(204, undefined);
      },
      {
        permission: manage,
        params: t.Object({ slug: t.String(), id: Uuid }),
        detail: { summary: "Delete a project role without members" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409, 422) },
      },
    )
    .get("/environment-policies", ({ auth }) => listPolicies(core, auth.project!), {
      permission: read,
      params: t.Object({ slug: t.String() }),
      detail: { summary: "The project's environment policies" },
      response: { 200: t.Array(t.Ref("EnvironmentPolicyResponse")), ...errors(401, 403, 404) },
    })
    .put("/environment-policies/:environment/:role_id", ({ auth, body, params }) => putPolicy(core, auth, params.environment, params.role_id, body.allowed), {
      permission: manage,
      params: t.Object({ slug: t.String(), environment: t.String(), role_id: Uuid }),
      body: "WritePolicyBody",
      detail: { summary: "Set what a project role keeps in one environment" },
      response: { 200: "EnvironmentPolicyResponse", ...errors(401, 403, 404, 409, 422) },
    })
    .delete(
      "/environment-policies/:environment/:role_id",
      ({ auth, params, status }) => {
        deletePolicy(core, auth, params.environment, params.role_id);
        return status(204, undefined);
      },
      {
        permission: manage,
        params: t.Object({ slug: t.String(), environment: t.String(), role_id: Uuid }),
        detail: { summary: "Give the role its full set back in that environment" },
        response: { 204: NoContent, ...errors(401, 403, 404, 422) },
      },
    );
}
