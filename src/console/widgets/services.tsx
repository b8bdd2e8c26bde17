/**
 * Services as the Overview and Deployments pages show them: the shapes of a service resource's
 * status, its timeline rows, the table of services with their health, and the badges.
 */
import { Link, when } from "../ui";
import { FailureOutput, type FailedProcess } from "./failure-output";

export interface ReplicaInfo {
  id: string;
  state: string;
  port: number;
  restarts: number;
  started_at: string | null;
  last_exit: { code: number | null; signal: string | null; oom_killed: boolean; at: string | null } | null;
  next_restart_at: string | null;
  memory: { limit_mb: number | null; enforced: boolean; reason: string | null };
  /** Where the ingress reaches it. */
  host?: string;
  /** Swarm: the node its task runs on; null elsewhere or until placed. */
  node?: { name: string; addr: string } | null;
}

export interface ServiceInfo {
  id: string;
  name: string;
  environment?: string | null;
  spec: { replicas?: number; health_check_path?: string | null; status_page?: boolean; source?: { repo: string } | null };
  status: {
    state: string;
    summary: string;
    observed_at: string;
    detail?: {
      digest?: string | null;
      deployment?: number | null;
      replicas_wanted?: number;
      replicas?: ReplicaInfo[];
      restarts?: number;
      rollout?: { deployment: number; rollout: string; note: string | null } | null;
      health?: string | null;
      health_note?: string | null;
      /** Where the ingress serves the service (empty when it is off). */
      urls?: string[];
    };
  };
}

export interface TimelineEntry {
  at: string;
  author: string;
  commit: string;
  message: string;
  service: string;
  state: string;
  state_text: string;
  failure_kind?: string | null;
  build?: { id: number; status: string; image_digest?: string | null } | null;
  deployment?: { id: number; image_digest: string; rollout: string; trigger: string; created_by: string; finished_at?: string | null; failure_output?: FailedProcess[] } | null;
}

const STATE_CLASS: Record<string, string> = { ready: "operational", pending: "degraded", error: "down" };
const TIMELINE_CLASS: Record<string, string> = { healthy: "operational", rolled_back: "down", failed: "down", refused: "down", unhealthy: "down", cancelled: "degraded" };

export function short(digest: string | null | undefined): string {
  if (!digest) return "—";
  return digest.startsWith("sha256:") ? digest.slice(0, 19) : digest.slice(0, 12);
}

/** A resource status as a badge: ready, pending or error. */
export function StatusBadge(props: { state: string }) {
  return <span class={`badge badge-${STATE_CLASS[props.state] ?? "degraded"}`}>{props.state}</span>;
}

/** The timeline rows as a table. */
export function TimelineTable(props: { rows: TimelineEntry[]; showService?: boolean; slug?: string; env?: string }) {
  if (props.rows.length === 0) return <p class="muted">Nothing was built or deployed here yet.</p>;
  return (
    <table class="timeline">
      <thead>
        <tr>
          <th scope="col">When</th>
          {props.showService && <th scope="col">Service</th>}
          <th scope="col">State</th>
          <th scope="col">What</th>
          <th scope="col">Commit</th>
          <th scope="col">By</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r, i) => (
          <tr key={`${r.deployment?.id ?? "b"}-${r.build?.id ?? i}`}>
            <td>{when(r.at)}</td>
            {props.showService && <td>{r.service}</td>}
            <td>
              <span class={`badge badge-${TIMELINE_CLASS[r.state] ?? "degraded"}`}>{r.state.replace("_", " ")}</span>
              {r.failure_kind && <span class="tag tag-warn">{r.failure_kind}</span>}
            </td>
            <td>
              <div>{r.message}</div>
              <div class="hint">{r.state_text}</div>
              {r.deployment?.failure_output && props.slug && (
                <details class="failure-details">
                  <summary>What it printed last</summary>
                  <FailureOutput output={r.deployment.failure_output} logs={`/projects/${props.slug}/logs?service=${encodeURIComponent(r.service)}&environment=${encodeURIComponent(props.env ?? "production")}`} />
                </details>
              )}
            </td>
            <td>
              <code>{r.commit.startsWith("sha256:") ? short(r.commit) : r.commit.slice(0, 12)}</code>
            </td>
            <td>{r.author}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Services with their health, current digest and replicas, each linking to its page. */
export function ServiceTable(props: { slug: string; env: string; services: ServiceInfo[] }) {
  if (props.services.length === 0) return <p class="muted">No services in {props.env} yet.</p>;
  return (
    <table class="services">
      <thead>
        <tr>
          <th scope="col">Service</th>
          <th scope="col">Health</th>
          <th scope="col">Running</th>
          <th scope="col">Replicas</th>
          <th scope="col">Summary</th>
        </tr>
      </thead>
      <tbody>
        {props.services.map((s) => {
          const d = s.status.detail ?? {};
          const running = (d.replicas ?? []).filter((r) => r.state === "running").length;
          return (
            <tr key={s.id}>
              <td>
                <Link href={`/projects/${props.slug}/deployments/${s.name}?environment=${encodeURIComponent(props.env)}`}>
                  <strong>{s.name}</strong>
                </Link>
              </td>
              <td>
                <StatusBadge state={s.status.state} />
              </td>
              <td>
                <code>{short(d.digest)}</code>
              </td>
              <td>
                {running} / {d.replicas_wanted ?? s.spec.replicas ?? 1}
              </td>
              <td>{s.status.summary}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
