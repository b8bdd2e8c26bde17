/**
 * `deployments.health` (every minute): probe every running service's replicas the way a rollout
 * does (`health_check_path` answering 2xx, or the port accepting a connection). All answering is
 * `up`, some `degraded`, none `down`; a crashed replica counts as not answering. A change of
 * verdict is stored, drives the service's status component, and a fall to `down` raises
 * `probe.down` for the project.
 */
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { specOf, type ServiceSpec } from "../resources/service";
import { notify } from "../notifications/service";
import { runtimeOf, probeOnce } from "../../adapters/runtime";
import { serviceRuns } from "./tables";
import { liveOf, serviceRow, type ServiceAddress } from "./live";
import { describeExit } from "./probe";
import { serviceLink } from "./record";
import { setHealth, syncStatusComponent, writeServiceStatus } from "./status";

export const HEALTH_TASK = "deployments.health";
const PROBE_MS = 5000;

/** Probe one service now; returns the verdict (null when nothing of it runs). */
export async function probeService(core: Core, addr: ServiceAddress): Promise<{ health: "up" | "degraded" | "down"; note: string } | null> {
  const live = liveOf(core, addr);
  const svc = serviceRow(core, addr);
  if (!live || live.replicaIds.length === 0 || !svc) return null;
  const path = specOf<ServiceSpec>(svc).health_check_path ?? null;
  const runtime = runtimeOf(core);
  const results = await Promise.all(
    live.replicaIds.map(async (id) => {
      const st = runtime.status(id);
      if (!st) return { ok: false, why: `${id} is gone` };
      if (st.state === "crashed") return { ok: false, why: `${id}: ${describeExit(st.lastExit)}` };
      const r = await probeOnce({ host: st.host, port: st.port, path }, PROBE_MS);
      return { ok: r.ok, why: r.ok ? "" : `${id}: ${r.error ?? "no answer"}` };
    }),
  );
  const failing = results.filter((r) => !r.ok);
  if (failing.length === 0) return { health: "up", note: `${results.length} of ${results.length} replicas answer${path ? ` ${path}` : ""}` };
  const note = `${failing.length} of ${results.length} replicas fail: ${failing[0].why}`;
  return { health: failing.length === results.length ? "down" : "degraded", note };
}

/** Probe one service and record a change of verdict (a fall to `down` raises `probe.down`). */
export async function recordProbe(core: Core, addr: ServiceAddress): Promise<void> {
  if (core.locals.get("core.closed")) return;
  const verdict = await probeService(core, addr);
  if (!verdict || core.locals.get("core.closed")) return;
  const before = setHealth(core, addr, verdict.health, verdict.note);
  if (before === verdict.health) return;
  if (verdict.health === "down") {
    tx(core.db, (t) => {
      notify(core, t, { kind: "probe.down", projectId: addr.project.id, params: { project: addr.project.slug, environment: addr.environment, service: addr.service }, link: serviceLink(addr) });
    });
  }
  writeServiceStatus(core, addr);
  syncStatusComponent(core, addr);
}

/** Probe every service that should be running. */
export async function probeServices(core: Core): Promise<void> {
  for (const run of core.db.select().from(serviceRuns).all()) {
    if (run.replicas === 0) continue;
    const project = core.access.findProjectById(run.projectId);
    if (project) await recordProbe(core, { project, environment: run.environment, service: run.service });
  }
}
