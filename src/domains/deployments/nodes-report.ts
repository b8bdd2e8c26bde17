/**
 * Where replicas run, for estate admins (`GET /api/v1/admin/nodes`, decision 0630): on a Swarm the
 * manager's own view — its nodes with their role, state, availability and resources, and the tasks
 * of ops's replica services placed on each; on one Docker Engine that engine and ops's containers;
 * on the process runtime this host and its replicas.
 *
 * The engine is asked afresh on each call (three small calls; nothing is cached, so a drained or
 * lost node shows at once). An engine that cannot be reached, or that is no Swarm manager, is a
 * report that says so (`manager.reachable`, `manager.error` naming OPS_DOCKER_HOST), never a 500:
 * the page that shows it is where an admin goes to find out why nothing runs.
 */
import os from "node:os";
import type { Core } from "../../core/core";
import { runtimeOf } from "../../adapters/runtime";
import { engineClient, type EngineClient } from "../../adapters/runtime/engine-api";
import type { NodeEntry, NodeReplica, NodesReport } from "./model";

/** How long one report waits for the engine before it says the engine did not answer. */
const ENGINE_TIMEOUT_MS = 5_000;

type Manager = NonNullable<NodesReport["manager"]>;

interface EngineInfo {
  ID?: string;
  Name?: string;
  ServerVersion?: string;
  NCPU?: number;
  MemTotal?: number;
  OperatingSystem?: string;
  Architecture?: string;
  Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean; NodeID?: string; Error?: string };
}

interface SwarmNode {
  ID: string;
  Spec?: { Role?: string; Availability?: string; Labels?: Record<string, string> };
  Description?: {
    Hostname?: string;
    Platform?: { OS?: string; Architecture?: string };
    Resources?: { NanoCPUs?: number; MemoryBytes?: number };
    Engine?: { EngineVersion?: string };
  };
  Status?: { State?: string; Message?: string; Addr?: string };
  ManagerStatus?: { Leader?: boolean; Reachability?: string; Addr?: string };
}

interface SwarmTask {
  ID: string;
  ServiceID: string;
  NodeID?: string;
  DesiredState?: string;
  Status?: { State?: string; PortStatus?: { Ports?: Array<{ PublishedPort?: number }> } };
}

interface SwarmService {
  ID: string;
  Spec?: { Labels?: Record<string, string> };
}

interface Container {
  Id: string;
  State?: string;
  Labels?: Record<string, string>;
  Ports?: Array<{ PublicPort?: number }>;
}

const mb = (bytes: number | undefined) => (typeof bytes === "number" && bytes > 0 ? Math.round(bytes / 1024 / 1024) : null);
const filters = (f: Record<string, string[]>) => encodeURIComponent(JSON.stringify(f));

/** The replica a set of ops labels describes (`dev.ops.replica`, `dev.ops.label.*`). */
function replicaOf(labels: Record<string, string>, taskId: string | null, state: string, port: number | null): NodeReplica {
  const l = (k: string) => labels[`dev.ops.label.${k}`] ?? null;
  return { id: labels["dev.ops.replica"] ?? "", project: l("project"), environment: l("environment"), service: l("service"), deployment: l("deployment"), task_id: taskId, task_state: state, port };
}

