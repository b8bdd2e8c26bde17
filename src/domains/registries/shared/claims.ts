/**
 * Name claims (DESIGN.md §3): a project claims an npm or cargo name before its first publish.
 * Names are unique per registry across the estate (cargo modulo case and `-`/`_`). Claiming
 * again from the owning project is a no-op (200); from another project 409. A claim with no
 * versions can be released.
 */
import { and, count, eq } from "drizzle-orm";
import type { InferSelectModel } from "drizzle-orm";
import type { Core, ProjectRef } from "../../../core/core";
import type { Queryable } from "../../../core/db/client";
import { tx } from "../../../core/db/client";
import { auditAllowed, type AuditActor } from "../../../core/audit";
import { OpsError } from "../../../core/errors";
import { packages, packageVersions } from "./tables";
import { statements } from "./statements";
import { registryReadCache, RegistryReadCache } from "./read-cache";
import { lookupKey, nameKey, validateClaimName, type ClaimRegistry, type Registry } from "./names";

export type PackageRow = InferSelectModel<typeof packages>;
export type VersionRow = InferSelectModel<typeof packageVersions>;

/** The package whose uniqueness key matches `name` in `registry`, or null. */
export function findPackageByKey(q: Queryable, registry: Registry, name: string): PackageRow | null {
  return q.select().from(packages).where(and(eq(packages.registry, registry), eq(packages.nameKey, nameKey(registry, name)))).get() ?? null;
}

/**
 * The package a protocol path names (case-insensitive, separators exact), or null. The hot path of
 * every install: served from the registries' read cache while the database is unchanged
 * (`request` lets a GET check that once per request; docs/decisions/0641).
 */
export function findPackageByLookup(core: Core, registry: Registry, name: string, request?: Request): PackageRow | null {
  const cache = registryReadCache(core);
  const rows = cache.sync(request) ? cache.map<PackageRow>("packages") : new Map<string, PackageRow>();
  const key = `${registry}\u0000${lookupKey(name)}`;
  const hit = rows.get(key);
  if (hit) return hit;
  const r = statements(core).packageByLookup.get(registry, lookupKey(name));
  if (!r) return null;
  const row: PackageRow = { id: r.id, registry: r.registry, name: r.name, nameKey: r.name_key, lookup: r.lookup, projectId: r.project_id, claimedBy: r.claimed_by, createdAt: r.created_at, updatedAt: r.updated_at };
  RegistryReadCache.put(rows, key, row);
  return row;
}

export function findPackageById(q: Queryable, id: number): PackageRow | null {
  return q.select().from(packages).where(eq(packages.id, id)).get() ?? null;
}

export interface ClaimResult {
  package: PackageRow;
  created: boolean;
}

/**
 * Claim `name` in `registry` for `project` (audited as `packages.publish`). 201-style `created`
 * for a new claim, `created: false` when the project already holds it, 409 when another project
 * does (a cargo name that differs only in case or `-`/`_` is the same name).
 */
export function claimPackage(core: Core, project: ProjectRef, registry: ClaimRegistry, rawName: string, actor: AuditActor): ClaimResult {
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
  const name = validateClaimName(core, registry, rawName);
  return tx(core.db, (t) => {
    const existing = findPackageByKey(t, registry, name);
    if (existing) {
      if (existing.projectId === project.id) return { package: existing, created: false };
      throw new OpsError("conflict", `The ${registry} name "${existing.name}" is already claimed by another project.`);
    }
    const now = core.clock.now();
    const row = t
      .insert(packages)
      .values({ registry, name, nameKey: nameKey(registry, name), lookup: lookupKey(name), projectId: project.id, claimedBy: actor.actor, createdAt: now, updatedAt: now })
      .returning()
      .get();
    auditAllowed(core, t, actor, "packages.publish", `package:${registry}:${name}`, { project: project.slug }, { op: "package.claim" });
    return { package: row, created: true };
  });
}

/** Release a claim that has no versions (audited). 404 when the project holds no such claim, 409 when it has versions. */
export function releaseClaim(core: Core, project: ProjectRef, registry: ClaimRegistry, name: string, actor: AuditActor): void {
  tx(core.db, (t) => {
    const existing = findPackageByKey(t, registry, name);
    if (!existing || existing.projectId !== project.id) throw new OpsError("not_found", `Project "${project.slug}" holds no claim on the ${registry} name "${name}".`);
    const n = t.select({ n: count() }).from(packageVersions).where(eq(packageVersions.packageId, existing.id)).get()?.n ?? 0;
    if (n > 0) throw new OpsError("conflict", `"${existing.name}" has ${n} published version${n === 1 ? "" : "s"}; a claim with versions cannot be released.`);
    t.delete(packages).where(eq(packages.id, existing.id)).run();
    auditAllowed(core, t, actor, "packages.publish", `package:${registry}:${existing.name}`, { project: project.slug }, { op: "package.release" });
  });
}
