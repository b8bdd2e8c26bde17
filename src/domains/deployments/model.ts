/**
 * Request and response schemas of the deployments domain, under the spec's names. Schemas are
 * the types (`type X = typeof X.static`).
 */
import { t } from "elysia";
import { BodyInt, ErrorBody, IntParam } from "../../core/http-schemas";

const nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T, description?: string) => t.Optional(t.Union([s, t.Null()], description ? { description } : {}));

export const DeployRequest = t.Object({
  digest: nullable(t.String({ maxLength: 200 }), "The manifest digest to roll to (`sha256:<hex>`), signed by the ops key"),
  build_id: t.Optional(BodyInt({ minimum: 1, nullable: true, description: "The build whose pushed image is used" })),
});
export type DeployRequest = typeof DeployRequest.static;

export const RollbackRequest = t.Object({
  digest: nullable(t.String({ maxLength: 200 }), "Default: the newest healthy digest that is not the current one"),
});
export type RollbackRequest = typeof RollbackRequest.static;

/** A failed rollout's processes and the last lines each printed (issue 36), secrets masked. */
export const FailureOutput = t.Array(
  t.Object({
    process: t.String({ description: "The replica's id, or the release step's (`…-<step>`)" }),
    lines: t.Array(t.String(), { description: "Its last lines (at most 50), oldest first, stdout and stderr" }),
  }),
  { description: "What the failed rollout's new replicas and release steps printed last; absent when it did not fail or they printed nothing" },
);

export const DeploymentResponse = t.Object({
  author: t.String({ description: "Commit author, or whoever deployed a digest by hand" }),
  build_id: nullable(t.Integer()),
  commit_sha: nullable(t.String()),
  created_at: t.String(),
  created_by: t.String({ description: "The operator email, or `system` (a build's auto-deploy, a restart)" }),
  environment: t.String(),
  finished_at: nullable(t.String()),
  host_deployment_id: nullable(t.Integer()),
  host_status_id: nullable(t.Integer()),
  id: t.Integer(),
  image_digest: t.String(),
  message: t.String(),
  previous_digest: nullable(t.String(), "The digest the service ran when the rollout was recorded"),
  project: t.String(),
  rollout: t.String({ description: "queued, starting, releasing, probing, switching, draining, healthy, unhealthy, rolling_back, rolled_back, failed or refused" }),
  rollout_note: nullable(t.String()),
  failure_output: t.Optional(FailureOutput),
  service: t.String(),
  trigger: t.String({ description: "`manual`, `build`, `rollback` or `restart`" }),
});
export type DeploymentResponse = typeof DeploymentResponse.static;

export const BuildSummary = t.Object({
  branch: nullable(t.String()),
  cache_hit: nullable(t.Number()),
  error: nullable(t.String()),
  finished_at: nullable(t.String()),
  id: t.Integer(),
  image_digest: nullable(t.String()),
  kind: t.String({ description: "`image` or `publish`" }),
  queued_at: t.String(),
  requested_by: t.String(),
  status: t.String(),
  trigger: t.String(),
});
export type BuildSummary = typeof BuildSummary.static;

export const DeploymentSummary = t.Object({
  created_at: t.String(),
  created_by: t.String(),
  finished_at: nullable(t.String()),
  id: t.Integer(),
  image_digest: t.String(),
  previous_digest: nullable(t.String()),
  rollout: t.String(),
  rollout_note: nullable(t.String()),
  failure_output: t.Optional(FailureOutput),
  trigger: t.String(),
});
export type DeploymentSummary = typeof DeploymentSummary.static;

export const TIMELINE_STATES = ["queued", "building", "checks", "scanning", "pushing", "signing", "deploying", "healthy", "unhealthy", "rolling_back", "rolled_back", "failed", "refused", "cancelled"] as const;
export type TimelineState = (typeof TIMELINE_STATES)[number];

export const TimelineRow = t.Object({
  at: t.String(),
  author: t.String(),
  build: t.Optional(t.Union([t.Ref("BuildSummary"), t.Null()])),
  commit: t.String({ description: "Commit sha; the digest for a hand-deployed image without one" }),
  deployment: t.Optional(t.Union([t.Ref("DeploymentSummary"), t.Null()])),
  failure_kind: nullable(t.String(), "`checks`, `build`, `scan`, `push`, `sign`, `deploy`, `health`, `internal`"),
  message: t.String(),
  service: t.String(),
  state: t.String({ description: TIMELINE_STATES.join(", ") }),
  state_text: t.String({ description: "The state in a sentence for a human" }),
});
export type TimelineRow = Omit<typeof TimelineRow.static, "build" | "deployment"> & { build?: BuildSummary | null; deployment?: DeploymentSummary | null };

export const TimelineQuery = t.Object({
  environment: t.Optional(t.String({ description: "Default production" })),
  service: t.Optional(t.String({ description: "Only this service" })),
  limit: t.Optional(IntParam({ minimum: 1, maximum: 500, description: "1 to 500, default 50" })),
});

const count = (description: string) => t.Integer({ minimum: 0, description });

