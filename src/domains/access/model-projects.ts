/**
 * Schemas of projects (DESIGN.md §3), members, candidates, roles and environment policies
 * (the spec's names).
 */
import { t } from "elysia";

const Uuid = t.String({ format: "uuid" });
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()]);

export const ProjectResponse = t.Object({
  id: Uuid,
  slug: t.String(),
  name: t.String(),
  environments: t.Array(t.String()),
  archived: t.Boolean(),
  created_at: t.String(),
  updated_at: t.String(),
});
export type ProjectResponse = typeof ProjectResponse.static;

export const CreateProjectBody = t.Object({
  slug: t.String({ maxLength: 63, description: "^[a-z0-9][a-z0-9-]{0,62}$; never changes" }),
  name: t.String({ maxLength: 100 }),
  environments: t.Optional(t.Array(t.String({ maxLength: 32 }), { maxItems: 20, description: "Default: production, staging" })),
});
export type CreateProjectBody = typeof CreateProjectBody.static;

export const UpdateProjectBody = t.Object({
  name: t.Optional(t.String({ maxLength: 100 })),
  environments: t.Optional(t.Array(t.String({ maxLength: 32 }), { maxItems: 20, description: "Removing an environment drops its environment policies" })),
  archived: t.Optional(t.Boolean({ description: "An archived project takes no changes until unarchived" })),
});
export type UpdateProjectBody = typeof UpdateProjectBody.static;

export const SlugParams = t.Object({ slug: t.String() });

export const MemberResponse = t.Object({
  operator_id: Uuid,
  email: t.String({ description: "The person's email, or the machine's handle" }),
  display_name: t.String(),
  kind: t.Union([t.Literal("person"), t.Literal("machine")]),
  project: t.Optional(Nullable(t.String({ description: "null = an estate-wide member (the role applies in every project)" }))),
  project_name: t.Optional(Nullable(t.String())),
  role_id: Uuid,
  role_name: t.String(),
  role_slug: t.String(),
  since: t.String(),
});
export type MemberResponse = typeof MemberResponse.static;

export const WriteMembershipBody = t.Object({ operator_id: Uuid, role_id: Uuid });
export type WriteMembershipBody = typeof WriteMembershipBody.static;

export const CandidateResponse = t.Object({
  id: Uuid,
  email: t.String({ description: "The person's email, or the machine's handle" }),
  display_name: t.String(),
  kind: t.Union([t.Literal("person"), t.Literal("machine")]),
});

export const RoleResponse = t.Object({
  id: Uuid,
  slug: t.String(),
  display_name: t.String(),
  description: t.String(),
  fixed: t.Boolean({ description: "Clients key on this, not on permissions, to tell a fixed role" }),
  members: t.Integer(),
  permissions: t.Array(t.String()),
  project: t.Optional(Nullable(t.String())),
});
export type RoleResponse = typeof RoleResponse.static;

export const WriteRoleBody = t.Object({
  slug: t.String({ maxLength: 63 }),
  display_name: t.String({ maxLength: 100 }),
  description: t.Optional(t.String({ maxLength: 500 })),
  permissions: t.Array(t.String(), { maxItems: 64 }),
  project: t.Optional(Nullable(t.String({ description: "Ignored on PUT and on project-scoped routes; a role never moves" }))),
});
export type WriteRoleBody = typeof WriteRoleBody.static;

export const EnvironmentPolicyResponse = t.Object({
  environment: t.String(),
  role_id: Uuid,
  role_name: t.String(),
  allowed: t.Array(t.String()),
  removed: t.Array(t.String({ description: "What the policy takes away from the role" })),
  updated_at: t.String(),
});
export type EnvironmentPolicyResponse = typeof EnvironmentPolicyResponse.static;

export const WritePolicyBody = t.Object({ allowed: t.Array(t.String(), { maxItems: 64 }) });

export const projectModels = {
  ProjectResponse,
  CreateProjectBody,
  UpdateProjectBody,
  MemberResponse,
  WriteMembershipBody,
  CandidateResponse,
  RoleResponse,
  WriteRoleBody,
  EnvironmentPolicyResponse,
  WritePolicyBody,
};
