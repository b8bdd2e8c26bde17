/**
 * The client's half of the device grant: start it, then poll until a person decides.
 *
 * DESIGN.md §3: codes live 900 s; the client polls every 5 s; a poll earlier than the interval
 * answers `slow_down` and adds 5 s to the interval for good (RFC 8628 §3.5). The token is minted
 * when the approved grant is first redeemed, from the role snapshot the approver was checked
 * against, and the device code redeems once: the conditional update on `redeemed_at` makes two
 * racing polls produce one token.
 */
import { and, desc, eq, gt, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { RequestMeta } from "../../core/authz/principal";
import { tx, type Tx, type Queryable } from "../../core/db/client";
import { writeAudit } from "../../core/audit";
import { invalid } from "../../core/errors";
import { isWellFormedSecret, newSecret, secretDigest, uuidv7 } from "../../core/ids";
import { SLUG_PATTERN, findOperator, insertToken, operatorName, type RoleRow } from "../access/service";
import { deviceGrants, type DeviceGrantRow } from "./tables";
import { newUserCode, displayUserCode } from "./codes";
import { takeRate } from "./rate-limit";
import type { DeviceAuthorizeBody, DeviceAuthorizeResponse, DevicePollBody, DeviceTokenResponse, DeviceErrorResponse, DeviceErrorCode } from "./model";

export const DEVICE_CODE_TTL_S = 900;
export const POLL_INTERVAL_S = 5;
export const SLOW_DOWN_STEP_S = 5;
export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";
export const CLIENT_NAME_MAX = 80;
/** Start: at most 10 grants per 10 minutes per address. */
export const START_LIMIT = { count: 10, windowMs: 10 * 60_000 } as const;

/** Untrusted client name: control characters dropped, whitespace collapsed, cut to 80 characters. */
export function cleanClientName(raw: string | null | undefined): string {
  if (!raw) return "";
  const flat = raw.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, " ").replace(/\s+/g, " ").trim();
  return Array.from(flat).slice(0, CLIENT_NAME_MAX).join("").trim();
}

/** The token name a grant gets when the approver names none. */
export function defaultTokenName(clientName: string): string {
  return clientName === "" ? "ops CLI" : `ops CLI on ${clientName}`;
}

/** Start a grant for a client (no caller identity: the device has none yet). */
export function startDeviceGrant(core: Core, input: DeviceAuthorizeBody | undefined | null, meta: RequestMeta): DeviceAuthorizeResponse {
  const client = input?.client ?? "cli";
  if (client !== "cli" && client !== "mcp") throw invalid("client", "must be cli or mcp");
  const project = input?.project?.trim() || null;
  if (project !== null && !SLUG_PATTERN.test(project)) throw invalid("project", "is not a project slug");
  const clientName = cleanClientName(input?.client_name);
  takeRate(core, "start", meta.ip, START_LIMIT.count, START_LIMIT.windowMs, "Too many device logins were started from this address; wait a few minutes and try again.");

  const deviceCode = newSecret("opsd_");
  const now = core.clock.now();
  const userCode = tx(core.db, (t) => {
    // Unique among live grants: a grant stops being live when it expires.
    for (let attempt = 0; attempt < 20; attempt++) {
      const candidate = newUserCode();
      const clash = t
        .select({ id: deviceGrants.id })
        .from(deviceGrants)
        .where(and(eq(deviceGrants.userCode, candidate), gt(deviceGrants.expiresAt, now)))
        .get();
      if (clash) continue;
      t.insert(deviceGrants)
        .values({
          id: uuidv7(now),
          deviceDigest: secretDigest(deviceCode),
          userCode: candidate,
          client,
          clientName,
          requestedProject: project,
          ip: meta.ip,
          userAgent: meta.userAgent,
          status: "pending",
          pollInterval: POLL_INTERVAL_S,
          createdAt: now,
          expiresAt: now + DEVICE_CODE_TTL_S * 1000,
        })
        .run();
      return candidate;
    }
    throw new Error("could not draw a free user code");
  });
  const display = displayUserCode(userCode);
  const verification = `${core.config.publicUrl}/device`;
  return {
    device_code: deviceCode,
    expires_in: DEVICE_CODE_TTL_S,
    interval: POLL_INTERVAL_S,
    user_code: display,
    verification_uri: verification,
    verification_uri_complete: `${verification}?user_code=${display}`,
  };
}

export type PollOutcome = { ok: true; body: DeviceTokenResponse } | { ok: false; body: DeviceErrorResponse };

const DESCRIPTIONS: Record<DeviceErrorCode, string> = {
  authorization_pending: "The request has not been approved yet; keep polling at the interval.",
  slow_down: "Polling too fast; wait 5 seconds longer between polls from now on.",
  expired_token: "The device code is unknown, expired or already used; start the login again.",
  access_denied: "The login request was denied.",
  unsupported_grant_type: `grant_type must be ${DEVICE_GRANT_TYPE}.`,
};

