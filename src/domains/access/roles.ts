/**
 * Roles. The four fixed roles (owner, maintainer, developer, viewer) are rows with
 * `project_id` null, created at install and kept in step with the catalog; every project sees
 * them. Projects add their own roles.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { FIXED_ROLES } from "../../core/authz/catalog";
import { uuidv7 } from "../../core/ids";
import { roles } from "./tables";
import type { RoleRow } from "./rows";

/** Create or refresh the fixed roles. Idempotent; runs in every process at install. */
export function ensureFixedRoles(core: Core): void {
  const now = core.clock.now();
  core.db.transaction((t) => {
    for (const f of FIXED_ROLES) {
      const existing = t.select().from(roles).where(and(isNull(roles.projectId), eq(roles.slug, f.slug))).get();
      const permissions = JSON.stringify(f.permissions);
      if (!existing) {
        t.insert(roles)
          .values({ id: uuidv7(now), projectId: null, slug: f.slug, displayName: f.displayName, description: f.description, permissions, fixed: true, scope: "", createdAt: now, updatedAt: now })
          .run();
      } else if (existing.permissions !== permissions || existing.displayName !== f.displayName || existing.description !== f.description || !existing.fixed) {
        t.update(roles).set({ permissions, displayName: f.displayName, description: f.description, fixed: true, updatedAt: now }).where(eq(roles.id, existing.id)).run();
      }
    }
  });
}

/** The fixed role with `slug` (owner, maintainer, developer, viewer). */
export function fixedRole(core: Core, slug: string): RoleRow {
  const row = core.db.select().from(roles).where(and(isNull(roles.projectId), eq(roles.slug, slug))).get();
  if (!row) throw new Error(`fixed role ${slug} missing`);
  return row;
}

export function findRole(q: Queryable, id: string): RoleRow | null {
  return q.select().from(roles).where(eq(roles.id, id)).get() ?? null;
}
