/**
 * Authorization matrix rows of the observability domain (issue 12): the reads under
 * `/api/v1/obs` (obs.read, evaluated "anywhere" and narrowed per project by the service; one trace
 * by id open to any signed-in caller and narrowed alike) and the
 * OTLP ingest (obs.ingest in the project the data goes to, named by `X-Ops-Project` here).
 *
 * The setup writes one log line, one span and one metric point into the matrix project and one log
 * line into the other project, through the telemetry writer; the log rows then check that no
 * caller sees the other project's line unless it may read that project (the estate owner, and the
 * token pinned to the other project).
 */
import { registerMatrixDomain, guarded, holds, type World, type MatrixRow, type Column } from "./authz-matrix";
import { writerOf } from "../src/domains/observability/writer";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

async function telemetryFixtures(w: World): Promise<void> {
  if (w.vars.obsFixtures) return;
  const now = w.t.core.clock.now();
  const base = { environment: "production", service: "matrix-api", severity: 9, level: null, host: "", traceId: null, spanId: null, client: null, method: null, route: null, status: null };
  await writerOf(w.t.core).submit(
    {
      logs: [
        { ...base, ms: now - 1000, project: w.project.id, target: "matrix", message: "matrix-own-line" },
        { ...base, ms: now - 1000, project: w.other.id, target: "matrix", message: "matrix-other-secret-line" },
      ],
      spans: [
        { ms: now - 2000, project: w.project.id, environment: "production", service: "matrix-api", traceId: TRACE, spanId: "00f067aa0ba902b7", parentSpanId: null, name: "GET /matrix", kind: "SERVER", status: "OK", durationMs: 12.5, method: "GET", route: "/matrix", httpStatus: "200" },
      ],
      points: [
        { ms: now - 3000, project: w.project.id, environment: "production", service: "matrix-api", name: "matrix.requests", kind: "counter", unit: "1", attrs: "{}", delta: false, value: 7, count: null, sum: null, min: null, max: null, buckets: null },
      ],
    },
    1000,
  );
  w.vars.obsFixtures = "yes";
}

/** Columns that may read the other project (and so see its line). */
const SEES_OTHER: Column[] = ["owner", "pinnedElsewhere"];

function logsVisibility(_w: World, c: Column, body: string): string | null {
  const entries = JSON.parse(body) as Array<{ message: string }>;
  const own = entries.some((e) => e.message === "matrix-own-line");
  const other = entries.some((e) => e.message === "matrix-other-secret-line");
  if (other && !SEES_OTHER.includes(c)) return "sees another project's log line";
  if (!own && c !== "pinnedElsewhere") return "does not see its own project's log line";
  if (own && c === "pinnedElsewhere") return "a token pinned to the other project sees this project's line";
  return null;
}

const O = "/api/v1/obs";
const otlp = () => (w: World) => ({ body: "{}", headers: { "content-type": "application/json", "x-ops-project": w.project.slug } });

const ROWS: MatrixRow[] = [
  guarded("GET /api/v1/obs/logs", "obs.read", "anywhere", { setup: telemetryFixtures, path: () => `${O}/logs`, status: 200, verify: logsVisibility }),
  guarded("GET /api/v1/obs/logs/volume", "obs.read", "anywhere", { setup: telemetryFixtures, path: () => `${O}/logs/volume`, status: 200 }),
  guarded("GET /api/v1/obs/metrics/names", "obs.read", "anywhere", { setup: telemetryFixtures, path: () => `${O}/metrics/names`, status: 200 }),
  guarded("GET /api/v1/obs/metrics/series", "obs.read", "anywhere", { setup: telemetryFixtures, path: () => `${O}/metrics/series?name=matrix.requests`, status: 200 }),
  guarded("GET /api/v1/obs/services", "obs.read", "anywhere", { setup: telemetryFixtures, path: () => `${O}/services`, status: 200 }),
  guarded("GET /api/v1/obs/traces", "obs.read", "anywhere", { setup: telemetryFixtures, path: () => `${O}/traces`, status: 200 }),
  // Any signed-in caller (decision 0536): who may read the trace's environment gets it; everyone else the 404 of an unknown trace.
  guarded("GET /api/v1/obs/traces/:trace_id", "authenticated", "anywhere", {
    setup: telemetryFixtures,
    path: () => `${O}/traces/${TRACE}`,
    verify: (_w, c, body) => (holds(c, "obs.read", "production") ? (body.includes(TRACE) ? null : "does not see the trace") : body.includes("not_found") ? null : "sees a trace it may not read"),
  }),
  guarded("POST /otlp/v1/logs", "obs.ingest", "project", { path: () => "/otlp/v1/logs", raw: otlp(), status: 200 }),
  guarded("POST /otlp/v1/traces", "obs.ingest", "project", { path: () => "/otlp/v1/traces", raw: otlp(), status: 200 }),
  guarded("POST /otlp/v1/metrics", "obs.ingest", "project", { path: () => "/otlp/v1/metrics", raw: otlp(), status: 200 }),
];

registerMatrixDomain({ tags: ["observability"], rows: ROWS });
