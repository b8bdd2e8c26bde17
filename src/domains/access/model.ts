/**
 * Request and response schemas of the access domain (the spec's names). Schemas are the types:
 * `type X = typeof X.static`. Split by idea: model-identity.ts (sign-in, me, MFA, sessions,
 * operators), model-projects.ts (projects, members, roles, policies), model-tokens.ts (tokens, audit).
 */
import { t } from "elysia";
import { ErrorBody } from "../../core/http-schemas";
import { identityModels } from "./model-identity";
import { projectModels } from "./model-projects";
import { tokenModels } from "./model-tokens";

export const PermissionResponse = t.Object({
  key: t.String(),
  group: t.String(),
  label: t.String(),
  hint: t.String(),
});
export type PermissionResponse = typeof PermissionResponse.static;

/**
 * Named schemas, registered with `.model(accessModels)` so OpenAPI lists them under
 * components/schemas by the spec's names; routes refer to them as `"Name"` or `t.Ref("Name")`.
 */
export const accessModels = { PermissionResponse, ErrorBody, ...identityModels, ...projectModels, ...tokenModels };
