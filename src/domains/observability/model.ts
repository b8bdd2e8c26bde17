/**
 * Schemas of the observability routes, under the spec's names (document 3, "Observability"), plus
 * the log volume the console's histogram reads and the OTLP failure body.
 */
import { t } from "elysia";
import { IntParam } from "../../core/http-schemas";

const optStr = (description?: string) => t.Optional(t.Union([t.String(), t.Null()], description ? { description } : {}));

export const LogEntry = t.Object(
  {
    client: optStr("Client address (`client.address`)"),
    environment: t.String(),
    fingerprint: optStr("Hash of the message with numbers and ids masked: lines of the same shape share it"),
    host: t.String({ description: "`host.name` of the sender's resource; empty when not sent" }),
    level: t.String({ description: "The sender's own level text, else the OTLP severity family (trace, debug, info, warn, error, fatal, unspecified)" }),
    message: t.String(),
    method: optStr("HTTP method"),
    project: t.String(),
    route: optStr("HTTP route"),
    service: t.String(),
    span: optStr("Span id (hex) the line was written in"),
    status: optStr("HTTP status code"),
    target: t.String({ description: "Logger or module: `log.target`, `code.namespace`, or the instrumentation scope" }),
    timestamp: t.String(),
  },
  { title: "LogEntry" },
);
export type LogEntry = typeof LogEntry.static;

export const MetricName = t.Object({ kind: t.String({ description: "`gauge`, `counter` or `histogram`" }), name: t.String() }, { title: "MetricName" });
export type MetricName = typeof MetricName.static;

export const SeriesPoint = t.Object(
  {
    max: t.Optional(t.Union([t.Number(), t.Null()])),
    min: t.Optional(t.Union([t.Number(), t.Null()])),
    t: t.String({ description: "Start of the bucket" }),
    value: t.Optional(
      t.Union([t.Number(), t.Null()], {
        description:
          "Gauge: the bucket average. Counter: the cumulative count at bucket end summed across label sets. Histogram: the mean of the values observed in the bucket. Null where there is no data.",
      }),
    ),
  },
  { title: "SeriesPoint" },
);
export type SeriesPoint = typeof SeriesPoint.static;

export const MetricSeries = t.Object({ points: t.Array(t.Ref("SeriesPoint")), service: t.String() }, { title: "MetricSeries" });
export type MetricSeries = { points: SeriesPoint[]; service: string };

export const SeriesResponse = t.Object(
  {
    bucket_seconds: t.Integer(),
    kind: t.String({ description: "`gauge`, `counter` or `histogram`; `unknown` for a name no series has" }),
    name: t.String(),
    series: t.Array(t.Ref("MetricSeries")),
    source: t.String({ description: "`raw` (full-resolution samples) or `rollup` (5-minute aggregates)" }),
  },
  { title: "SeriesResponse" },
);
export type SeriesResponse = { bucket_seconds: number; kind: string; name: string; series: MetricSeries[]; source: "raw" | "rollup" };

export const SpanEntry = t.Object(
  {
    duration_ms: t.Number(),
    environment: t.String(),
    http_status: optStr(),
    kind: optStr("INTERNAL, SERVER, CLIENT, PRODUCER or CONSUMER"),
    method: optStr(),
    name: t.String(),
    parent_span_id: optStr(),
    project: t.String(),
    route: optStr(),
    service: t.String(),
    span_id: t.String(),
    status: optStr("UNSET, OK or ERROR"),
    timestamp: t.String({ description: "Start of the span" }),
    trace_id: t.String(),
  },
  { title: "SpanEntry" },
);
export type SpanEntry = typeof SpanEntry.static;

export const LogVolumeBucket = t.Object(
  {
    counts: t.Record(t.String(), t.Integer(), { description: "Lines per level family (trace, debug, info, warn, error, fatal, unspecified); absent = 0" }),
    t: t.String({ description: "Start of the bucket" }),
  },
  { title: "LogVolumeBucket" },
);

export const LogVolumeResponse = t.Object(
  { bucket_seconds: t.Integer(), buckets: t.Array(t.Ref("LogVolumeBucket")) },
  { title: "LogVolumeResponse", description: "Lines per time bucket and level: the console's histogram. Counted at ingest, so it ignores `q`." },
);
export type LogVolumeResponse = { bucket_seconds: number; buckets: Array<{ counts: Record<string, number>; t: string }> };

export const OtlpStatus = t.Object(
  { code: t.Integer({ description: "google.rpc.Code" }), details: t.Array(t.Unknown()), message: t.String() },
  { title: "OtlpStatus", description: "google.rpc.Status: the body of an OTLP failure (protobuf-encoded when the request was)" },
);

export const ExportResponse = t.Object(
  {
    partialSuccess: t.Optional(
      t.Object({
        errorMessage: t.Optional(t.String()),
        rejectedLogRecords: t.Optional(t.String()),
        rejectedSpans: t.Optional(t.String()),
        rejectedDataPoints: t.Optional(t.String()),
      }),
    ),
  },
  { title: "OtlpExportResponse", description: "Export*ServiceResponse: `{}`, or the count of records refused and why (protobuf-encoded when the request was)" },
);

const time = (what: string) => t.Optional(t.String({ description: `${what}: RFC 3339, or relative to now (15m, 24h, 7d)` }));
const project = t.Optional(t.String({ description: "A project slug (once); absent = every project where the caller holds obs.read" }));
const environment = t.Optional(t.String({ description: "Absent = every environment" }));

export const LogsQuery = t.Object({
  service: t.Optional(t.String()),
  level: t.Optional(t.String({ description: "Level families, comma-separated (trace, debug, info, warn, error, fatal, unspecified); a line matches when its severity is in one" })),
  q: t.Optional(t.String({ maxLength: 512, description: "Case-insensitive substring of the message or the target" })),
  from: time("Oldest line"),
  to: time("Newest line"),
  limit: t.Optional(IntParam({ minimum: 1, maximum: 1000, description: "1 to 1000, default 200" })),
  project,
  environment,
});

export const VolumeQuery = t.Object({ service: t.Optional(t.String()), level: LogsQuery.properties.level, from: time("Start"), to: time("End"), project, environment });
export const ScopeQuery = t.Object({ project, environment });
export const SeriesQuery = t.Object({ name: t.String({ minLength: 1 }), service: t.Optional(t.String()), from: time("Start (default 1h)"), to: time("End (default now)"), project, environment });
export const TracesQuery = t.Object({
  service: t.Optional(t.String()),
  q: t.Optional(t.String({ maxLength: 512, description: "Case-insensitive substring of the root span's name" })),
  status: t.Optional(t.String({ description: "Exact span status: UNSET, OK or ERROR" })),
  from: time("Oldest root span"),
  to: time("Newest root span"),
  limit: t.Optional(IntParam({ minimum: 1, maximum: 500, description: "1 to 500, default 50" })),
  project,
  environment,
});
// Any text: an id that is no trace id (too long, not hex) names no trace, so the answer is 404.
export const TraceParams = t.Object({ trace_id: t.String({ description: "32 lower-case hex digits; anything else names no trace (404)" }) });

export const observabilityModels = { LogEntry, MetricName, SeriesPoint, MetricSeries, SeriesResponse, SpanEntry, LogVolumeBucket, LogVolumeResponse, OtlpStatus, OtlpExportResponse: ExportResponse };
