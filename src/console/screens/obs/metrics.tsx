/**
 * A project's Metrics page: every metric seen in the last 24 hours as a line chart with one line
 * per service (bucketed by the server), for a range and optionally one service or one metric.
 * Counters are drawn as a rate per second, derived from consecutive cumulative points (a drop is
 * a restart and leaves a gap); gauges as the bucket average with a min–max band; histograms as the
 * mean of the values observed per bucket.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../../api";
import { Alert } from "../../ui";
import type { SectionProps } from "../../frame";
import { LineChart, type LineSeries } from "../../widgets/charts";
import { EnvironmentSelect, QuerySelect, RangeSelect, ServiceSelect, obsQuery, rangeMs, setPageQuery, useObsServices, type MetricName, type SeriesResponse } from "../../widgets/obs";

const MAX_CHARTS = 12;

function toLines(r: SeriesResponse): LineSeries[] {
  return r.series.map((s) => {
    const points = s.points.map((p) => ({ t: Date.parse(p.t), value: p.value ?? null, min: p.min ?? null, max: p.max ?? null }));
    if (r.kind !== "counter") return { name: s.service, points };
    // Rate per second between consecutive points with values; a decrease is a counter reset.
    let prev: { t: number; value: number } | null = null;
    const rates = points.map((p) => {
      if (p.value === null) return { t: p.t, value: null, min: null, max: null };
      const rate = prev && p.value >= prev.value && p.t > prev.t ? ((p.value - prev.value) * 1000) / (p.t - prev.t) : null;
      prev = { t: p.t, value: p.value };
      return { t: p.t, value: rate, min: null, max: null };
    });
    return { name: s.service, points: rates };
  });
}

const DESCRIBE: Record<string, string> = { counter: "rate per second", gauge: "average, with min–max band", histogram: "mean of the values observed" };

function MetricChart(props: { slug: string; name: MetricName; service: string; environment: string; range: string }) {
  const [data, setData] = useState<{ r: SeriesResponse; from: number; to: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let stop = false;
    const to = Date.now();
    const from = to - rangeMs(props.range);
    setData(null);
    api<SeriesResponse>("GET", `/api/v1/obs/metrics/series?${obsQuery(props.slug, { name: props.name.name, service: props.service, environment: props.environment, from: props.range })}`)
      .then((r) => !stop && setData({ r, from, to }))
      .catch((e) => !stop && setError(e instanceof ApiError ? e.message : "Could not load the series."));
    return () => {
      stop = true;
    };
  }, [props.slug, props.name.name, props.service, props.environment, props.range]);
  return (
    <article class="card metric" aria-labelledby={`m-${props.name.name}`}>
      <h3 id={`m-${props.name.name}`}>
        <code>{props.name.name}</code> <span class="tag">{props.name.kind}</span>
      </h3>
      {error && <Alert>{error}</Alert>}
      {!data && !error && <p aria-busy="true">Loading…</p>}
      {data && (
        <>
          <LineChart title={`${props.name.name}, ${DESCRIBE[data.r.kind] ?? data.r.kind}`} series={toLines(data.r)} from={data.from} to={data.to} zeroBased={data.r.kind === "counter"} />
          <p class="hint">
            {DESCRIBE[data.r.kind] ?? data.r.kind} · {data.r.bucket_seconds} s buckets · {data.r.source === "raw" ? "raw samples" : "5-minute rollups"}
          </p>
        </>
      )}
    </article>
  );
}

export function MetricsPage(props: SectionProps) {
  const slug = props.project.slug;
  const q = props.query;
  const range = q.get("range") ?? "1h";
  const service = q.get("service") ?? "";
  const environment = q.get("environment") ?? "";
  const only = q.get("metric") ?? "";
  const [names, setNames] = useState<MetricName[] | null>(null);
  const services = useObsServices(slug, environment);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setNames(null);
    api<MetricName[]>("GET", `/api/v1/obs/metrics/names?${obsQuery(slug, { environment })}`)
      .then(setNames)
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the metrics."));
  }, [slug, environment]);

  const set = (changes: Record<string, string | null>) => setPageQuery(q, changes);
  const shown = (names ?? []).filter((n) => !only || n.name === only).slice(0, MAX_CHARTS);
  return (
    <section aria-labelledby="metrics-title" class="obs">
      <h2 id="metrics-title">Metrics</h2>
      <form class="obs-filters" onSubmit={(e) => e.preventDefault()}>
        <QuerySelect id="metrics-name" label="Metric" value={only} options={[["", "All metrics"], ...(names ?? []).map((n) => [n.name, n.name] as const)]} onChange={(v) => set({ metric: v || null })} />
        <ServiceSelect id="metrics-service" services={services} value={service} onChange={(v) => set({ service: v })} />
        <EnvironmentSelect id="metrics-env" environments={props.project.environments} value={environment} onChange={(v) => set({ environment: v })} />
        <RangeSelect id="metrics-range" value={range} onChange={(v) => set({ range: v })} />
      </form>
      {error && <Alert>{error}</Alert>}
      {!names && !error && <p aria-busy="true">Loading metrics…</p>}
      {names && names.length === 0 && <p class="muted">No metrics arrived in the last 24 hours. Point an OpenTelemetry exporter at <code>/otlp/v1/metrics</code>.</p>}
      {names && names.length > MAX_CHARTS && !only && <p class="hint">Showing {MAX_CHARTS} of {names.length} metrics; choose one above to see another.</p>}
      <div class="metric-grid">
        {shown.map((n) => (
          <MetricChart key={`${n.name}/${n.kind}`} slug={slug} name={n} service={service} environment={environment} range={range} />
        ))}
      </div>
    </section>
  );
}
