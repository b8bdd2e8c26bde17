/**
 * A project's Deployments section (`/projects/<slug>/deployments?environment=…`): the services
 * of one environment with their health, current digest and replicas, and the environment's
 * timeline (builds and rollouts, newest first). `/projects/<slug>/deployments/<service>` is a
 * service's page (service.tsx).
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, when } from "../ui";
import type { SectionProps } from "../frame";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { ServiceTable, TimelineTable, type ServiceInfo, type TimelineEntry } from "../widgets/services";

export function DeploymentsList(props: SectionProps) {
  const slug = props.project.slug;
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const [services, setServices] = useState<ServiceInfo[] | null>(null);
  const [timeline, setTimeline] = useState<TimelineEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setServices(null);
    setTimeline(null);
    const q = `environment=${encodeURIComponent(env)}`;
    Promise.all([api<ServiceInfo[]>("GET", `/api/v1/projects/${slug}/resources/service?${q}`), api<TimelineEntry[]>("GET", `/api/v1/projects/${slug}/deployments?${q}&limit=50`)])
      .then(([s, tl]) => {
        setServices(s);
        setTimeline(tl);
      })
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the deployments."));
  }, [slug, env]);

  return (
    <section aria-labelledby="deployments-title">
      <h2 id="deployments-title">Deployments</h2>
      <EnvironmentPicker environments={envs} current={env} />
      {error && <Alert>{error}</Alert>}
      {!services && !error && <p aria-busy="true">Loading deployments…</p>}
      {services && <ServiceTable slug={slug} env={env} services={services} />}
      {timeline && (
        <>
          <h3>Timeline</h3>
          <TimelineTable rows={timeline} showService slug={slug} env={env} />
        </>
      )}
    </section>
  );
}
