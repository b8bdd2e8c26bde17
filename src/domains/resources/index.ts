/**
 * The resources domain module: typed resources, their per-type rules, job runs on the
 * scheduler, and start-up recovery of runs a stopped server left in flight.
 * Decisions: docs/decisions/0404-resources-and-secrets.md.
 */
import type { DomainModule } from "../../core/core";
import { installBuiltinKinds } from "./kind-rules";
import { installBucketKind } from "./buckets";
import { installDatabaseKind } from "./databases";
import { defineResourceJobs } from "./jobs";
import { recoverInterruptedRuns, stopLiveRuns } from "./job-runs";
import { sweepJobDisks } from "./job-limits";
import { resourcesRoutes } from "./routes";
import { checkDomainHosts } from "./domain-hosts";

export const resourcesModule: DomainModule = {
  name: "resources",
  install(core) {
    installBuiltinKinds(core);
    installBucketKind(core);
    installDatabaseKind(core);
    defineResourceJobs(core);
    core.onClose.push(() => stopLiveRuns(core, core.config.shutdownGraceMs));
  },
  async onServe(core) {
    await sweepJobDisks(core);
    recoverInterruptedRuns(core);
    await checkDomainHosts(core);
  },
  routes: resourcesRoutes,
};
