/**
 * What a service's resource status says (replicas, crashes and restarts, the rollout in flight,
 * the health probe's verdict), and the public status component of a production service that opts
 * in (`status_page: true` with a `health_check_path`), driven by the probe's transitions.
 */
import { and, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import { SYSTEM_ACTOR } from "../../core/audit";
import { isoOrNull } from "../../core/clock";
import { findResource, specOf, writeStatus, type Observed, type ResourceRow, type ServiceSpec } from "../resources/service";
import { addComponent, listComponents, removeComponent, setComponentState } from "../status/service";
import { runtimeOf, type ReplicaStatus } from "../../adapters/runtime";
import { defaultHost, ingressOf, serviceKey, type ServiceRef } from "../../adapters/ingress";
import { liveOf, type ServiceAddress } from "./live";
import { describeExit } from "./probe";
import { inFlightDeployment, serviceKeyOf, serviceRun, shortDigest } from "./rows";
import { serviceRuns } from "./tables";

function replicaView(s: ReplicaStatus) {
  return {
    id: s.id,
    state: s.state,
    port: s.port,
    pid: s.pid,
    restarts: s.restarts,
    started_at: isoOrNull(s.startedAt),
    last_exit: s.lastExit ? { code: s.lastExit.code, signal: s.lastExit.signal, oom_killed: s.lastExit.oomKilled, at: isoOrNull(s.lastExit.at) } : null,
    next_restart_at: isoOrNull(s.nextRestartAt),
    memory: { limit_mb: s.memory.limitMb, enforced: s.memory.enforced, how: s.memory.how, reason: s.memory.reason },
    not_enforced: s.notEnforced,
    // Where it runs: the address the ingress reaches it at, and (Swarm) the node its task is on.
    host: s.host,
    node: s.node ? { name: s.node.name, addr: s.node.addr } : null,
  };
}

/**
 * Where the ingress serves a service: its default host, then each exact host of the domain
 * resources routed to it (with the path prefix); wildcards are left out (no single address).
 * Empty while the ingress does not listen.
 */
export function serviceUrls(core: Core, ref: ServiceRef): string[] {
  const ingress = ingressOf(core);
  const addr = ingress.address;
  if (!addr) return [];
  const port = addr.port === 80 ? "" : `:${addr.port}`;
  const urls = [`http://${defaultHost(ref)}${port}/`];
  const entry = ingress.table().find((e) => serviceKey(e.service) === serviceKey(ref));
  for (const route of entry?.routes ?? []) {
    for (const host of route.hosts) {
      if (host.startsWith("*.")) continue;
      const prefix = route.pathPrefix ?? "/";
      urls.push(`http://${host}${port}${prefix.endsWith("/") ? prefix : `${prefix}/`}`);
    }
  }
  return [...new Set(urls)];
}

/** The live status of a service resource. */
export function observeService(core: Core, project: ProjectRef, row: ResourceRow): Observed {
  const environment = row.environment ?? "production";
  const spec = specOf<ServiceSpec>(row);
  const wanted = spec.replicas ?? 1;
  const run = serviceRun(core.db, project.id, environment, row.name);
  const live = liveOf(core, { project, environment, service: row.name });
  const flight = inFlightDeployment(core.db, project.id, environment, row.name);
  const runtime = runtimeOf(core);
  const replicas = (live?.replicaIds ?? []).map((id) => runtime.status(id)).filter((s): s is ReplicaStatus => s !== null);
  const detail = {
    digest: run?.currentDigest ?? null,
    deployment: run?.currentDeploymentId ?? null,
    replicas_wanted: wanted,
    replicas: replicas.map(replicaView),
    // What this host cannot enforce for the service's sandboxes (DESIGN §6, Limits), never silent.
    not_enforced: [...new Set(replicas.flatMap((r) => r.notEnforced))],
    restarts: replicas.reduce((n, r) => n + r.restarts, 0),
    rollout: flight ? { deployment: flight.id, rollout: flight.rollout, note: flight.rolloutNote } : null,
    health: run?.health ?? null,
    health_note: run?.healthNote ?? null,
    restart_required: row.restartNote,
    urls: serviceUrls(core, { project: project.slug, environment, service: row.name }),
  };
  const rolling = flight ? `; deployment ${flight.id} is ${flight.rollout}` : "";
  if (!run) return { state: "pending", summary: (row.restartNote ?? "not deployed") + rolling, detail };
  if (wanted === 0) return { state: "pending", summary: `stopped (replicas: 0); ${shortDigest(run.currentDigest)} is current${rolling}`, detail };
  const crashed = replicas.filter((r) => r.state === "crashed");
  if (crashed.length > 0) {
    const c = crashed[0];
    const wait = c.nextRestartAt === null ? "" : `; restart ${c.restarts + 1} in ${Math.max(0, Math.round((c.nextRestartAt - Date.now()) / 1000))} s`;
    return { state: "error", summary: `${crashed.length} of ${replicas.length} replicas crashed (${describeExit(c.lastExit)}${wait}); ${c.restarts} restarts so far${rolling}`, detail };
  }
  const running = replicas.filter((r) => r.state === "running").length;
  if (replicas.length === 0 || running < replicas.length) return { state: "pending", summary: `starting ${wanted} replica${wanted === 1 ? "" : "s"} of ${shortDigest(run.currentDigest)}${rolling}`, detail };
  if (run.health === "down") return { state: "error", summary: `health probe failing: ${run.healthNote ?? "no answer"}${rolling}`, detail };
  const restarts = detail.restarts > 0 ? ` (${detail.restarts} restart${detail.restarts === 1 ? "" : "s"} after crashes)` : "";
  return { state: "ready", summary: `${running} replica${running === 1 ? "" : "s"} of ${shortDigest(run.currentDigest)} running${restarts}${rolling}`, detail };
}

/** Store the service's live status in its resource row (no-op once the Core is closing). */
export function writeServiceStatus(core: Core, addr: ServiceAddress): void {
  if (core.locals.get("core.closed")) return;
  const row = findResource(core.db, { project: addr.project, environment: addr.environment }, "service", addr.service);
  if (row) writeStatus(core, core.db, row.id, observeService(core, addr.project, row));
}

const PENDING = "deployments.status-pending";

/** Coalesce status writes caused by a burst of replica state changes into one per service. */
export function scheduleStatusWrite(core: Core, addr: ServiceAddress): void {
  let pending = core.locals.get(PENDING) as Set<string> | undefined;
  if (!pending) core.locals.set(PENDING, (pending = new Set()));
  const key = serviceKeyOf(addr);
  if (pending.has(key)) return;
  pending.add(key);
  setTimeout(() => {
    pending!.delete(key);
    try {
      writeServiceStatus(core, addr);
    } catch (e) {
      core.log.warn("could not record a service's status", { service: key, err: (e as Error).message });
    }
  }, 0);
}

/** The status component of a service: `<project>-<service>`, at most 63 characters. */
export function componentSlug(addr: { project: { slug: string }; service: string }): string {
  return `${addr.project.slug}-${addr.service}`.slice(0, 63).replace(/-+$/, "");
}

const HEALTH_TO_COMPONENT = { up: "operational", degraded: "degraded", down: "down" } as const;

/**
 * Keep the service's status component in step: present for a production service with
 * `status_page: true` and a health check, its state the probe's verdict; absent otherwise.
 */
export function syncStatusComponent(core: Core, addr: ServiceAddress): void {
  if (core.locals.get("core.closed")) return;
  const slug = componentSlug(addr);
  const existing = listComponents(core.db).find((c) => c.slug === slug);
  if (existing?.platform) return;
  const row = findResource(core.db, { project: addr.project, environment: addr.environment }, "service", addr.service);
  const spec = row ? specOf<ServiceSpec>(row) : null;
  const wanted = addr.environment === "production" && spec?.status_page === true && !!spec.health_check_path;
  if (!wanted) {
    if (existing) removeComponent(core, slug, SYSTEM_ACTOR);
    return;
  }
  const run = serviceRun(core.db, addr.project.id, addr.environment, addr.service);
  if (!run) return;
  if (!existing) addComponent(core, { slug, name: `${addr.project.name}: ${addr.service}`.slice(0, 100), state: "operational" }, SYSTEM_ACTOR);
  const state = run.replicas === 0 ? "down" : run.health ? HEALTH_TO_COMPONENT[run.health as keyof typeof HEALTH_TO_COMPONENT] : "operational";
  const reason = run.replicas === 0 ? "stopped (replicas: 0)" : (run.healthNote ?? "probe ok");
  setComponentState(core, slug, state, reason, "deployments");
}

/** Record the health probe's verdict for a service. Returns the previous verdict. */
export function setHealth(core: Core, addr: ServiceAddress, health: "up" | "degraded" | "down", note: string): string | null {
  const run = serviceRun(core.db, addr.project.id, addr.environment, addr.service);
  if (!run) return null;
  core.db
    .update(serviceRuns)
    .set({ health, healthNote: note.slice(0, 300) })
    .where(and(eq(serviceRuns.projectId, addr.project.id), eq(serviceRuns.environment, addr.environment), eq(serviceRuns.service, addr.service)))
    .run();
  return run.health;
}
