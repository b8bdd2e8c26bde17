/**
 * The resources domain's scheduler work: job runs (one item per run), the cron of scheduled jobs
 * (a task every minute that queues due runs), and a periodic observation of every resource.
 */
import type { Core } from "../../core/core";
import { resources } from "./tables";
import { executeRun, enqueueDueRuns, JOB_RUN_ITEM, JOB_SCHEDULE_TASK } from "./job-runs";
import { observeRow } from "./store";

export const OBSERVE_TASK = "resources.observe-all";

/** Observe every resource; one that cannot be observed now keeps its stored status. */
export async function observeAll(core: Core): Promise<number> {
  let n = 0;
  for (const row of core.db.select().from(resources).all()) {
    try {
      await observeRow(core, row);
      n++;
    } catch (e) {
      core.log.info("resource not observed", { type: row.type, name: row.name, reason: (e as Error).message });
    }
  }
  return n;
}

export function defineResourceJobs(core: Core): void {
  core.scheduler.defineItem(JOB_RUN_ITEM, (payload, item) => executeRun(core, payload, item), { maxAttempts: 1 });
  core.scheduler.defineTask(JOB_SCHEDULE_TASK, "* * * * *", () => {
    enqueueDueRuns(core);
  });
  core.scheduler.defineTask(OBSERVE_TASK, "*/5 * * * *", async () => {
    await observeAll(core);
  });
}
