/**
 * The modules domain's rows: the release ledger a retry reads, the module list and notes a
 * complete publish records, and the consumers image builds report.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { tx } from "../../core/db/client";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { moduleConsumers, moduleNotes, moduleReleases, modules, moduleSets } from "./tables";
import type { ModulePlan } from "./module-plan";

/** The commit that published `module`'s `part` at `version`, per the ledger, or null. */
export function releasedBy(core: Core, projectId: string, module: string, part: string, version: string): string | null {
  const row = core.db
    .select({ commit: moduleReleases.commitSha })
    .from(moduleReleases)
    .where(and(eq(moduleReleases.projectId, projectId), eq(moduleReleases.module, module), eq(moduleReleases.part, part), eq(moduleReleases.version, version)))
    .get();
  return row?.commit ?? null;
}

export interface ReleasePart {
  projectId: string;
  module: string;
  part: string;
  version: string;
  registry: string;
  packageName: string;
  commit: string;
  buildId: number | null;
}

/** Write one ledger row (after the registry took the version). */
export function recordPart(core: Core, r: ReleasePart): void {
  core.db
    .insert(moduleReleases)
    .values({ projectId: r.projectId, module: r.module, part: r.part, version: r.version, registry: r.registry, packageName: r.packageName, commitSha: r.commit, buildId: r.buildId, at: core.clock.now() })
    .onConflictDoNothing()
    .run();
}

/**
 * Record a complete publish: the plan's modules become the project's current list at the tag's
 * version (modules a later tag dropped stay, not current, with their notes), and each module's
 * changelog sections are stored (a section edited since an earlier tag is rewritten). Audited as
 * `packages.publish` (`op: modules.record`) in the same transaction.
 */
export function recordModuleSet(core: Core, project: ProjectRef, plan: ModulePlan, actor: AuditActor): void {
  const now = core.clock.now();
  tx(core.db, (t) => {
    t.update(modules).set({ current: false }).where(eq(modules.projectId, project.id)).run();
    for (const m of plan.modules) {
      const row = {
        description: m.description,
        crateName: m.crate?.name ?? null,
        layerName: m.layer?.name ?? null,
        requires: JSON.stringify(m.requires),
        current: true,
        version: plan.version,
        updatedAt: now,
      };
      t.insert(modules)
        .values({ projectId: project.id, name: m.name, ...row })
        .onConflictDoUpdate({ target: [modules.projectId, modules.name], set: row })
        .run();
      for (const n of m.notes) {
        t.insert(moduleNotes)
          .values({ projectId: project.id, module: m.name, version: n.version, notes: n.notes, recordedAt: now })
          .onConflictDoUpdate({ target: [moduleNotes.projectId, moduleNotes.module, moduleNotes.version], set: { notes: n.notes, recordedAt: now } })
          .run();
      }
    }
    t.insert(moduleSets)
      .values({ projectId: project.id, version: plan.version, commitSha: plan.commit, recordedAt: now })
      .onConflictDoUpdate({ target: moduleSets.projectId, set: { version: plan.version, commitSha: plan.commit, recordedAt: now } })
      .run();
    auditAllowed(core, t, actor, "packages.publish", `modules:${project.slug}@${plan.version}`, { project: project.slug }, { op: "modules.record", commit: plan.commit, modules: plan.modules.length });
  });
}

export interface Resolution {
  registry: "npm" | "cargo";
  name: string;
  version: string;
}

/**
 * Replace what `projectId`'s newest default-branch build resolved from ops's registries (the
 * builds domain calls this with what the lockfiles of the build's context named).
 */
export function recordConsumers(core: Core, projectId: string, buildId: number | null, resolved: readonly Resolution[]): void {
  const now = core.clock.now();
  tx(core.db, (t) => {
    t.delete(moduleConsumers).where(eq(moduleConsumers.projectId, projectId)).run();
    const seen = new Set<string>();
    for (const r of resolved) {
      const k = `${r.registry}\0${r.name}\0${r.version}`;
      if (seen.has(k)) continue;
      seen.add(k);
      t.insert(moduleConsumers).values({ projectId, registry: r.registry, packageName: r.name, version: r.version, buildId, recordedAt: now }).run();
    }
  });
}

/** Consumers of a package: the projects whose newest default-branch build resolved it, with the version. */
export function consumersOf(core: Core, registry: "npm" | "cargo", name: string): Array<{ projectId: string; version: string }> {
  return core.db
    .select({ projectId: moduleConsumers.projectId, version: moduleConsumers.version })
    .from(moduleConsumers)
    .where(and(eq(moduleConsumers.registry, registry), sql`lower(${moduleConsumers.packageName}) = ${name.toLowerCase()}`))
    .all();
}
