/**
 * A project's overview: its services in one environment with their health (linking to their
 * deployment pages), then every resource of the environment (services, databases, jobs, domains,
 * secret groups, and the project-level buckets), each with its stored status; then the card that
 * makes the command installing the CLI for this project.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, when } from "../ui";
import type { SectionProps } from "../frame";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { ServiceTable, type ServiceInfo } from "../widgets/services";
import { InstallCliCard } from "../widgets/install-cli";

interface ResourceRow {
  id: string;
  type: string;
  name: string;
  spec: ServiceInfo["spec"];
  environment?: string | null;
  status: ServiceInfo["status"];
  updated_at: string;
}

const STATE_CLASS: Record<string, string> = { ready: "operational", pending: "degraded", error: "down" };

export function ProjectOverview(props: SectionProps) {
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const [rows, setRows] = useState<ResourceRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setRows(null);
    api<ResourceRow[]>("GET", `/api/v1/projects/${props.project.slug}/resources?environment=${encodeURIComponent(env)}`)
      .then(setRows)
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the resources."));
  }, [props.project.slug, env]);

  const services = (rows ?? []).filter((r) => r.type === "service");
  return (
    <section aria-labelledby="overview-title">
      <EnvironmentPicker environments={envs} current={env} />
      {services.length > 0 && (
        <>
          <h2 id="services-title">Services</h2>
          <ServiceTable slug={props.project.slug} env={env} services={services} />
        </>
      )}
      <h2 id="overview-title">Resources</h2>
      {error && <Alert>{error}</Alert>}
      {!rows && !error && <p aria-busy="true">Loading resources…</p>}
      {rows && rows.length === 0 && <p class="muted">No resources in {env} yet.</p>}
      {rows && rows.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Name</th>
              <th scope="col">State</th>
              <th scope="col">Summary</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{r.type}</td>
                <td>
                  <strong>{r.name}</strong>
                </td>
                <td>
                  <span class={`badge badge-${STATE_CLASS[r.status.state] ?? "degraded"}`}>{r.status.state}</span>
                </td>
                <td>{r.status.summary}</td>
                <td>{when(r.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(rows || error) && !props.project.archived && <InstallCliCard projects={[props.project]} />}
    </section>
  );
}
