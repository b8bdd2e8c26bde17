/**
 * Where an image runs, told to the registry by the floor above it. The registry never imports
 * deployments: the deployments module's `install` puts its answer here (`installImagePlacement`),
 * and the project's image list (`ImageRepoSummary.environments`) asks it. Without one installed,
 * an image runs nowhere.
 */
import type { Core } from "../../../core/core";

/** The environments of a project where `service` runs `digest` now, in the project's order. */
export type ImagePlacement = (core: Core, projectId: string, service: string, digest: string) => string[];

const PLACEMENT = "registries.image-placement";

/** Install the answer to "where does this image run" (the deployments module's `install` calls this). */
export function installImagePlacement(core: Core, placement: ImagePlacement): void {
  core.locals.set(PLACEMENT, placement);
}

/** The environments where `service` runs `digest` now; none when nothing is installed. */
export function environmentsRunning(core: Core, projectId: string, service: string, digest: string): string[] {
  const placement = core.locals.get(PLACEMENT) as ImagePlacement | undefined;
  return placement ? placement(core, projectId, service, digest) : [];
}
