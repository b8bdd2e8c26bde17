/**
 * Nodes (`/nodes`, for people who manage the estate): where replicas run, as
 * `GET /api/v1/admin/nodes` reports it — a Swarm's nodes with their role, state, availability and
 * resources and ops's replicas on each, or the one Docker Engine, or this host. When the engine
 * behind OPS_DOCKER_HOST does not answer, the page says what failed instead of a list.
 */
import { api, type Me } from "../api";
import { Alert } from "../ui";
import { accessOf } from "../access";
import { Denied } from "../widgets/guard";
import { Empty, Pending, Scroll, useLoad } from "../widgets/load";

interface NodeReplica {
  id: string;
  project: string | null;
  environment: string | null;
  service: string | null;
  deployment: string | null;
  task_id: string | null;
  task_state: string;
  port: number | null;
}

interface NodeEntry {
  id: string;
  hostname: string;
  address: string | null;
  role: "manager" | "worker" | "standalone";
  leader: boolean;
  manager_reachability: string | null;
  state: string;
  state_message: string | null;
  availability: string;
  engine_version: string | null;
  os: string | null;
  cpus: number | null;
  memory_mb: number | null;
  labels: Record<string, string>;
  replicas: NodeReplica[];
}

interface NodesReport {
  runtime: "process" | "docker" | "swarm";
  manager: { endpoint: string; reachable: boolean; error: string | null; engine_version: string | null; swarm_state: string | null; is_manager: boolean | null } | null;
  nodes: NodeEntry[];
}

const RUNTIMES = {
  process: "Replicas run as sandboxed processes on this host (OPS_RUNTIME=process).",
  docker: "Replicas run as containers on one Docker Engine (OPS_RUNTIME=docker).",
  swarm: "Replicas run as Swarm services on the Swarm's nodes (OPS_RUNTIME=swarm).",
} as const;

/** ready/active is fine; drain, pause and anything but ready are not. */
function stateClass(state: string): string {
  return state === "ready" ? "operational" : state === "down" || state === "disconnected" ? "down" : "degraded";
}

function memory(mb: number | null): string {
  if (mb === null) return "–";
  return mb >= 1024 ? `${(mb / 1024).toFixed(1)} GiB` : `${mb} MiB`;
}

function Replicas(props: { replicas: NodeReplica[] }) {
  if (props.replicas.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="node-replicas">
      {props.replicas.map((r) => (
        <li key={r.id} title={r.task_id ? `task ${r.task_id}` : undefined}>
          <code>{r.id}</code> <span class="muted">{[r.project, r.environment, r.service].map((x) => x ?? "?").join(" / ")}</span>{" "}
          <span class={`badge badge-${r.task_state === "running" ? "operational" : "degraded"}`}>{r.task_state}</span>
          {r.port !== null && <span class="muted"> :{r.port}</span>}
        </li>
      ))}
    </ul>
  );
}

export function NodesPage(props: { me: Me }) {
  const access = accessOf(props.me, null);
  const allowed = access.can("estate.manage", null);
  const loaded = useLoad(() => (allowed ? api<NodesReport>("GET", "/api/v1/admin/nodes") : Promise.resolve(null)), [allowed]);
  const heading = <h1 id="nodes-title">Nodes</h1>;
  if (!allowed) {
    return (
      <section aria-labelledby="nodes-title">
        {heading}
        <Denied access={access} perm="estate.manage" env={null} what="Seeing the nodes replicas run on" />
      </section>
    );
  }
  const r = loaded.data;
  if (!r) {
    return (
      <section aria-labelledby="nodes-title">
        {heading}
        <Pending what="the nodes" error={loaded.error} tall />
      </section>
    );
  }
  const m = r.manager;
  return (
    <section aria-labelledby="nodes-title">
      {heading}
      <p class="muted">
        {RUNTIMES[r.runtime]}
        {m && (
          <>
            {" "}
            Engine API: <code>{m.endpoint}</code>
            {m.engine_version ? ` (Docker ${m.engine_version})` : ""}.
          </>
        )}{" "}
        <button type="button" class="small" onClick={() => void loaded.reload()}>
          Refresh
        </button>
      </p>
      {m?.error && (
        <div class="manager-error">
          <Alert>
            {m.reachable ? "The engine answered, but: " : "The engine did not answer: "}
            {m.error}
          </Alert>
        </div>
      )}
      {r.nodes.length === 0 ? (
        <Empty>No nodes to show{m?.error ? " until the engine answers" : ""}.</Empty>
      ) : (
        <Scroll>
          <table class="nodes">
            <caption class="visually-hidden">Nodes and the replicas on each</caption>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Role</th>
                <th scope="col">State</th>
                <th scope="col">Availability</th>
                <th scope="col">Resources</th>
                <th scope="col">Replicas</th>
              </tr>
            </thead>
            <tbody>
              {r.nodes.map((n) => (
                <tr key={n.id} data-node={n.hostname}>
                  <th scope="row">
                    {n.hostname}
                    {n.address && (
                      <>
                        <br />
                        <span class="muted">{n.address}</span>
                      </>
                    )}
                  </th>
                  <td>{n.role === "manager" && n.leader ? "manager (leader)" : n.role}</td>
                  <td title={n.state_message ?? undefined}>
                    <span class={`badge badge-${stateClass(n.state)}`}>{n.state}</span>
                  </td>
                  <td>
                    <span class={`badge badge-${n.availability === "active" ? "operational" : "degraded"}`}>{n.availability}</span>
                  </td>
                  <td>
                    {n.cpus === null ? "–" : `${Math.round(n.cpus * 100) / 100} CPU${n.cpus === 1 ? "" : "s"}`}, {memory(n.memory_mb)}
                    {n.engine_version && (
                      <>
                        <br />
                        <span class="muted">Docker {n.engine_version}</span>
                      </>
                    )}
                    {Object.keys(n.labels).length > 0 && (
                      <>
                        <br />
                        <span class="muted">{Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(", ")}</span>
                      </>
                    )}
                  </td>
                  <td>
                    <Replicas replicas={n.replicas} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
    </section>
  );
}
