/**
 * The modules domain: what a project's `modules/` tree publishes (plan, publish through the
 * registries in-process, locale files into translations) and the two module reads.
 * Decisions: docs/decisions/0416-publish-builds-and-modules.md.
 */
import type { DomainModule } from "../../core/core";
import { moduleRoutes } from "./routes";

export const modulesModule: DomainModule = {
  name: "modules",
  routes(core) {
    return moduleRoutes(core);
  },
};
