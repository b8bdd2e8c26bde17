/**
 * Row access shared by the translation services: finding bundles, the change counters exports
 * are cached against, and the audit row every mutation writes in its transaction.
 */
import type { InferSelectModel } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { OpsError } from "../../core/errors";
import type { tmsBundles, tmsKeys } from "./tables";

export type BundleRow = InferSelectModel<typeof tmsBundles>;
export type KeyRow = InferSelectModel<typeof tmsKeys>;

/** The audit action of every translations mutation (the permission it needs); `op` says which. */
export const WRITE = "translations.write";

interface BundleRaw {
  id: number;
  project_id: string;
  kind: BundleRow["kind"];
  name: string;
  source_locale: string;
  package_registry: BundleRow["packageRegistry"];
  package_name: string | null;
  owner: string;
  generation: number;
  created_at: number;
  updated_at: number;
}

function toRow(r: BundleRaw | null): BundleRow | null {
  return r
    ? {
        id: r.id,
        projectId: r.project_id,
        kind: r.kind,
        name: r.name,
        sourceLocale: r.source_locale,
        packageRegistry: r.package_registry,
        packageName: r.package_name,
        owner: r.owner,
        generation: r.generation,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      }
    : null;
}

// Bundle lookups are on every export's path: raw statements (bun:sqlite caches them per SQL text),
// which cost a fraction of the query builder's.
export function findBundleById(core: Core, id: number): BundleRow | null {
  return toRow(core.sqlite.query<BundleRaw, [number]>("SELECT * FROM tms_bundles WHERE id = ?").get(id));
}

/**
 * A bundle whose home is `project`, named by its id or its name (an own bundle's name, or a
 * package bundle's package name). 404 otherwise, saying which project was searched.
 */
export function resolveHomeBundle(core: Core, project: ProjectRef, ref: string): BundleRow {
  const byId = /^[0-9]{1,15}$/.test(ref) ? findBundleById(core, Number(ref)) : null;
  const row = byId && byId.projectId === project.id ? byId : toRow(core.sqlite.query<BundleRaw, [string, string]>("SELECT * FROM tms_bundles WHERE project_id = ? AND name = ?").get(project.id, ref));
  if (!row) throw new OpsError("not_found", `Project "${project.slug}" has no translation bundle "${ref.slice(0, 200)}".`);
  return row;
}

export function findKey(core: Core, bundleId: number, namespace: string, key: string): KeyRow | null {
  const r = core.sqlite
    .query<{ id: number; bundle_id: number; namespace: string; key: string; created_at: number; deleted_at: number | null }, [number, string, string]>(
      "SELECT * FROM tms_keys WHERE bundle_id = ? AND namespace = ? AND key = ?",
    )
    .get(bundleId, namespace, key);
  return r ? { id: r.id, bundleId: r.bundle_id, namespace: r.namespace, key: r.key, createdAt: r.created_at, deletedAt: r.deleted_at } : null;
}

/** 409 `archived` for a project that takes no changes. */
export function assertWritable(project: ProjectRef): void {
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
}

/** The slug of a project by id ("" when it is gone). */
export function slugOf(core: Core, projectId: string): string {
  return core.access.findProjectById(projectId)?.slug ?? "";
}

/** `<registry>:<name>` of a package bundle, else null. */
export function packageRef(b: Pick<BundleRow, "packageRegistry" | "packageName">): string | null {
  return b.packageRegistry && b.packageName ? `${b.packageRegistry}:${b.packageName}` : null;
}

/**
 * Note a change anywhere: exports compare this counter before anything else. Raw statements run
 * on the same connection, so inside `t` they are part of its transaction.
 */
function bumpEstate(core: Core, _t: Tx): void {
  core.sqlite.query("INSERT INTO tms_state (id, generation) VALUES (1, 1) ON CONFLICT(id) DO UPDATE SET generation = generation + 1").run();
}

/** A change of a bundle's keys, values or versions (in `t`). */
export function bundleChanged(core: Core, t: Tx, bundleId: number): void {
  core.sqlite.query("UPDATE tms_bundles SET generation = generation + 1, updated_at = ? WHERE id = ?").run(core.clock.now(), bundleId);
  bumpEstate(core, t);
}

/** A change of what a project composes (its overrides or attachments), in `t`. */
export function projectChanged(core: Core, t: Tx, projectId: string): void {
  core.sqlite.query("INSERT INTO tms_project_state (project_id, generation) VALUES (?, 1) ON CONFLICT(project_id) DO UPDATE SET generation = generation + 1").run(projectId);
  bumpEstate(core, t);
}

/** A new bundle exists (estate-shared ones change every project's composition). */
export function estateChanged(core: Core, t: Tx): void {
  bumpEstate(core, t);
}

/** The audit row of a translations mutation, in the mutation's transaction. */
export function auditWrite(core: Core, t: Tx, actor: AuditActor, project: ProjectRef, target: string, op: string, context: Record<string, string | number | boolean | null> = {}): void {
  auditAllowed(core, t, actor, WRITE, target, { project: project.slug }, { op, ...context });
}
