/**
 * The person's half of the device grant: look a grant up by its user code, then approve or deny
 * it. Approval runs the over-carry rule (`assertMintable`) against the approver as they call, and
 * stores the role's permission snapshot; the token itself is minted when the client redeems.
 * Approvals and denials are audited (`device.approve`, `device.deny`) and raise no notification.
 *
 * Every use of a user code by a person (lookup, approval, denial) counts against one per-person
 * limit, and lookups also against the spec's per-address one (RFC 8628 §5.1: user codes are short,
 * so guessing is throttled wherever a code is taken). A throttled use is audited as denied.
 * Decision: docs/decisions/0542-device-decisions-rate-limited.md.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed, writeAudit } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { iso } from "../../core/clock";
import { assertMintable, expiryFor, isMintable, resolveMintTarget, rolesForProjects, type RoleRow } from "../access/service";
import { deviceGrants, type DeviceGrantRow } from "./tables";
import { normaliseUserCode, displayUserCode } from "./codes";
import { defaultTokenName, findGrantByUserCode } from "./grants";
import { takeRate } from "./rate-limit";
import type { DeviceApproveBody, DeviceGrantResponse, DeviceRoleOption } from "./model";

/** Lookups: at most 20 per minute per address (user codes are short; RFC 8628 §5.1). */
export const LOOKUP_LIMIT = { count: 20, windowMs: 60_000 } as const;
/** Lookups, approvals and denials together: at most 20 per minute per person. */
export const CODE_USE_LIMIT = { count: 20, windowMs: 60_000 } as const;
/** Preselected role, in order of preference, when the approver may mint it. */
const DEFAULT_ROLE_PREFERENCE = ["developer", "viewer"];

function effectiveStatus(row: DeviceGrantRow, now: number): DeviceGrantRow["status"] {
  if (row.status === "pending" && now >= row.expiresAt) return "expired";
  if (row.status === "approved" && row.redeemedAt === null && now >= row.expiresAt) return "expired";
  return row.status;
}

function grantOr404(core: Core, userCode: string): DeviceGrantRow {
  const code = normaliseUserCode(userCode);
  const row = code === null ? null : findGrantByUserCode(core.db, code);
  if (!row) throw new OpsError("not_found", "No login request has that code; check it against the terminal.");
  return row;
}

/**
 * Count one use of a user code by `auth`'s person (and, for lookups, from its address); past a
 * limit, audit the refusal as a denied `action` and throw the 429.
 */
function throttle(core: Core, auth: AuthContext, action: "device.lookup" | "device.approve" | "device.deny"): void {
  try {
    if (action === "device.lookup") takeRate(core, "lookup", auth.meta.ip, LOOKUP_LIMIT.count, LOOKUP_LIMIT.windowMs, "Too many code lookups from this address; wait a minute and try again.");
    takeRate(core, "code-use", auth.principal.operatorId, CODE_USE_LIMIT.count, CODE_USE_LIMIT.windowMs, "Too many device codes tried; wait a minute and try again.");
  } catch (e) {
    const reason = `rate limited: more than ${CODE_USE_LIMIT.count} device codes a minute`;
    writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action, target: "device-grant", outcome: "denied", reason });
    throw e;
  }
}

/** The grant behind `userCode`, with the roles the caller could approve it with (throttled per address and per person). */
export function getDeviceGrant(core: Core, userCode: string, auth: AuthContext): DeviceGrantResponse {
  throttle(core, auth, "device.lookup");
  const row = grantOr404(core, userCode);
  const principal = auth.principal;
  const requested = row.requestedProject ? core.access.findProject(row.requestedProject) : null;
  const defaultProject = requested && !requested.archived ? requested : null;

  const memberProjects = core.access
    .grants(principal)
    .memberships.map((m) => m.projectId)
    .filter((id): id is string => id !== null);
  const projectIds = [...new Set([...memberProjects, ...(defaultProject ? [defaultProject.id] : [])])];
  const roles = rolesForProjects(core.db, projectIds);
  const slugOf = (id: string | null) => (id === null ? null : (core.access.findProjectById(id)?.slug ?? null));

  const options: Array<DeviceRoleOption & { slug: string }> = roles.map((r: RoleRow) => ({
    id: r.id,
    name: r.displayName,
    project: slugOf(r.projectId),
    mintable: isMintable(core, principal, r, r.projectId ?? defaultProject?.id ?? null),
    slug: r.slug,
  }));
  const preferred =
    DEFAULT_ROLE_PREFERENCE.map((s) => options.find((o) => o.project === null && o.slug === s && o.mintable)).find((o) => o !== undefined) ??
    options.find((o) => o.mintable) ??
    null;

  return {
    client: row.client,
    client_name: row.clientName,
    created_at: iso(row.createdAt),
    default_project: defaultProject?.slug ?? null,
    default_role_id: preferred?.id ?? null,
    expires_at: iso(row.expiresAt),
    ip: row.ip,
    requested_project: row.requestedProject,
    roles: options.map(({ slug: _slug, ...o }) => o),
    status: effectiveStatus(row, core.clock.now()),
    user_code: displayUserCode(row.userCode),
  };
}

