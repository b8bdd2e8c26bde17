/**
 * Restarting a service so it mounts a new secret-group render. ops has no runtime attached yet
 * (deployments come with the delivery domain), so a restart is recorded: the service's status
 * becomes `pending` with the summary `restart required: group <g> v<n>`, kept in `restart_note`
 * until a runtime restarts it. A runtime installs `resources.service-restarter` in `core.locals`
 * to restart for real; then running services are `rolled`.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { resources } from "./tables";
import { specOf, type ResourceRow } from "./rows";
import type { ServiceSpec } from "./specs";

export type RestartOutcome = { rolled: true } | { rolled: false; reason: string };
export type ServiceRestarter = (core: Core, t: Tx, service: ResourceRow, note: string) => RestartOutcome;

/** Restart `service` (through a runtime when one is installed) or mark it restart-required. */
export function markRestartRequired(core: Core, t: Tx, service: ResourceRow, group: string, version: number): RestartOutcome {
  if ((specOf<ServiceSpec>(service).replicas ?? 1) === 0) return { rolled: false, reason: "scaled to zero (replicas: 0); it mounts the new version when it starts" };
  const note = `restart required: group ${group} v${version}`;
  const runtime = core.locals.get("resources.service-restarter") as ServiceRestarter | undefined;
  if (runtime) {
    const out = runtime(core, t, service, note);
    if (out.rolled) return out;
  }
  t.update(resources)
    .set({ statusState: "pending", statusSummary: note, restartNote: note, statusAt: core.clock.now() })
    .where(eq(resources.id, service.id))
    .run();
  return { rolled: false, reason: "no runtime attached: marked restart required (status pending)" };
}
