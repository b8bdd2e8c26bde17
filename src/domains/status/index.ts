/**
 * The status domain module: the platform's components, the `status.probe` task, and under
 * `ops serve` an `api` transition to operational at start and to down at stop.
 * Decisions: docs/decisions/0403-device-login-cli-status.md.
 */
import type { DomainModule } from "../../core/core";
import { statusRoutes } from "./routes";
import { ensurePlatformComponents, probePlatform, setComponentState, PROBE_TASK } from "./service";

export const statusModule: DomainModule = {
  name: "status",
  install(core) {
    ensurePlatformComponents(core);
    core.scheduler.defineTask(PROBE_TASK, "* * * * *", () => probePlatform(core));
  },
  onServe(core) {
    setComponentState(core, "api", "operational", "server started");
    core.onClose.push(() => {
      setComponentState(core, "api", "down", "server stopped");
    });
  },
  routes: statusRoutes,
};
