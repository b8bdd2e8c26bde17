/**
 * Minted tokens (`opst_…`): a snapshot of a role's permissions at mint time (`scopes`), an
 * optional project pin, an optional expiry, a kind (`api`, `cli`, `mcp`). Only the digest is kept.
 *
 * "A token cannot carry more than the caller" (DESIGN.md §3): a pinned token's role must be a
 * subset of the minter's effective permissions in that project; an unpinned token's role a subset
 * of the union of the minter's permissions; a token-authenticated minter is further limited by
 * its own scopes (evaluate() intersects them). Machines cannot mint or approve (403).
 * `assertMintable` is the one place this is checked: tokens, device approvals and install codes
 * all call it.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import type { Principal } from "../../core/authz/principal";
import { evaluate } from "../../core/authz/effective";
import { OpsError, invalid } from "../../core/errors";
import { newSecret, secretDigest, uuidv7 } from "../../core/ids";
import { tokens, projects } from "./tables";
import { findRole } from "./roles";
import { parseList, type RoleRow, type TokenRow, type ProjectRow } from "./rows";

export type TokenKind = "api" | "cli" | "mcp";
const DAY = 86_400_000;

export interface MintRequest {
  name: string;
  roleId: string;
  /** Slug to pin to; null/undefined = unpinned. */
  project?: string | null;
  kind?: TokenKind | null;
  /** Days until expiry; null/undefined = OPS_TOKEN_TTL_DAYS; 0 = never. */
  expiresInDays?: number | null;
}

/** The permissions `role` carries that `minter` does not hold where the token would act. */
export function overCarry(core: Core, minter: Principal, role: Pick<RoleRow, "permissions">, projectId: string | null): string[] {
  const grants = core.access.grants(minter);
  const held = evaluate(minter, grants, projectId === null ? { kind: "any" } : { kind: "project", projectId, environment: null }).permissions;
  if (projectId === null) {
    // Estate keys count only from estate-wide memberships; "any" already filters them.
    const estate = evaluate(minter, grants, { kind: "estate" }).permissions;
    for (const k of estate) held.add(k);
  }
  return parseList(role.permissions).filter((k) => !held.has(k));
}

/**
 * Throw 403 for machines and for an MCP client's token (an assistant acts for a person, it never
 * hands out credentials), and 422 when the role would carry more than the minter holds.
 */
export function assertMintable(core: Core, minter: Principal, role: RoleRow, projectId: string | null, verb: "mint" | "approve" = "mint"): void {
  const what = verb === "mint" ? "mint tokens" : "approve devices";
  if (minter.kind === "machine") throw new OpsError("forbidden", `A machine operator cannot ${what}.`);
  if (minter.tokenKind === "mcp") throw new OpsError("forbidden", `An MCP client's token cannot ${what}.`);
  // A pinned token acts in one project only; what it mints must stay there too.
  if (minter.tokenProjectId !== null && projectId !== minter.tokenProjectId) {
    throw new OpsError("refused", `A token pinned to ${minter.tokenProjectSlug} can only mint tokens pinned to ${minter.tokenProjectSlug}.`, { project: minter.tokenProjectSlug });
  }
  const extra = overCarry(core, minter, role, projectId);
  if (extra.length > 0) {
    throw new OpsError("refused", "A token cannot carry more than the caller does.", { permissions: extra });
  }
}

/** True when `minter` could mint `role` where `projectId` says (advice for approval pages). */
export function isMintable(core: Core, minter: Principal, role: RoleRow, projectId: string | null): boolean {
  return minter.kind === "person" && minter.tokenKind !== "mcp" && overCarry(core, minter, role, projectId).length === 0;
}

/** Resolve a mint request's role and project: 404 for an unknown one, 422 for a role of another project. */
export function resolveMintTarget(core: Core, t: Tx, roleId: string, projectSlug: string | null | undefined): { role: RoleRow; project: ProjectRow | null } {
  const role = findRole(t, roleId);
  if (!role) throw new OpsError("not_found", "No such role.");
  let project: ProjectRow | null = null;
  if (projectSlug !== null && projectSlug !== undefined) {
    project = t.select().from(projects).where(eq(projects.slug, projectSlug)).get() ?? null;
    if (!project) throw new OpsError("not_found", "No such project.");
  }
  if (role.projectId !== null && project !== null && role.projectId !== project.id) {
    throw new OpsError("refused", "That role belongs to another project.");
  }
  return { role, project };
}

export function expiryFor(core: Core, expiresInDays: number | null | undefined): number | null {
  const days = expiresInDays ?? core.config.tokenTtlDays;
  if (!Number.isInteger(days) || days < 0 || days > 36500) throw invalid("expires_in_days", "must be a whole number of days from 0 to 36500");
  return days === 0 ? null : core.clock.now() + days * DAY;
}

/** Insert a token row for `operatorId` inside `t` (no permission checks: callers check first). */
export function insertToken(
  core: Core,
  t: Tx,
  input: { operatorId: string; name: string; kind: TokenKind; role: RoleRow; projectId: string | null; expiresAt: number | null },
): { secret: string; row: TokenRow } {
  const name = input.name.trim();
  if (name === "" || name.length > 100) throw invalid("name", "must be 1 to 100 characters");
  const now = core.clock.now();
  const secret = newSecret("opst_");
  const row = t
    .insert(tokens)
    .values({
      id: uuidv7(now),
      operatorId: input.operatorId,
      name,
      kind: input.kind,
      digest: secretDigest(secret),
      roleId: input.role.id,
      roleName: input.role.displayName,
      scopes: input.role.permissions,
      projectId: input.projectId,
      createdAt: now,
      expiresAt: input.expiresAt,
    })
    .returning()
    .get();
  return { secret, row };
}

/**
 * Mint a token for `minter` inside `t` after every check (machine → 403, unknown role or
 * project → 404, over-carry → 422). The caller writes the audit row in the same `t`.
 */
export function mintTokenIn(core: Core, t: Tx, minter: Principal, req: MintRequest): { secret: string; row: TokenRow; role: RoleRow; project: ProjectRow | null } {
  if (minter.kind === "machine") throw new OpsError("forbidden", "A machine operator cannot mint tokens.");
  const { role, project } = resolveMintTarget(core, t, req.roleId, req.project);
  assertMintable(core, minter, role, project?.id ?? null);
  const kind = req.kind ?? "api";
  if (!["api", "cli", "mcp"].includes(kind)) throw invalid("kind", "must be api, cli or mcp");
  const { secret, row } = insertToken(core, t, {
    operatorId: minter.operatorId,
    name: req.name,
    kind,
    role,
    projectId: project?.id ?? null,
    expiresAt: expiryFor(core, req.expiresInDays),
  });
  return { secret, row, role, project };
}
