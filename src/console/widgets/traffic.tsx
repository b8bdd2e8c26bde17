/**
 * A service's traffic as ops's ingress saw it (src/domains/deployments/ingress-metrics.ts), for
 * its page: requests and 5xx answers over the last hour, and the latest p95 latency, read from the
 * Metrics API's series (`ops.ingress.requests`, `ops.ingress.responses.5xx`,
 * `ops.ingress.request.duration.p95`), with a link to Metrics. Counters come back cumulative per
 * bucket: the hour's count is the newest total less the total an hour ago (read from a window that
 * starts a little earlier; none then means the series began within the hour, from 0).
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Link } from "../ui";
import { obsQuery } from "./obs";

interface Series {
  series: Array<{ points: Array<{ t: string; value: number | null }> }>;
}

const HOUR = 3_600_000;
const values = (s: Series) => s.series.flatMap((x) => x.points.map((p) => p.value)).filter((v): v is number => v !== null);
/** The increase of a cumulative counter since `since` (ms); null when it has no value at all. */
const increase = (s: Series, since: number) => {
  const points = s.series.flatMap((x) => x.points).filter((p): p is { t: string; value: number } => p.value !== null);
  if (points.length === 0) return null;
  const before = points.filter((p) => Date.parse(p.t) <= since).at(-1)?.value ?? 0;
  return points[points.length - 1]!.value - before;
};

export function Traffic(props: { slug: string; environment: string; service: string }) {
  const [seen, setSeen] = useState<{ requests: number | null; errors: number | null; p95: number | null } | "unreadable" | null>(null);
  useEffect(() => {
    const since = Date.now() - HOUR;
    const from = new Date(since - 10 * 60_000).toISOString();
    const read = (name: string) => api<Series>("GET", `/api/v1/obs/metrics/series?${obsQuery(props.slug, { environment: props.environment, service: props.service, name, from })}`);
    Promise.all([read("ops.ingress.requests"), read("ops.ingress.responses.5xx"), read("ops.ingress.request.duration.p95")])
      .then(([r, e, p]) => setSeen({ requests: increase(r, since), errors: increase(e, since), p95: values(p).at(-1) ?? null }))
      // Without obs.read (or with telemetry down) there is nothing to say, rather than "no requests".
      .catch(() => setSeen("unreadable"));
  }, [props.slug, props.environment, props.service]);
  if (!seen) return <span aria-busy="true">…</span>;
  if (seen === "unreadable") return <span class="muted">not readable here (Metrics needs obs.read)</span>;
  const metrics = `/projects/${props.slug}/metrics?service=${encodeURIComponent(props.service)}&environment=${encodeURIComponent(props.environment)}`;
  if (seen.requests === null) return <span class="muted">no requests through the ingress in the last hour</span>;
  return (
    <span class="traffic">
      {seen.requests} request{seen.requests === 1 ? "" : "s"} in the last hour, {seen.errors ?? 0} answered 5xx{seen.p95 !== null ? `; p95 ${Math.round(seen.p95)} ms` : ""} · <Link href={metrics}>Metrics</Link>
    </span>
  );
}
