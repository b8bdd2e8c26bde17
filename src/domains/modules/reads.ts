/**
 * The module reads: a project's current module list with its halves, requirements and consumers,
 * and one module's release notes, newest first (SemVer precedence).
 */
import { and, asc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { OpsError } from "../../core/errors";
import { moduleNotes, modules, moduleSets } from "./tables";
import { consumersOf } from "./store";
import type { ModuleConsumer, ModuleNotes, ProjectModulesResponse } from "./model";

/** `GET /projects/{slug}/modules`. */
export function projectModules(core: Core, project: ProjectRef): ProjectModulesResponse {
  const set = core.db.select().from(moduleSets).where(eq(moduleSets.projectId, project.id)).get();
  if (!set) return { modules: [], version: null };
  const rows = core.db
    .select()
    .from(modules)
    .where(and(eq(modules.projectId, project.id), eq(modules.current, true)))
    .orderBy(asc(modules.name))
    .all();
  const slugs = new Map<string, string>();
  const slugOf = (id: string) => {
    if (!slugs.has(id)) slugs.set(id, core.access.findProjectById(id)?.slug ?? "");
    return slugs.get(id)!;
  };
  return {
    version: set.version,
    modules: rows.map((r) => {
      const consumers: ModuleConsumer[] = [];
      for (const [registry, name] of [
        ["cargo", r.crateName],
        ["npm", r.layerName],
      ] as const) {
        if (name) for (const c of consumersOf(core, registry, name)) consumers.push({ package: name, project: slugOf(c.projectId), version: c.version });
      }
      consumers.sort((a, b) => a.project.localeCompare(b.project) || a.package.localeCompare(b.package) || a.version.localeCompare(b.version));
      return {
        consumers: consumers.filter((c) => c.project !== ""),
        crate_name: r.crateName,
        description: r.description,
        layer_name: r.layerName,
        name: r.name,
        requires: JSON.parse(r.requires) as string[],
      };
    }),
  };
}

/** `GET /projects/{slug}/modules/{name}/notes`: 404 for a module the project never published. */
export function notesOf(core: Core, project: ProjectRef, name: string): ModuleNotes[] {
  const row = core.db
    .select({ name: modules.name })
    .from(modules)
    .where(and(eq(modules.projectId, project.id), eq(modules.name, name)))
    .get();
  if (!row) throw new OpsError("not_found", `Project "${project.slug}" has no module "${name}".`);
  return core.db
    .select({ version: moduleNotes.version, notes: moduleNotes.notes })
    .from(moduleNotes)
    .where(and(eq(moduleNotes.projectId, project.id), eq(moduleNotes.module, name)))
    .all()
    .sort((a, b) => Bun.semver.order(b.version, a.version));
}
