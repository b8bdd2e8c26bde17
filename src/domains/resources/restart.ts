/**
 * Restarting a service so it mounts a new secret-group render. The deployments domain installs
 * `resources.service-restarter` in `core.locals`: it records a restart rollout of a running
 * service (`rolled`) or says why it leaves the service alone (never deployed, scaled to zero).
 * Without a runtime attached (a Core without the deployments domain), a restart is recorded: the
 * service's status becomes `pending` with the summary `restart required: group <g> v<n>`, kept in
 * `restart_note` until something restarts it.
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
  if (runtime) return runtime(core, t, service, `secret group ${group} v${version} was rendered`);
  t.update(resources)
    .set({ statusState: "pending", statusSummary: note, restartNote: note, statusAt: core.clock.now() })
    .where(eq(resources.id, service.id))
    .run();
  return { rolled: false, reason: "no runtime attached: marked restart required (status pending)" };
}
