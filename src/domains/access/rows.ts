/**
 * Row types and small converters shared by the access domain's service files.
 */
import type { InferSelectModel } from "drizzle-orm";
import type { operators, projects, roles, tokens, sessions, memberships } from "./tables";

export type OperatorRow = InferSelectModel<typeof operators>;
export type ProjectRow = InferSelectModel<typeof projects>;
export type RoleRow = InferSelectModel<typeof roles>;
export type TokenRow = InferSelectModel<typeof tokens>;
export type SessionRow = InferSelectModel<typeof sessions>;
export type MembershipRow = InferSelectModel<typeof memberships>;

/** The operator's name as tokens and members show it: email for a person, handle for a machine. */
export function operatorName(o: Pick<OperatorRow, "kind" | "email" | "handle">): string {
  return (o.kind === "person" ? o.email : o.handle) ?? "";
}

export function parseList(json: string): string[] {
  return JSON.parse(json) as string[];
}
