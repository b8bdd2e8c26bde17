/**
 * The backups domain module: with OPS_BACKUP_TO set, the `backups.scheduled` task on
 * OPS_BACKUP_SCHEDULE and the `backups.watch` task; the status route. The commands
 * (`ops backup …`, `ops restore`) are in commands.ts.
 */
import type { DomainModule } from "../../core/core";
import { BACKUP_TASK, WATCH_TASK, runScheduledBackup, watchBackups } from "./jobs";
import { backupsRoutes } from "./routes";

export const backupsModule: DomainModule = {
  name: "backups",
  install(core) {
    if (core.config.backup.to === null) return;
    core.scheduler.defineTask(BACKUP_TASK, core.config.backup.schedule, () => runScheduledBackup(core));
    core.scheduler.defineTask(WATCH_TASK, "*/15 * * * *", async () => {
      await watchBackups(core);
    });
  },
  routes: backupsRoutes,
};