export function deviceError(error: DeviceErrorCode, description = DESCRIPTIONS[error]): PollOutcome {
  return { ok: false, body: { error, error_description: description } };
}

/** One poll of the token endpoint (RFC 8628 §3.4–3.5). Never throws for a client mistake. */
export function pollDeviceGrant(core: Core, input: DevicePollBody, meta: RequestMeta): PollOutcome {
  const grantType = input.grant_type ?? null;
  if (grantType !== null && grantType !== "" && grantType !== DEVICE_GRANT_TYPE) return deviceError("unsupported_grant_type");
  const code = input.device_code?.trim() ?? "";
  if (!isWellFormedSecret(code, ["opsd_"])) return deviceError("expired_token");
  const digest = secretDigest(code);

  return tx(core.db, (t): PollOutcome => {
    const row = t.select().from(deviceGrants).where(eq(deviceGrants.deviceDigest, digest)).get();
    if (!row) return deviceError("expired_token");
    const now = core.clock.now();
    if (row.redeemedAt !== null) return deviceError("expired_token", "The device code was already used; start the login again.");
    if (row.status === "denied") return deviceError("access_denied");
    if (row.status === "expired" || now >= row.expiresAt) {
      if (row.status !== "expired") t.update(deviceGrants).set({ status: "expired" }).where(eq(deviceGrants.id, row.id)).run();
      return deviceError("expired_token", "The login request expired before it was approved; start the login again.");
    }
    if (row.status === "approved") return redeem(core, t, row, meta, now);

    if (row.lastPolledAt !== null && now - row.lastPolledAt < row.pollInterval * 1000) {
      const interval = row.pollInterval + SLOW_DOWN_STEP_S;
      t.update(deviceGrants).set({ pollInterval: interval, lastPolledAt: now }).where(eq(deviceGrants.id, row.id)).run();
      return deviceError("slow_down", `Polling too fast; wait at least ${interval} seconds between polls from now on.`);
    }
    t.update(deviceGrants).set({ lastPolledAt: now }).where(eq(deviceGrants.id, row.id)).run();
    return deviceError("authorization_pending");
  });
}

/** Mint the approved grant's token for its approver and mark the grant redeemed, in `t`. */
function redeem(core: Core, t: Tx, row: DeviceGrantRow, meta: RequestMeta, now: number): PollOutcome {
  const operator = row.decidedBy ? findOperator(t, row.decidedBy) : null;
  const project = row.projectId ? core.access.findProjectById(row.projectId) : null;
  if (!operator || operator.suspendedAt !== null || row.roleId === null || row.scopes === null || (row.projectId !== null && !project)) {
    t.update(deviceGrants).set({ status: "denied", lastPolledAt: now }).where(eq(deviceGrants.id, row.id)).run();
    return deviceError("access_denied", "The approver or the chosen project no longer exists; start the login again.");
  }
  // The role as it was when the approval was checked: the snapshot, not the role today.
  const role = { id: row.roleId, displayName: row.roleName ?? "", permissions: row.scopes } as RoleRow;
  const { secret, row: token } = insertToken(core, t, {
    operatorId: operator.id,
    name: row.tokenName ?? defaultTokenName(row.clientName),
    kind: row.client,
    role,
    projectId: row.projectId,
    expiresAt: row.tokenExpiresAt,
  });
  const claimed = t
    .update(deviceGrants)
    .set({ redeemedAt: now, tokenId: token.id, lastPolledAt: now })
    .where(and(eq(deviceGrants.id, row.id), isNull(deviceGrants.redeemedAt)))
    .returning({ id: deviceGrants.id })
    .all();
  if (claimed.length === 0) throw new Error("device grant redeemed twice");
  const name = operatorName(operator);
  writeAudit(core, t, {
    actor: operator.kind === "person" ? name : "api-token",
    operatorId: operator.id,
    via: "token",
    ip: meta.ip,
    action: "device.redeem",
    target: `device-grant:${row.id}`,
    outcome: "allowed",
    project: project?.slug ?? null,
    context: { request: meta.requestId, token: token.id, client: row.client },
  });
  const scopes = JSON.parse(row.scopes) as string[];
  return {
    ok: true,
    body: {
      access_token: secret,
      token_type: "Bearer",
      expires_in: row.tokenExpiresAt === null ? null : Math.max(0, Math.floor((row.tokenExpiresAt - now) / 1000)),
      operator: name,
      project: project?.slug ?? null,
      role: row.roleName ?? "",
      scope: scopes.join(" "),
    },
  };
}

/** The newest grant with normalised user code `code`, or null. */
export function findGrantByUserCode(q: Queryable, code: string): DeviceGrantRow | null {
  return q.select().from(deviceGrants).where(eq(deviceGrants.userCode, code)).orderBy(desc(deviceGrants.createdAt)).limit(1).get() ?? null;
}
