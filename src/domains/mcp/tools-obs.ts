/**
 * Observability tools: log search, traces and metric series. Their routes evaluate `obs.read`
 * "anywhere" and the service narrows to the projects the caller may read (or the one `project`
 * names), so a tool call sees exactly what the same API call would.
 */
import { readLogs, readSeries, readTrace, readTraces } from "../observability/service";
import { READS, count, type ToolSpec } from "./tool-kit";

interface Line {
  timestamp: string;
  level: string;
  service: string;
  message: string;
}
interface Span {
  name: string;
  service: string;
  duration_ms: number;
  status?: string | null;
  trace_id: string;
}

const clip = (s: string, n = 160) => (s.length > n ? `${s.slice(0, n)}…` : s);
/** The routes take whole numbers of lines. */
const whole = (n: number | undefined) => (n === undefined ? undefined : Math.floor(n));

export const OBS_TOOLS: ToolSpec[] = [
  {
    name: "search_logs",
    title: "Search logs",
    description:
      "Log lines of services (their OTLP logs and their stdout/stderr), newest first: a case-insensitive substring `q`, level families (error,warn), a service, a project and environment, and a window (`from`/`to`: RFC 3339 or 15m, 24h, 7d).",
    route: "GET /api/v1/obs/logs",
    permission: "obs.read",
    annotations: READS,
    run: (c) => readLogs(c.core, c.auth.principal, { ...c.query, limit: whole(c.query.limit) }),
    text: (r: Line[]) => `${count(r.length, "line")}${r.length ? `; newest: ${r[0].timestamp} ${r[0].service} ${r[0].level}: ${clip(r[0].message)}` : ""}.`,
  },
  {
    name: "list_traces",
    title: "List traces",
    description: "Root spans, one per trace, newest first: filter by service, a substring of the name, status (UNSET, OK, ERROR), project, environment and window.",
    route: "GET /api/v1/obs/traces",
    permission: "obs.read",
    annotations: READS,
    run: (c) => readTraces(c.core, c.auth.principal, { ...c.query, limit: whole(c.query.limit) }),
    text: (r: Span[]) => `${count(r.length, "trace")}${r.length ? `; newest: ${r[0].service} ${r[0].name} ${r[0].duration_ms} ms ${r[0].status ?? ""}`.trimEnd() : ""}.`,
  },
  {
    name: "get_trace",
    title: "Get a trace",
    description: "Every span of one trace in start order.",
    route: "GET /api/v1/obs/traces/:trace_id",
    args: { describe: { trace_id: "Trace id (hex), from list_traces" } },
    permission: "authenticated",
    annotations: READS,
    run: (c) => readTrace(c.core, c.auth.principal, c.params.trace_id, c.query),
    text: (r: Span[]) => `${count(r.length, "span")}${r.length ? `, root ${r[0].service} ${r[0].name} ${r[0].duration_ms} ms` : ""}.`,
  },
  {
    name: "metric_series",
    title: "Metric series",
    description: "A metric's series per service over a window, bucketed by the server (raw samples for recent windows, 5-minute rollups otherwise).",
    route: "GET /api/v1/obs/metrics/series",
    permission: "obs.read",
    annotations: READS,
    run: (c) => readSeries(c.core, c.auth.principal, c.query as { name: string }),
    text: (r: { name: string; kind: string; bucket_seconds: number; series: Array<{ service: string; points: unknown[] }> }) =>
      `${r.name} (${r.kind}): ${count(r.series.length, "series", "series")} in ${r.bucket_seconds} s buckets${r.series.length ? ` (${r.series.map((s) => s.service).join(", ")})` : ""}.`,
  },
];
