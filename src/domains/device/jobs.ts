/**
 * `device.expire-grants` (every minute): pending grants, and approved ones the client never
 * redeemed, move to `expired` once their 900 s are up; decided grants are forgotten after 30 days.
 */
import { and, eq, isNull, lte, or, lt } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { deviceGrants } from "./tables";

const KEEP_MS = 30 * 86_400_000;

/** Expire what is due; returns how many grants moved to `expired`. */
export function expireDeviceGrants(core: Core): number {
  const now = core.clock.now();
  return tx(core.db, (t) => {
    const moved = t
      .update(deviceGrants)
      .set({ status: "expired" })
      .where(
        and(
          lte(deviceGrants.expiresAt, now),
          or(eq(deviceGrants.status, "pending"), and(eq(deviceGrants.status, "approved"), isNull(deviceGrants.redeemedAt))),
        ),
      )
      .returning({ id: deviceGrants.id })
      .all();
    t.delete(deviceGrants).where(lt(deviceGrants.expiresAt, now - KEEP_MS)).run();
    return moved.length;
  });
}
