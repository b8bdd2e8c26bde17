/**
 * The sources domain's scheduler items: `sources.save` (commit a studio save and open its pull
 * request) and `sources.scan` (evaluate a repository and reconcile its ops.toml). One attempt
 * each: a failure is recorded on the save or scan with its reason, for a person to retry.
 */
import type { Core } from "../../core/core";
import { runSave, SAVE_ITEM } from "./saves";
import { runScan, SCAN_ITEM } from "./scans";

export function defineSourceJobs(core: Core): void {
  core.scheduler.defineItem(SAVE_ITEM, (payload) => runSave(core, (payload as { saveId: number }).saveId), { maxAttempts: 1 });
  core.scheduler.defineItem(SCAN_ITEM, (payload) => runScan(core, (payload as { scanId: number }).scanId), { maxAttempts: 1 });
}
