/**
 * Observability routes: the six reads of the spec under `/api/v1/obs` (plus the log volume the
 * console's histogram draws), `obs.read` evaluated "anywhere" and narrowed per project by the
 * service (visibility.ts), except one trace by id: any signed-in caller, narrowed alike, so that
 * a trace it may read none of is the spec's 404 (decision 0536); and the OTLP/HTTP ingest at `/otlp/v1/{logs,traces,metrics}`
 * (`obs.ingest` in the project the data goes to: the token's pin, else the project it names; a
 * replica's own credential is answered before the macro, replica-intake.ts, decision 0651).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin, requestMeta, type ResolveContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { writeAudit } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { errors, ErrorBody } from "../../core/http-schemas";
import { observabilityModels, LogsQuery, ScopeQuery, SeriesQuery, TraceParams, TracesQuery, VolumeQuery } from "./model";
import { assertSingleProject, readLogs, readLogVolume, readMetricNames, readSeries, readServices, readTrace, readTraces } from "./reads";
import { handleExport } from "./otlp";
import { replicaIntake } from "./replica-intake";
import type { Signal } from "./otlp-model";

const limitOf = (n: number | undefined) => (n === undefined ? undefined : Math.floor(n));

export function readRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/obs", tags: ["observability"] })
    .use(authzPlugin(core))
    .model({ ...observabilityModels, ErrorBody })
    .get(
      "/logs",
      ({ query, auth, request }) => {
        assertSingleProject(request.url);
        return readLogs(core, auth.principal, { ...query, limit: limitOf(query.limit) });
      },
      {
        permission: "obs.read",
        query: LogsQuery,
        detail: { summary: "Search logs: newest first, case-insensitive substring `q` on message and target, filters" },
        response: { 200: t.Array(t.Ref("LogEntry")), ...errors(401, 403, 422) },
      },
    )
    .get(
      "/logs/volume",
      ({ query, auth, request }) => {
        assertSingleProject(request.url);
        return readLogVolume(core, auth.principal, query);
      },
      {
        permission: "obs.read",
        query: VolumeQuery,
        detail: { summary: "Lines per time bucket and level (default: the last hour), for a histogram" },
        response: { 200: t.Ref("LogVolumeResponse"), ...errors(401, 403, 422) },
      },
    )
    .get(
      "/metrics/names",
      ({ query, auth, request }) => {
        assertSingleProject(request.url);
        return readMetricNames(core, auth.principal, query);
      },
      {
        permission: "obs.read",
        query: ScopeQuery,
        detail: { summary: "Metric names (with their kind) seen in the last 24 h" },
        response: { 200: t.Array(t.Ref("MetricName")), ...errors(401, 403, 422) },
      },
    )
    .get(
      "/metrics/series",
      ({ query, auth, request }) => {
        assertSingleProject(request.url);
        return readSeries(core, auth.principal, query);
      },
      {
        permission: "obs.read",
        query: SeriesQuery,
        detail: { summary: "A metric's series per service, bucketed on the server (raw samples for recent windows up to a day, 5-minute rollups otherwise)" },
        response: { 200: t.Ref("SeriesResponse"), ...errors(401, 403, 422) },
      },
    )
    .get(
      "/services",
      ({ query, auth, request }) => {
        assertSingleProject(request.url);
        return readServices(core, auth.principal, query);
      },
      {
        permission: "obs.read",
        query: ScopeQuery,
        detail: { summary: "Services that sent telemetry in the last 24 h" },
        response: { 200: t.Array(t.String()), ...errors(401, 403, 422) },
      },
    )
    .get(
      "/traces",
      ({ query, auth, request }) => {
        assertSingleProject(request.url);
        return readTraces(core, auth.principal, { ...query, limit: limitOf(query.limit) });
      },
      {
        permission: "obs.read",
        query: TracesQuery,
        detail: { summary: "Root spans, one per trace, newest first" },
        response: { 200: t.Array(t.Ref("SpanEntry")), ...errors(401, 403, 422) },
      },
    )
    .get(
      "/traces/:trace_id",
      ({ params, query, auth, request }) => {
        assertSingleProject(request.url);
        return readTrace(core, auth.principal, params.trace_id, query);
      },
      {
        // Any caller: what it may read (obs.read, per project and environment) narrows the answer,
        // so a trace it may read none of is a 404 like an unknown one, never a 403 (decision 0536).
        permission: "authenticated",
        params: TraceParams,
        query: ScopeQuery,
        detail: { summary: "Every span of a trace in start order; 404 when none of it is in a project you may read (obs.read)" },
        response: { 200: t.Array(t.Ref("SpanEntry")), ...errors(401, 403, 404, 422) },
      },
    );
}

/**
 * The project an export goes to: a pinned token's own project, else the one the request names
 * (`X-Ops-Project` header or `?project=`). A pinned token naming another project is refused by
 * the macro (pinned elsewhere); an unpinned caller naming none is refused here, audited.
 */
