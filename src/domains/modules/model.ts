/**
 * Schemas of the module reads (document 3, Packages: ProjectModulesResponse, ModuleSummary,
 * ModuleConsumer, ModuleNotes).
 */
import { t } from "elysia";

export const ModuleConsumer = t.Object(
  {
    package: t.String({ description: "Published name it resolved" }),
    project: t.String(),
    version: t.String({ description: "Version its newest default-branch build resolved" }),
  },
  { title: "ModuleConsumer" },
);
export type ModuleConsumer = typeof ModuleConsumer.static;

export const ModuleSummary = t.Object(
  {
    consumers: t.Array(t.Ref("ModuleConsumer"), { description: "Projects whose newest default-branch build resolved one of the module's halves" }),
    crate_name: t.Union([t.String(), t.Null()], { description: "<platform>-<name> on the cargo registry" }),
    description: t.String(),
    layer_name: t.Union([t.String(), t.Null()], { description: "npm name" }),
    name: t.String(),
    requires: t.Array(t.String(), { description: "Other modules it depends on" }),
  },
  { title: "ModuleSummary" },
);
export type ModuleSummary = Omit<typeof ModuleSummary.static, "consumers"> & { consumers: ModuleConsumer[] };

export const ProjectModulesResponse = t.Object(
  {
    modules: t.Array(t.Ref("ModuleSummary")),
    version: t.Union([t.String(), t.Null()], { description: "Tag version the list was recorded at; null until a modules/ tree has published" }),
  },
  { title: "ProjectModulesResponse" },
);
export type ProjectModulesResponse = { modules: ModuleSummary[]; version: string | null };

export const ModuleNotes = t.Object(
  {
    notes: t.String({ description: "Markdown of the release's changelog section" }),
    version: t.String(),
  },
  { title: "ModuleNotes" },
);
export type ModuleNotes = typeof ModuleNotes.static;

export const moduleModels = { ModuleConsumer, ModuleSummary, ProjectModulesResponse, ModuleNotes };
