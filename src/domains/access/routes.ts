/**
 * Access routes. Handlers parse, call a service, return; the `permission` macro has already
 * authorized the caller and hands over `auth`. Split by idea: routes-identity.ts (sign-in, me,
 * sessions), routes-admin.ts (operators, projects), routes-project-access.ts (members, roles,
 * policies), routes-tokens.ts (tokens, audit).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { PERMISSIONS } from "../../core/authz/catalog";
import { errors } from "../../core/http-schemas";
import { accessModels } from "./model";
import { identityRoutes } from "./routes-identity";
import { adminRoutes } from "./routes-admin";
import { projectAccessRoutes } from "./routes-project-access";
import { tokenRoutes } from "./routes-tokens";

function permissionRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["access"] })
    .use(authzPlugin(core))
    .model(accessModels)
    .get("/permissions", () => PERMISSIONS.map((p) => ({ key: p.key, group: p.group, label: p.label, hint: p.hint })), {
      permission: "authenticated",
      detail: { summary: "The 28 permissions in console order, groups contiguous" },
      response: { 200: t.Array(t.Ref("PermissionResponse")), ...errors(401) },
    });
}

export function accessRoutes(core: Core) {
  return new Elysia({ name: "ops-access-routes", seed: core.id }).use(permissionRoutes(core)).use(identityRoutes(core)).use(adminRoutes(core)).use(projectAccessRoutes(core)).use(tokenRoutes(core));
}
