/**
 * The access domain module: installs the authentication hooks and fixed roles, batches
 * last-seen writes, bootstraps the estate owner under `serve`.
 * Decisions: docs/decisions/0405-access.md.
 */
import type { DomainModule } from "../../core/core";
import { accessHooks, flushTouches } from "./authn";
import { ensureFixedRoles } from "./roles";
import { bootstrapOwner } from "./bootstrap";
import { accessRoutes } from "./routes";

export const accessModule: DomainModule = {
  name: "access",
  install(core) {
    ensureFixedRoles(core);
    core.access = accessHooks(core);
    core.scheduler.defineTask("access.flush-last-used", "* * * * *", () => {
      flushTouches(core);
    });
    core.onClose.push(() => {
      flushTouches(core);
    });
  },
  routes: accessRoutes,
  async onServe(core) {
    await bootstrapOwner(core);
  },
};
