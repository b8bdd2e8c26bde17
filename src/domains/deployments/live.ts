/**
 * The live side of a service: which replicas serve it now (in memory: they are children of this
 * process and die with it, except across `ops restart`, where recover.ts rebuilds it from the
 * replicas the runtime kept), the environment they get, the routes the ingress gives them, and a
 * lock so one rollout or reconcile at a time changes a service.
 *
 * A replica's environment, later entries winning: the image's `Env` (the runtime), the env
 * group's variables (the values stored now), the unit's secrets, then `PORT` (the runtime).
 */
import type { Core, ProjectRef } from "../../core/core";
import { withKeyLock } from "../../core/locks";
import { findResource, listOfType, refusedHost, secretValues, specOf, type ResourceRow, type ServiceSpec } from "../resources/service";
import { listSecrets, unitSecret } from "../secrets/service";
import { runtimeOf, prepareImage, type ReplicaSpec, type ReplicaStatus, type RuntimeImage } from "../../adapters/runtime";
import { ingressOf, type ServiceRoute, type Upstream } from "../../adapters/ingress";
import { repositoryOf, serviceKeyOf } from "./rows";
import { withOtelEnv } from "./otel-env";

/** A service and the replicas serving it now. */
export interface LiveService {
  projectId: string;
  project: string;
  environment: string;
  service: string;
  deploymentId: number;
  digest: string;
  replicaIds: string[];
}

export interface ServiceAddress {
  project: ProjectRef;
  environment: string;
  service: string;
}

const LIVE = "deployments.live";
const SEQ = "deployments.replica-seq";

export function liveServices(core: Core): Map<string, LiveService> {
  let m = core.locals.get(LIVE) as Map<string, LiveService> | undefined;
  if (!m) core.locals.set(LIVE, (m = new Map()));
  return m;
}

export function liveOf(core: Core, addr: { project: { slug: string }; environment: string; service: string }): LiveService | null {
  return liveServices(core).get(serviceKeyOf(addr)) ?? null;
}

/** Run `fn` once every earlier holder of the service's lock is done (rollouts and reconciles never overlap). */
export function withServiceLock<T>(core: Core, key: string, fn: () => Promise<T>): Promise<T> {
  return withKeyLock(core, "deployments.services", key, fn);
}

/** The service resource, or null when it was deleted. */
export function serviceRow(core: Core, addr: ServiceAddress): ResourceRow | null {
  return findResource(core.db, { project: addr.project, environment: addr.environment }, "service", addr.service);
}

/** What a service's replicas and release steps get after the image's Env, and the secret values among it. */
export interface ServiceEnv {
  env: Array<[string, string]>;
  /** The env group's secret values and the unit's secrets: masked in their output (decision 0516). */
  masked: string[];
}

/** Entries after the image's Env: the env group's variables, then the unit's secrets. Throws 503 when sealed. */
export function serviceEnv(core: Core, addr: ServiceAddress, service: ResourceRow): ServiceEnv {
  const spec = specOf<ServiceSpec>(service);
  const out: ServiceEnv = { env: [], masked: [] };
  if (spec.env_group) {
    const group = findResource(core.db, { project: addr.project, environment: addr.environment }, "secret-group", spec.env_group);
    if (group) {
      const values = secretValues(core).groupEnv(core, core.db, group.id);
      for (const [k, v] of Object.entries(values.env)) out.env.push([k, v]);
      out.masked.push(...values.secrets);
    }
  }
  for (const s of listSecrets(core, addr.project)) {
    if (s.service !== addr.service) continue;
    const value = unitSecret(core, core.db, addr.project.id, addr.service, s.name);
    if (value !== null) {
      out.env.push([s.name, value]);
      out.masked.push(value);
    }
  }
  return out;
}

/** Pull and unpack the digest of the service's repository (once per digest). */
export async function imageFor(core: Core, addr: ServiceAddress, digest: string): Promise<RuntimeImage> {
  return (await prepareImage(core, repositoryOf(addr), digest, addr.project.id)).image;
}

/** Start `count` replicas of `image` for the service (state `starting`). */
export async function startReplicas(core: Core, addr: ServiceAddress, service: ResourceRow, deploymentId: number, image: RuntimeImage, env: ServiceEnv, count: number): Promise<ReplicaStatus[]> {
  const spec = specOf<ServiceSpec>(service);
  const runtime = runtimeOf(core);
  const started: ReplicaStatus[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const seq = ((core.locals.get(SEQ) as number | undefined) ?? 0) + 1;
      core.locals.set(SEQ, seq);
      // OTEL_* for this replica, with a credential of its own (otel-env.ts, decision 0651).
      const own = await withOtelEnv(core, addr, deploymentId, env, image.config.env);
      const replica: ReplicaSpec = {
        id: `${addr.project.slug}.${addr.environment}.${addr.service}.${deploymentId}-${seq}`,
        image,
        command: spec.command ?? null,
        env: own.env,
        masked: own.masked,
        memoryMb: spec.limits?.memory_mb ?? null,
        cpus: spec.limits?.cpu ?? null,
        placement: spec.placement?.constraints ?? [],
        containerPort: spec.port ?? 8080,
        labels: { project: addr.project.slug, project_id: addr.project.id, environment: addr.environment, service: addr.service, deployment: String(deploymentId) },
      };
      started.push(await runtime.start(replica));
    }
  } catch (e) {
    await stopReplicas(core, started.map((r) => r.id), 2000);
    throw e;
  }
  return started;
}