function ingestProject(core: Core) {
  return (ctx: ResolveContext): string => {
    const header = ctx.headers["x-ops-project"];
    const named = (typeof header === "string" && header.trim() !== "" ? header.trim() : undefined) ?? (typeof ctx.query.project === "string" && ctx.query.project !== "" ? ctx.query.project : undefined);
    const pin = ctx.principal.tokenProjectSlug;
    if (named !== undefined) return named;
    if (pin) return pin;
    writeAudit(core, core.db, { ...actorOf(ctx.principal, requestMeta(ctx.request, null)), action: "obs.ingest", target: new URL(ctx.request.url).pathname, outcome: "denied", reason: "no project named and the token is not pinned to one" });
    throw new OpsError("forbidden", "Name the project to send to (header X-Ops-Project or ?project=), or use a token pinned to it.", { permission: "obs.ingest" });
  };
}

/** A parse hook that leaves the body unread: the handler reads it under the OTLP limits. */
const RAW = Symbol("otlp body");
const rawParse = () => RAW;

const ExportHeaders = t.Object({
  "x-ops-project": t.Optional(t.String({ description: "The project to send to, when the token is not pinned to one" })),
});

export function otlpRoutes(core: Core) {
  const options = (signal: Signal, summary: string) => ({
    permission: { key: "obs.ingest" as const, environment: "none" as const, project: ingestProject(core) },
    parse: rawParse,
    // A replica's own credential (OTEL_EXPORTER_OTLP_HEADERS) is answered here, before the macro (decision 0651).
    transform: replicaIntake(core, signal),
    headers: ExportHeaders,
    query: t.Object({ project: t.Optional(t.String()) }),
    detail: {
      summary,
      description:
        "OTLP/HTTP: `application/x-protobuf` or `application/json`, optionally `Content-Encoding: gzip`; the answer comes in the request's encoding. Environment policies apply per resource (`deployment.environment.name`): records of an environment the caller may not send to are refused in the partial success. A replica's own credential (the bearer ops puts in its `OTEL_EXPORTER_OTLP_HEADERS`) is accepted here and nowhere else: its records are stored as its project, environment and service.",
    },
    response: {
      200: t.Ref("OtlpExportResponse"),
      400: t.Ref("OtlpStatus"),
      401: t.Ref("OtlpStatus"),
      403: t.Ref("OtlpStatus"),
      404: t.Ref("OtlpStatus"),
      413: t.Ref("OtlpStatus"),
      415: t.Ref("OtlpStatus"),
      429: t.Ref("OtlpStatus"),
      503: t.Ref("OtlpStatus"),
    },
  });
  return new Elysia({ prefix: "/otlp", tags: ["observability"] })
    .use(authzPlugin(core))
    .model(observabilityModels)
    .post("/v1/logs", ({ request, auth }) => handleExport(core, "logs", request, auth), options("logs", "OTLP logs export"))
    .post("/v1/traces", ({ request, auth }) => handleExport(core, "traces", request, auth), options("traces", "OTLP traces export"))
    .post("/v1/metrics", ({ request, auth }) => handleExport(core, "metrics", request, auth), options("metrics", "OTLP metrics export"));
}