/** An engine call bounded in time: a tcp:// host that drops packets must not hold the page. */
async function ask<T>(engine: EngineClient, path: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ENGINE_TIMEOUT_MS / 1000} s`)), ENGINE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([engine.json<T>("GET", path), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What failed, naming the variable an admin changes to fix it. */
function failure(core: Core, what: string, e: unknown): string {
  const message = (e as Error)?.message ?? String(e);
  return `${what} on OPS_DOCKER_HOST (${core.config.dockerHost}) failed: ${message}`;
}

function managerOf(core: Core, info: EngineInfo | null, error: string | null): Manager {
  return {
    endpoint: core.config.dockerHost,
    reachable: info !== null,
    error,
    engine_version: info?.ServerVersion ?? null,
    swarm_state: info?.Swarm?.LocalNodeState ?? null,
    is_manager: info ? info.Swarm?.ControlAvailable === true : null,
    node_id: info?.Swarm?.NodeID || null,
  };
}

/** A node's address: its advertised one; a manager that advertises 0.0.0.0 has its own in ManagerStatus. */
function addressOf(n: SwarmNode): string | null {
  const addr = n.Status?.Addr;
  if (addr && addr !== "0.0.0.0") return addr;
  const m = n.ManagerStatus?.Addr;
  return m ? m.replace(/:\d+$/, "").replace(/^\[|\]$/g, "") : (addr ?? null);
}

async function swarmReport(core: Core, engine: EngineClient): Promise<NodesReport> {
  let info: EngineInfo;
  try {
    info = await ask<EngineInfo>(engine, "/info");
  } catch (e) {
    return { runtime: "swarm", manager: managerOf(core, null, failure(core, "GET /info", e)), nodes: [] };
  }
  const state = info.Swarm?.LocalNodeState ?? "inactive";
  if (state !== "active" || info.Swarm?.ControlAvailable !== true) {
    const why = state !== "active" ? `is not in a Swarm (its Swarm state is ${state}${info.Swarm?.Error ? `: ${info.Swarm.Error}` : ""})` : "is a Swarm worker, not a manager: only a manager lists nodes and tasks";
    return { runtime: "swarm", manager: managerOf(core, info, `the engine at OPS_DOCKER_HOST (${core.config.dockerHost}) ${why}`), nodes: [] };
  }
  const replicaFilter = filters({ label: ["dev.ops.kind=replica"] });
  let nodes: SwarmNode[];
  let tasks: SwarmTask[];
  let services: SwarmService[];
  try {
    [nodes, tasks, services] = await Promise.all([
      ask<SwarmNode[]>(engine, "/nodes"),
      ask<SwarmTask[]>(engine, `/tasks?filters=${filters({ label: ["dev.ops.kind=replica"], "desired-state": ["running"] })}`),
      ask<SwarmService[]>(engine, `/services?filters=${replicaFilter}`),
    ]);
  } catch (e) {
    return { runtime: "swarm", manager: managerOf(core, info, failure(core, "Listing the Swarm's nodes and tasks", e)), nodes: [] };
  }
  // A task carries its service's id only: the replica's labels are the service's.
  const labelsOf = new Map(services.map((s) => [s.ID, s.Spec?.Labels ?? {}]));
  const byNode = new Map<string, NodeReplica[]>();
  for (const task of tasks) {
    const labels = labelsOf.get(task.ServiceID);
    if (!task.NodeID || !labels) continue;
    const port = task.Status?.PortStatus?.Ports?.find((p) => p.PublishedPort)?.PublishedPort ?? null;
    const list = byNode.get(task.NodeID) ?? [];
    list.push(replicaOf(labels, task.ID, task.Status?.State ?? "unknown", port));
    byNode.set(task.NodeID, list);
  }
  const entries: NodeEntry[] = nodes.map((n) => {
    const platform = n.Description?.Platform;
    const nano = n.Description?.Resources?.NanoCPUs;
    return {
      id: n.ID,
      hostname: n.Description?.Hostname ?? n.ID,
      address: addressOf(n),
      role: n.Spec?.Role === "manager" ? "manager" : "worker",
      leader: n.ManagerStatus?.Leader === true,
      manager_reachability: n.ManagerStatus?.Reachability ?? null,
      state: n.Status?.State ?? "unknown",
      state_message: n.Status?.Message || null,
      availability: n.Spec?.Availability ?? "active",
      engine_version: n.Description?.Engine?.EngineVersion ?? null,
      os: platform?.OS ? `${platform.OS}/${platform.Architecture ?? "?"}` : null,
      cpus: typeof nano === "number" && nano > 0 ? nano / 1e9 : null,
      memory_mb: mb(n.Description?.Resources?.MemoryBytes),
      labels: n.Spec?.Labels ?? {},
      replicas: (byNode.get(n.ID) ?? []).sort((a, b) => a.id.localeCompare(b.id)),
    };
  });
  entries.sort((a, b) => (a.role === b.role ? a.hostname.localeCompare(b.hostname) : a.role === "manager" ? -1 : 1));
  return { runtime: "swarm", manager: managerOf(core, info, null), nodes: entries };
}

async function dockerReport(core: Core, engine: EngineClient): Promise<NodesReport> {
  let info: EngineInfo;
  let containers: Container[];
  try {
    [info, containers] = await Promise.all([ask<EngineInfo>(engine, "/info"), ask<Container[]>(engine, `/containers/json?all=1&filters=${filters({ label: ["dev.ops.owner", "dev.ops.replica"] })}`)]);
  } catch (e) {
    return { runtime: "docker", manager: managerOf(core, null, failure(core, "Asking the Docker Engine", e)), nodes: [] };
  }
  const replicas = containers
    .map((c) => replicaOf(c.Labels ?? {}, null, c.State ?? "unknown", c.Ports?.find((p) => p.PublicPort)?.PublicPort ?? null))
    .sort((a, b) => a.id.localeCompare(b.id));
  const node: NodeEntry = {
    id: info.ID ?? info.Name ?? "engine",
    hostname: info.Name ?? "engine",
    address: null,
    role: "standalone",
    leader: false,
    manager_reachability: null,
    state: "ready",
    state_message: null,
    availability: "active",
    engine_version: info.ServerVersion ?? null,
    os: info.OperatingSystem ? `${info.OperatingSystem}${info.Architecture ? ` (${info.Architecture})` : ""}` : null,
    cpus: info.NCPU ?? null,
    memory_mb: mb(info.MemTotal),
    labels: {},
    replicas,
  };
  return { runtime: "docker", manager: managerOf(core, info, null), nodes: [node] };
}

function processReport(core: Core): NodesReport {
  const list = runtimeOf(core).list();
  const replicas = list
    .map((s) => ({ id: s.id, project: s.labels.project ?? null, environment: s.labels.environment ?? null, service: s.labels.service ?? null, deployment: s.labels.deployment ?? null, task_id: null, task_state: s.state, port: s.port }))
    .sort((a, b) => a.id.localeCompare(b.id));
  const hostname = os.hostname();
  return {
    runtime: "process",
    manager: null,
    nodes: [
      {
        id: hostname,
        hostname,
        address: list[0]?.host ?? "127.0.0.1",
        role: "standalone",
        leader: false,
        manager_reachability: null,
        state: "ready",
        state_message: null,
        availability: "active",
        engine_version: null,
        os: `${os.type()} ${os.release()} (${os.arch()})`,
        cpus: os.cpus().length,
        memory_mb: mb(os.totalmem()),
        labels: {},
        replicas,
      },
    ],
  };
}

/** Where this estate's replicas run, as the runtime's engine (or this host) sees it now. */
export async function nodesReport(core: Core): Promise<NodesReport> {
  const runtime = core.config.runtime;
  if (runtime === "process") return processReport(core);
  let engine: EngineClient;
  try {
    engine = engineClient({ host: core.config.dockerHost, tls: core.config.dockerTls });
  } catch (e) {
    return { runtime, manager: managerOf(core, null, failure(core, "Reaching the engine", e)), nodes: [] };
  }
  return runtime === "swarm" ? swarmReport(core, engine) : dockerReport(core, engine);
}
