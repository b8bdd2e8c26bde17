/**
 * `ops status` and `ops nodes`: what runs and where, from the terminal. `ops status` reads a
 * project's services as the console's service page does (the service resources' status: state,
 * summary, each replica with its node or host and port); `ops nodes` reads the estate's nodes
 * (`GET /api/v1/admin/nodes`, estate admins) with ops's replicas on each. The project comes from
 * `--project`, the saved one or the token's pin, like `ops builds`.
 */
import { EXIT, type Command } from "../commands/types";
import { api, CliError } from "./http";
import { requireClient } from "./config";
import { PROJECT_FLAG, projectOf, query, str } from "./delivery";

interface Replica {
  id: string;
  state: string;
  host?: string;
  port: number;
  restarts: number;
  node?: { name: string; addr: string } | null;
}

interface ServiceResource {
  name: string;
  environment?: string | null;
  status: { state: string; summary: string; detail?: { replicas_wanted?: number; replicas?: Replica[]; digest?: string | null } };
}

interface NodeReplica {
  id: string;
  project: string | null;
  environment: string | null;
  service: string | null;
  task_id: string | null;
  task_state: string;
  port: number | null;
}

interface NodeEntry {
  hostname: string;
  address: string | null;
  role: string;
  leader: boolean;
  state: string;
  availability: string;
  engine_version: string | null;
  cpus: number | null;
  memory_mb: number | null;
  replicas: NodeReplica[];
}

interface NodesReport {
  runtime: string;
  manager: { endpoint: string; reachable: boolean; error: string | null } | null;
  nodes: NodeEntry[];
}

/** Columns padded to their widest cell; the last column is not padded. */
function table(rows: string[][], indent = ""): string {
  const widths = rows[0].map((_, i) => (i === rows[0].length - 1 ? 0 : Math.max(...rows.map((r) => r[i].length))));
  return rows.map((r) => indent + r.map((c, i) => (widths[i] ? c.padEnd(widths[i]) : c)).join("  ").trimEnd()).join("\n") + "\n";
}

/** Where a replica answers: `node host:port` on a Swarm, `host:port` elsewhere. */
export function whereOf(r: Replica): string {
  const at = `${r.host ?? r.node?.addr ?? "?"}:${r.port}`;
  return r.node ? `${r.node.name} ${at}` : at;
}

/** The lines `ops status` prints: a line per service, then its replicas indented under it. */
export function statusTable(services: ServiceResource[]): string {
  const head = table([["SERVICE", "STATE", "REPLICAS", "SUMMARY"], ...services.map((s) => [s.name, s.status.state, `${(s.status.detail?.replicas ?? []).filter((r) => r.state === "running").length}/${s.status.detail?.replicas_wanted ?? "?"}`, s.status.summary])]);
  const lines = head.split("\n");
  let out = `${lines[0]}\n`;
  services.forEach((s, i) => {
    out += `${lines[i + 1]}\n`;
    const replicas = s.status.detail?.replicas ?? [];
    if (replicas.length > 0) out += table([["REPLICA", "STATE", "NODE/HOST:PORT", "RESTARTS"], ...replicas.map((r) => [r.id.split(".").at(-1) ?? r.id, r.state, whereOf(r), String(r.restarts)])], "    ");
  });
  return out;
}

const cpus = (n: number | null) => (n === null ? "-" : String(Math.round(n * 100) / 100));
const memory = (mb: number | null) => (mb === null ? "-" : mb >= 1024 ? `${(mb / 1024).toFixed(1)} GiB` : `${mb} MiB`);

