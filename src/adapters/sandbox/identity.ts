/**
 * Each project's host identity (DESIGN §6 "Identity", decision 0202): when ops is root, a
 * project's sandboxes run as uid = gid = `OPS_SANDBOX_UID_BASE + slot`, the slot given once and
 * kept in `sandbox_identities`; those ids have no account on the host and own nothing but that
 * project's build dirs, caches and unpacked images (0700). When ops is not root, every sandbox
 * runs as ops's own user inside user namespaces and `ops doctor` says so.
 */
import { eq, sql } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { sandboxIdentities } from "./tables";
import { defaultIdentity, runsAsRoot, type SandboxIdentity } from "./users";

/** The largest uid the kernel gives (2^32 - 2: -1 means "unchanged" to setresuid). */
const MAX_ID = 4_294_967_294;

/** The identity of `projectId`'s sandboxes, giving the project its slot on first use. */
export function projectIdentity(core: Core, projectId: string): SandboxIdentity {
  if (!runsAsRoot()) return defaultIdentity();
  let row = core.db.select().from(sandboxIdentities).where(eq(sandboxIdentities.projectId, projectId)).get();
  if (!row) {
    row = tx(core.db, (t) => {
      const again = t.select().from(sandboxIdentities).where(eq(sandboxIdentities.projectId, projectId)).get();
      if (again) return again;
      t.insert(sandboxIdentities).values({ projectId, createdAt: core.clock.now() }).onConflictDoNothing().run();
      return t.select().from(sandboxIdentities).where(eq(sandboxIdentities.projectId, projectId)).get()!;
    });
  }
  const id = core.config.sandboxUidBase + row.slot;
  if (id > MAX_ID) throw new Error(`OPS_SANDBOX_UID_BASE ${core.config.sandboxUidBase} leaves no uid for project slot ${row.slot}`);
  return { uid: id, gid: id };
}

/** How many projects have an identity (ops doctor). */
export function identityCount(core: Core): number {
  return core.db.select({ n: sql<number>`count(*)` }).from(sandboxIdentities).get()?.n ?? 0;
}