/** What the ingress counted since ops started (decision 0247): connections, requests, and each limit it enforced. */
export const IngressReport = t.Object({
  listen: nullable(t.String(), "The plain listener's URL; null while it does not listen"),
  tls_listen: nullable(t.String(), "The HTTPS listener's URL; null while it does not listen"),
  connections_open: count("Client connections open now"),
  connections_accepted: count("Client connections accepted"),
  refused_per_address: count("Connections refused with a 503: their address held OPS_INGRESS_MAX_CONN_PER_IP already"),
  refused_total: count("Connections refused with a 503: OPS_INGRESS_MAX_CONNECTIONS were open"),
  requests: count("Requests sent on to a replica"),
  bad_requests: count("Requests refused as malformed or ambiguous (400, 405, 431), the connection closed"),
  head_timeouts: count("Heads not whole within OPS_INGRESS_HEADER_TIMEOUT (408)"),
  idle_timeouts: count("Connections closed after sending nothing for the idle timeout"),
  body_timeouts: count("Request bodies that sent nothing for OPS_INGRESS_BODY_TIMEOUT (408, or the connection cut)"),
  credentials_stripped: count("Requests from which ops's session cookie or an ops credential was removed"),
  upstream_failures: count("Replicas that failed a request, or answered what could not be relayed"),
});
export type IngressReport = typeof IngressReport.static;

export const ProcessesReport = t.Object({
  mode: t.Union([t.Literal("process"), t.Literal("inline")], { description: "process: replicas and the ingress in a data plane of their own (decision 0600); inline: in ops serve's process" }),
  processes: t.Array(
    t.Object({
      part: t.Union([t.Literal("control plane"), t.Literal("data plane"), t.Literal("ingress")]),
      pid: nullable(t.Integer(), "Null while it is starting again, or when it is off"),
      started_at: nullable(t.String(), "When it started (RFC 3339)"),
      uptime_s: nullable(t.Integer(), "Seconds since it started"),
      detail: t.String({ description: "What it does now" }),
    }),
  ),
});
export type ProcessesReport = typeof ProcessesReport.static;

const NodeReplica = t.Object({
  id: t.String({ description: "The replica's id (`<project>.<environment>.<service>.<deployment>-<n>`)" }),
  project: nullable(t.String(), "The project slug it serves (its `project` label)"),
  environment: nullable(t.String()),
  service: nullable(t.String()),
  deployment: nullable(t.String(), "The deployment it was started for"),
  task_id: nullable(t.String(), "Swarm: the task that runs it on this node; null elsewhere"),
  task_state: t.String({ description: "Swarm: the task's state (running, starting, preparing…); docker: the container's (running, restarting, exited…); process: the replica's (starting, running, crashed…)" }),
  port: nullable(t.Integer(), "Where it listens on the node's address, when known"),
});

const NodeEntry = t.Object({
  id: t.String({ description: "Swarm: the node's id; docker: the engine's id; process: the host's name" }),
  hostname: t.String(),
  address: nullable(t.String(), "The address replicas on it answer at (Swarm: the node's advertised address)"),
  role: t.Union([t.Literal("manager"), t.Literal("worker"), t.Literal("standalone")], { description: "manager or worker in a Swarm; standalone: the one host of the process or docker runtime" }),
  leader: t.Boolean({ description: "The Swarm's leading manager" }),
  manager_reachability: nullable(t.String(), "Swarm managers: reachable, unreachable or unknown"),
  state: t.String({ description: "ready, down, unknown or disconnected (Swarm's view of the node); ready for a standalone host that answered" }),
  state_message: nullable(t.String(), "Why the node is in its state, when Swarm says"),
  availability: t.String({ description: "active, pause or drain (where Swarm may place tasks); active for a standalone host" }),
  engine_version: nullable(t.String(), "The Docker Engine's version; null for the process runtime"),
  os: nullable(t.String(), "Operating system and architecture"),
  cpus: nullable(t.Number(), "CPUs it offers (Swarm: NanoCPUs / 1e9)"),
  memory_mb: nullable(t.Integer(), "Memory it offers, MiB (Swarm: MemoryBytes)"),
  labels: t.Record(t.String(), t.String(), { description: "The node's labels (Swarm: its spec's, used by placement constraints such as node.labels.zone==eu)" }),
  replicas: t.Array(NodeReplica, { description: "ops's replicas whose current task or container runs here" }),
});

/** Where replicas run: the Swarm's nodes (or the one engine, or this host) with ops's replicas on each (decision 0622). */
export const NodesReport = t.Object({
  runtime: t.Union([t.Literal("process"), t.Literal("docker"), t.Literal("swarm")], { description: "OPS_RUNTIME" }),
  manager: t.Union(
    [
      t.Object({
        endpoint: t.String({ description: "OPS_DOCKER_HOST: the Engine API ops talks to" }),
        reachable: t.Boolean({ description: "It answered" }),
        error: nullable(t.String(), "What failed, when something did (it names OPS_DOCKER_HOST); the nodes are then empty or partial"),
        engine_version: nullable(t.String()),
        swarm_state: nullable(t.String(), "The engine's Swarm state: active, inactive, pending, error or locked"),
        is_manager: nullable(t.Boolean(), "The engine is a Swarm manager (it can list nodes and tasks)"),
        node_id: nullable(t.String(), "Its own Swarm node id"),
      }),
      t.Null(),
    ],
    { description: "The Docker Engine or Swarm manager ops asked; null for the process runtime" },
  ),
  nodes: t.Array(NodeEntry),
});
export type NodesReport = typeof NodesReport.static;
export type NodeEntry = typeof NodeEntry.static;
export type NodeReplica = typeof NodeReplica.static;

export const deploymentsModels = { DeployRequest, RollbackRequest, DeploymentResponse, BuildSummary, DeploymentSummary, TimelineRow, IngressReport, ProcessesReport, NodesReport, ErrorBody };