function assertUndecided(row: DeviceGrantRow, now: number): void {
  const status = effectiveStatus(row, now);
  if (status === "approved" || status === "denied") throw new OpsError("conflict", `This login request was already ${status}.`, { status });
  if (status === "expired") throw new OpsError("conflict", "This login request has expired; start the login again.", { status });
}

/**
 * Approve the grant: the chosen role must be mintable by the approver where the token will act.
 * A refusal (a machine, a role wider than the approver, a token pinned elsewhere) is audited as a
 * denied `device.approve`, like a refused mint.
 */
export function approveDeviceGrant(core: Core, userCode: string, body: DeviceApproveBody, auth: AuthContext): void {
  throttle(core, auth, "device.approve");
  const principal = auth.principal;
  const actor = actorOf(principal, auth.meta);
  const code = normaliseUserCode(userCode);
  const known = code === null ? null : findGrantByUserCode(core.db, code);
  const target = known ? `device-grant:${known.id}` : "device-grant";
  try {
    if (principal.kind === "machine") throw new OpsError("forbidden", "A machine operator cannot approve devices.");
    const found = known ?? grantOr404(core, userCode);
    tx(core.db, (t) => {
      const row = t.select().from(deviceGrants).where(eq(deviceGrants.id, found.id)).get() ?? found;
      const now = core.clock.now();
      assertUndecided(row, now);
      const { role, project } = resolveMintTarget(core, t, body.role_id, body.project ?? null);
      assertMintable(core, principal, role, project?.id ?? null, "approve");
      const tokenExpiresAt = expiryFor(core, body.expires_in_days);
      const name = body.name?.trim() || defaultTokenName(row.clientName);
      if (name.length > 100) throw invalid("name", "must be at most 100 characters");
      t.update(deviceGrants)
        .set({
          status: "approved",
          decidedAt: now,
          decidedBy: principal.operatorId,
          roleId: role.id,
          roleName: role.displayName,
          scopes: role.permissions,
          projectId: project?.id ?? null,
          tokenName: name,
          tokenExpiresAt,
        })
        .where(eq(deviceGrants.id, row.id))
        .run();
      auditAllowed(core, t, actor, "device.approve", `device-grant:${row.id}`, { project: project?.slug ?? null }, { client: row.client, role: role.slug });
    });
  } catch (e) {
    if (e instanceof OpsError && (e.code === "forbidden" || e.code === "refused")) {
      writeAudit(core, core.db, { ...actor, action: "device.approve", target, outcome: "denied", reason: e.message, project: body.project ?? null, context: { ...actor.context, role: body.role_id } });
    }
    throw e;
  }
}

/** Deny the grant: the polling client gets `access_denied`. */
export function denyDeviceGrant(core: Core, userCode: string, auth: AuthContext): void {
  throttle(core, auth, "device.deny");
  const found = grantOr404(core, userCode);
  tx(core.db, (t) => {
    const row = t.select().from(deviceGrants).where(eq(deviceGrants.id, found.id)).get() ?? found;
    const now = core.clock.now();
    assertUndecided(row, now);
    t.update(deviceGrants).set({ status: "denied", decidedAt: now, decidedBy: auth.principal.operatorId }).where(eq(deviceGrants.id, row.id)).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "device.deny", `device-grant:${row.id}`, { project: row.requestedProject }, { client: row.client });
  });
}
