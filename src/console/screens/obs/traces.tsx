/**
 * A project's Traces page: root spans newest first with filters (service, root span name, status,
 * range); a trace opens as a waterfall — its spans as a tree in start order, each a bar placed by
 * its start and length within the trace.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../../api";
import { Alert, Link } from "../../ui";
import type { SectionProps } from "../../frame";
import { ObsSearch, QuerySelect, RangeSelect, ServiceSelect, duration, obsQuery, preciseTime, setPageQuery, useObsServices, type SpanEntry } from "../../widgets/obs";

const STATUSES: ReadonlyArray<readonly [string, string]> = [
  ["", "Any status"],
  ["ERROR", "Errors"],
  ["OK", "OK"],
  ["UNSET", "Unset"],
];

export function TracesPage(props: SectionProps) {
  const traceId = props.rest[0];
  return traceId ? <TraceView {...props} traceId={traceId} /> : <TraceList {...props} />;
}

function TraceList(props: SectionProps) {
  const slug = props.project.slug;
  const q = props.query;
  const text = q.get("q") ?? "";
  const service = q.get("service") ?? "";
  const status = q.get("status") ?? "";
  const range = q.get("range") ?? "1h";
  const services = useObsServices(slug);
  const [roots, setRoots] = useState<SpanEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    setRoots(null);
    setError(null);
    api<SpanEntry[]>("GET", `/api/v1/obs/traces?${obsQuery(slug, { q: text, service, status, from: range, limit: 100 })}`)
      .then(setRoots)
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the traces."));
  }, [slug, text, service, status, range]);

  const set = (changes: Record<string, string | null>) => setPageQuery(q, changes);
  return (
    <section aria-labelledby="traces-title" class="obs">
      <h2 id="traces-title">Traces</h2>
      <ObsSearch id="traces-q" label="Root span name" placeholder="e.g. GET /orders" text={text} onSearch={(v) => set({ q: v })}>
        <ServiceSelect id="traces-service" services={services} value={service} onChange={(v) => set({ service: v })} />
        <QuerySelect id="traces-status" label="Status" value={status} options={STATUSES} onChange={(v) => set({ status: v || null })} />
        <RangeSelect id="traces-range" value={range} onChange={(v) => set({ range: v })} />
      </ObsSearch>
      {error && <Alert>{error}</Alert>}
      {!roots && !error && <p aria-busy="true">Loading traces…</p>}
      {roots && roots.length === 0 && <p class="muted">No traces match in this range.</p>}
      {roots && roots.length > 0 && (
        <table class="traces">
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Root span</th>
              <th scope="col">Service</th>
              <th scope="col">Duration</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {roots.map((s) => (
              <tr key={s.trace_id}>
                <td>
                  <time dateTime={s.timestamp}>{preciseTime(s.timestamp)}</time>
                </td>
                <td>
                  <Link href={`/projects/${slug}/traces/${s.trace_id}`}>{s.name}</Link>
                </td>
                <td>{s.service}</td>
                <td class="num">{duration(s.duration_ms)}</td>
                <td>
                  <SpanStatus span={s} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function SpanStatus(props: { span: SpanEntry }) {
  const s = props.span;
  const status = s.status ?? "UNSET";
  const label = `${status.toLowerCase()}${s.http_status ? ` · ${s.http_status}` : ""}`;
  if (status === "ERROR") return <span class="badge badge-down">{label}</span>;
  if (status === "OK") return <span class="badge badge-operational">{label}</span>;
  return <span class="tag">{label}</span>;
}

interface Row {
  span: SpanEntry;
  depth: number;
}

/** Spans as a tree (children under their parent, in start order), depth-first. */
function treeOf(spans: SpanEntry[]): Row[] {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string, SpanEntry[]>();
  const roots: SpanEntry[] = [];
  for (const s of spans) {
    if (s.parent_span_id && ids.has(s.parent_span_id)) children.set(s.parent_span_id, [...(children.get(s.parent_span_id) ?? []), s]);
    else roots.push(s);
  }
  const out: Row[] = [];
  const walk = (s: SpanEntry, depth: number) => {
    out.push({ span: s, depth });
    for (const c of children.get(s.span_id) ?? []) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return out;
}

function TraceView(props: SectionProps & { traceId: string }) {
  const slug = props.project.slug;
  const [spans, setSpans] = useState<SpanEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setSpans(null);
    setError(null);
    api<SpanEntry[]>("GET", `/api/v1/obs/traces/${encodeURIComponent(props.traceId)}?${obsQuery(slug, {})}`)
      .then(setSpans)
      .catch((e) => setError(e instanceof ApiError ? (e.status === 404 ? "There is no such trace in this project." : e.message) : "Could not load the trace."));
  }, [slug, props.traceId]);

  const back = (
    <p>
      <Link href={`/projects/${slug}/traces`}>← All traces</Link>
    </p>
  );
  if (error)
    return (
      <section class="obs">
        {back}
        <Alert>{error}</Alert>
      </section>
    );
  if (!spans) return <p aria-busy="true">Loading the trace…</p>;
  const start = Math.min(...spans.map((s) => Date.parse(s.timestamp)));
  const end = Math.max(...spans.map((s) => Date.parse(s.timestamp) + s.duration_ms));
  const total = Math.max(end - start, 0.001);
  const rows = treeOf(spans);
  const root = rows[0]?.span;
  return (
    <section aria-labelledby="trace-title" class="obs">
      {back}
      <h2 id="trace-title">{root?.name ?? "Trace"}</h2>
      <p class="muted">
        <code>{props.traceId}</code> · {spans.length} spans · {duration(total)} · started {preciseTime(new Date(start).toISOString())}
      </p>
      <table class="waterfall" aria-label="Spans of the trace in start order, indented under their parent">
        <thead>
          <tr>
            <th scope="col">Span</th>
            <th scope="col">Service</th>
            <th scope="col">Duration</th>
            <th scope="col" class="timeline">
              <div class="ticks">
                <span>0</span>
                <span>{duration(total / 2)}</span>
                <span>{duration(total)}</span>
              </div>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ span: s, depth }) => {
            const offset = ((Date.parse(s.timestamp) - start) / total) * 1000;
            const width = Math.max(2, (s.duration_ms / total) * 1000);
            return (
              <tr key={s.span_id} class={s.status === "ERROR" ? "error" : undefined}>
                <td class="span-name">
                  <span class={`indent d${Math.min(depth, 8)}`} aria-hidden="true" />
                  {s.name}
                  {s.kind && <span class="tag">{s.kind.toLowerCase()}</span>}
                  {s.status === "ERROR" && <span class="badge badge-down">error</span>}
                </td>
                <td>{s.service}</td>
                <td class="num">{duration(s.duration_ms)}</td>
                <td class="timeline">
                  <svg viewBox="0 0 1000 12" preserveAspectRatio="none" role="img" aria-label={`starts at ${duration(offset * total / 1000)}, lasts ${duration(s.duration_ms)}`}>
                    <rect class={`span-bar${s.status === "ERROR" ? " error" : ""}`} x={Math.min(offset, 998)} y="1" width={Math.min(width, 1000 - Math.min(offset, 998))} height="10" rx="2" />
                  </svg>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
