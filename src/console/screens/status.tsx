/**
 * The public status page: overall state, each component, incidents of about the last 30 days.
 * Needs no sign-in; reads only `GET /api/v1/status/public`.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type PublicStatus } from "../api";
import { Alert, StateBadge, when } from "../ui";

const HEADLINE = { operational: "All systems operational", degraded: "Some systems are degraded", down: "Some systems are down" } as const;

function duration(fromIso: string, toIso: string | null | undefined): string {
  const ms = (toIso ? new Date(toIso).getTime() : Date.now()) - new Date(fromIso).getTime();
  const m = Math.max(1, Math.round(ms / 60_000));
  if (m < 60) return `${m} min`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} days`;
}

export function StatusPage() {
  const [status, setStatus] = useState<PublicStatus | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stop = false;
    const load = () =>
      api<PublicStatus>("GET", "/api/v1/status/public")
        .then((s) => !stop && (setStatus(s), setError(null)))
        .catch((e) => !stop && setError(e instanceof ApiError ? e.message : "Could not load the status."));
    void load();
    const timer = setInterval(load, 30_000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);

  if (error && !status) return <Alert>{error}</Alert>;
  if (!status) return <p aria-busy="true">Loading status…</p>;
  return (
    <section aria-labelledby="status-title">
      <h1 id="status-title">Status</h1>
      <div class={`banner banner-${status.state}`} role="status">
        <strong>{HEADLINE[status.state]}</strong>
        <span class="muted">Updated {when(status.generated_at)}</span>
      </div>
      <h2>Components</h2>
      <ul class="components">
        {status.components.map((c) => (
          <li key={c.slug}>
            <span class="component-name">{c.name}</span>
            <StateBadge state={c.state} />
            <span class="muted since">since {when(c.since)}</span>
          </li>
        ))}
      </ul>
      <h2>Incidents in the last 30 days</h2>
      {status.incidents.length === 0 ? (
        <p class="muted">No incidents.</p>
      ) : (
        <ul class="incidents">
          {status.incidents.map((i) => (
            <li key={`${i.slug}-${i.started_at}`}>
              <StateBadge state={i.state} />
              <span>
                <strong>{i.name}</strong> — {i.resolved_at ? "resolved" : "ongoing"}
              </span>
              <span class="muted">
                {when(i.started_at)}
                {i.resolved_at ? ` to ${when(i.resolved_at)}` : ""} ({duration(i.started_at, i.resolved_at)})
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
