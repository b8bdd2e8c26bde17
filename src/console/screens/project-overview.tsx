/**
 * A project's overview: its services in one environment with their health (linking to their
 * deployment pages), then every resource of the environment (services, databases, jobs, domains,
 * secret groups, and the project-level buckets), each with its stored status and opening its
 * page, as the Resources page lists them; then the card that makes the command installing the
 * CLI for this project.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert } from "../ui";
import type { SectionProps } from "../frame";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { ServiceTable, type ServiceInfo } from "../widgets/services";
import { InstallCliCard } from "../widgets/install-cli";
import { ResourceTable } from "../widgets/resources";

interface ResourceRow {
  id: string;
  type: string;
  name: string;
  spec: ServiceInfo["spec"];
  environment?: string | null;
  status: ServiceInfo["status"];
  updated_at: string;
}

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
      {rows && rows.length > 0 && <ResourceTable slug={props.project.slug} env={env} rows={rows} />}
      {(rows || error) && !props.project.archived && <InstallCliCard projects={[props.project]} />}
    </section>
  );
}