/** The lines `ops nodes` prints: a line per node, then ops's replicas on it indented under it. */
export function nodesTable(r: NodesReport): string {
  const rows = r.nodes.map((n) => [n.hostname, n.role === "manager" && n.leader ? "manager (leader)" : n.role, n.state, n.availability, n.address ?? "-", cpus(n.cpus), memory(n.memory_mb), n.engine_version ?? "-", String(n.replicas.length)]);
  const lines = table([["NODE", "ROLE", "STATE", "AVAILABILITY", "ADDRESS", "CPUS", "MEMORY", "ENGINE", "REPLICAS"], ...rows]).split("\n");
  let out = `${lines[0]}\n`;
  r.nodes.forEach((n, i) => {
    out += `${lines[i + 1]}\n`;
    if (n.replicas.length > 0) {
      out += table([["REPLICA", "SERVICE", "STATE", "TASK"], ...n.replicas.map((x) => [x.id, [x.project, x.environment, x.service].map((p) => p ?? "?").join("/"), x.task_state, x.task_id?.slice(0, 12) ?? "-"])], "    ");
    }
  });
  return out;
}

export const statusCommand: Command = {
  name: "status",
  side: "client",
  summary: "Show a project's services and where each replica runs",
  usage: "[--project P] [--environment E] [--json] [service]",
  description:
    "A line per service of the environment: its state (ready, pending, error), how many replicas run of how many wanted, and the status summary; under it each replica with its number, state, the node and address it answers at (host:port off a Swarm) and its restarts. Name a service to see only it.",
  flags: {
    project: PROJECT_FLAG,
    environment: { type: "string", value: "E", description: "Environment (default production)" },
    json: { type: "boolean", description: "Print {project, environment, services: [{name, state, summary, replicas_wanted, digest, replicas}]} as JSON" },
  },
  maxArgs: 1,
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const project = await projectOf(ctx, server, token);
    const environment = str(ctx.flags.environment) ?? "production";
    const name = str(ctx.args[0]);
    const base = `/api/v1/projects/${encodeURIComponent(project)}/resources/service`;
    let services: ServiceResource[];
    if (name) {
      const one = await api<ServiceResource>(server, token, "GET", `${base}/${encodeURIComponent(name)}${query({ environment })}`, undefined, [404]);
      if (one.status === 404) throw new CliError(`no service "${name}" in ${project} (${environment}). 'ops status --project ${project}' lists its services.`, EXIT.failure);
      services = [one.body];
    } else {
      services = (await api<ServiceResource[]>(server, token, "GET", `${base}${query({ environment })}`)).body;
    }
    if (ctx.flags.json) {
      const shaped = services.map((s) => ({ name: s.name, state: s.status.state, summary: s.status.summary, replicas_wanted: s.status.detail?.replicas_wanted ?? null, digest: s.status.detail?.digest ?? null, replicas: s.status.detail?.replicas ?? [] }));
      ctx.stdout(JSON.stringify({ project, environment, services: shaped }, null, 2) + "\n");
      return EXIT.ok;
    }
    if (services.length === 0) {
      ctx.stderr(`no services in ${project} (${environment}) yet.\n`);
      return EXIT.ok;
    }
    ctx.stdout(statusTable(services));
    return EXIT.ok;
  },
};

export const nodesCommand: Command = {
  name: "nodes",
  side: "client",
  summary: "List the nodes replicas run on, with ops's replicas on each (estate admins)",
  usage: "[--json]",
  description:
    "A line per node: its name, role (manager or worker on a Swarm, standalone for one Docker Engine or this host), state (ready, down…), availability (active, pause, drain), address, CPUs, memory and engine version; under it ops's replicas whose tasks run there. Needs estate.manage. When the engine behind OPS_DOCKER_HOST does not answer, says why and exits 1.",
  flags: {
    json: { type: "boolean", description: "Print the report of GET /api/v1/admin/nodes as JSON" },
  },
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const r = (await api<NodesReport>(server, token, "GET", "/api/v1/admin/nodes")).body;
    const failed = r.manager?.error ?? null;
    if (ctx.flags.json) ctx.stdout(JSON.stringify(r, null, 2) + "\n");
    else if (r.nodes.length > 0) ctx.stdout(nodesTable(r));
    if (failed) {
      ctx.stderr(`the ${r.runtime === "swarm" ? "Swarm manager" : "Docker Engine"} ${r.manager?.reachable ? "answered, but" : "did not answer"}: ${failed}\n`);
      return EXIT.failure;
    }
    return EXIT.ok;
  },
};