/** How a rollout of `count` replicas makes room on an engine with nodes (null: one host, start-first as always). */
export async function rolloutRoom(core: Core, service: ResourceRow, count: number): Promise<{ mode: "start-first" | "stop-first"; why: string } | null> {
  const runtime = runtimeOf(core);
  if (!runtime.room) return null;
  const spec = specOf<ServiceSpec>(service);
  return runtime.room({ memoryMb: spec.limits?.memory_mb ?? null, placement: spec.placement?.constraints ?? [] }, count).catch((e: Error) => ({ mode: "start-first" as const, why: `the nodes could not be counted (${e.message}): the new replicas start beside the old ones` }));
}

/** Replica ids end in `-<seq>`: after `ops restart`, new ones count on from the kept ones' highest. */
export function noteReplicaSeq(core: Core, id: string): void {
  const seq = Number(/-(\d+)$/.exec(id)?.[1] ?? 0);
  if (seq > ((core.locals.get(SEQ) as number | undefined) ?? 0)) core.locals.set(SEQ, seq);
}

/** Stop replicas (SIGTERM, `graceMs`, SIGKILL); resolves once they are gone. */
export async function stopReplicas(core: Core, ids: readonly string[], graceMs = core.config.shutdownGraceMs): Promise<void> {
  const runtime = runtimeOf(core);
  await Promise.all(ids.map((id) => runtime.stop(id, graceMs)));
}

/**
 * Where the ingress reaches the replicas. A replica an engine placed on a node (`node`) that
 * crashed there (its node is down: Swarm places it again) is left out until it starts anew: a node
 * that went away would hold requests until they time out. The process runtime's replicas stay in
 * while they restart (the ingress tries another one).
 */
export function upstreamsOf(core: Core, ids: readonly string[]): Upstream[] {
  const runtime = runtimeOf(core);
  return ids
    .map((id) => runtime.status(id))
    .filter((s): s is ReplicaStatus => s !== null && !(s.node !== undefined && (s.state === "crashed" || s.state === "stopped")))
    .map((s) => ({ host: s.host, port: s.port, ...(s.netns ? { netns: s.netns } : {}) }));
}

/**
 * The domain resources of the service's environment that route to it, without the hosts no domain
 * may have on this server (ops's own public host, localhost, IP addresses: checked here too, since
 * OPS_PUBLIC_URL may have moved onto a host claimed before; the domain's status says so).
 */
export function domainRoutes(core: Core, addr: ServiceAddress): ServiceRoute[] {
  return listOfType(core.db, { project: addr.project, environment: addr.environment }, "domain")
    .map((d) => specOf<{ hosts: string[]; service: string; path_prefix?: string; tls?: boolean; redirect_http?: boolean }>(d))
    .filter((d) => d.service === addr.service)
    .map((d) => ({ hosts: d.hosts.map((h) => h.toLowerCase()).filter((h) => refusedHost(core, h) === null), pathPrefix: d.path_prefix ?? "/", redirectHttp: d.tls !== false && d.redirect_http !== false }))
    .filter((r) => r.hosts.length > 0);
}

/** Point the ingress at `replicaIds` for the service (its default host and its domains' hosts). */
export function routeTo(core: Core, addr: ServiceAddress, replicaIds: readonly string[]): Upstream[] {
  const upstreams = upstreamsOf(core, replicaIds);
  ingressOf(core).setService({ service: { project: addr.project.slug, environment: addr.environment, service: addr.service }, routes: domainRoutes(core, addr), upstreams });
  return upstreams;
}

/**
 * A live replica that now answers somewhere else, or no longer answers (an engine moved its task to
 * another node, gave it another port, or lost its node): route the service to where its replicas
 * are now. Nothing when the table already says so, or when the replica is not one the service is
 * routed to.
 */
export function rerouteIfMoved(core: Core, addr: ServiceAddress, status: { id: string }): void {
  const live = liveOf(core, addr);
  if (!live || !live.replicaIds.includes(status.id)) return;
  const entry = ingressOf(core)
    .table()
    .find((e) => e.service.project === addr.project.slug && e.service.environment === addr.environment && e.service.service === addr.service);
  if (!entry) return;
  const key = (u: Upstream) => `${u.host}:${u.port}`;
  const now = new Set(upstreamsOf(core, live.replicaIds).map(key));
  const was = new Set(entry.upstreams.map(key));
  if (now.size === was.size && [...now].every((k) => was.has(k))) return;
  routeTo(core, addr, live.replicaIds);
}

/** A replica's secret values as its service's env gives them now (a Swarm service a new ops takes on), by its labels. */
export function maskedOfReplica(core: Core, labels: Record<string, string>): string[] | null {
  const project = labels.project_id ? core.access.findProjectById(labels.project_id) : null;
  if (!project || !labels.environment || !labels.service) return null;
  const addr = { project, environment: labels.environment, service: labels.service };
  const row = serviceRow(core, addr);
  if (!row) return null;
  try {
    return serviceEnv(core, addr, row).masked;
  } catch {
    return null; // sealed: its output is not followed rather than shown unmasked
  }
}

/** Set the service's routes again from its domains, keeping its upstreams (a domain changed). */
export function refreshRoutes(core: Core, addr: ServiceAddress): void {
  const live = liveOf(core, addr);
  routeTo(core, addr, live?.replicaIds ?? []);
}

/** Remove the service from the ingress (it was deleted): its hosts answer 404. */
export function unroute(core: Core, addr: { project: { slug: string }; environment: string; service: string }): void {
  ingressOf(core).removeService({ project: addr.project.slug, environment: addr.environment, service: addr.service });
}

/** Record which replicas serve the service now. */
export function setLive(core: Core, addr: ServiceAddress, deploymentId: number, digest: string, replicaIds: string[]): void {
  const key = serviceKeyOf(addr);
  if (replicaIds.length === 0) liveServices(core).delete(key);
  else liveServices(core).set(key, { projectId: addr.project.id, project: addr.project.slug, environment: addr.environment, service: addr.service, deploymentId, digest, replicaIds });
}
