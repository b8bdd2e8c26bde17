/**
 * Sessions: a person signs in (console or CLI) and gets a session bearer `opss_…`; only its
 * digest is stored. Console sessions end after 12 h idle or 7 days; CLI sessions after 30 days.
 * A session is created only by a sign-in, so its `created_at` is when that sign-in happened
 * (what "signed in recently" reads, decision 0543).
 */
import { and, eq, isNull, ne } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { newSecret, secretDigest, uuidv7 } from "../../core/ids";
import type { RequestMeta } from "../../core/authz/principal";
import { sessions } from "./tables";
import type { SessionRow } from "./rows";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const SESSION_IDLE_MS = { console: 12 * HOUR, cli: 30 * DAY } as const;
export const SESSION_ABSOLUTE_MS = { console: 7 * DAY, cli: 30 * DAY } as const;

/** Create a session inside `t`; returns the bearer (shown once) and the row. */
export function insertSession(core: Core, t: Tx, operatorId: string, kind: "console" | "cli", meta: Pick<RequestMeta, "ip" | "userAgent">): { secret: string; row: SessionRow } {
  const now = core.clock.now();
  const secret = newSecret("opss_");
  const row = t
    .insert(sessions)
    .values({
      id: uuidv7(now),
      operatorId,
      kind,
      digest: secretDigest(secret),
      ip: meta.ip,
      userAgent: meta.userAgent,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + SESSION_ABSOLUTE_MS[kind],
    })
    .returning()
    .get();
  return { secret, row };
}

/** When `row` stops working, given the freshest last-seen time. */
export function sessionEndsAt(row: Pick<SessionRow, "kind" | "expiresAt">, lastSeenAt: number): number {
  return Math.min(row.expiresAt, lastSeenAt + SESSION_IDLE_MS[row.kind]);
}

/** End every live session of `operatorId` but `keep` (the caller's own) inside `t`; returns how many ended. */
export function endOtherSessions(t: Tx, operatorId: string, keep: string | null, now: number): number {
  return t
    .update(sessions)
    .set({ revokedAt: now })
    .where(and(eq(sessions.operatorId, operatorId), isNull(sessions.revokedAt), ne(sessions.id, keep ?? "")))
    .returning({ id: sessions.id })
    .all().length;
}
