/**
 * Domain events the registries raise, inside the transaction of the change that causes them.
 * `package.published` goes to the members of the publishing project (the notifications domain
 * fans it out per their settings); its params name the package and never hold personal data.
 */
import type { Core, ProjectRef } from "../../../core/core";
import type { Tx } from "../../../core/db/client";
import { notify } from "../../notifications/service";

export interface PackagePublishedEvent {
  project: ProjectRef;
  registry: string;
  name: string;
  version: string;
}

/** Raise `package.published` for the project's members, in `t`. */
export function packagePublished(core: Core, t: Tx, e: PackagePublishedEvent): void {
  notify(core, t, {
    kind: "package.published",
    projectId: e.project.id,
    params: { project: e.project.slug, registry: e.registry, name: e.name, version: e.version },
    link: `/projects/${e.project.slug}/packages/${e.registry}/${encodeURIComponent(e.name)}`,
  });
}
