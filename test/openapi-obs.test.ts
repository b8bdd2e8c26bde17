/**
 * Every observability route is in OpenAPI with the spec's schema names and every status code it
 * can answer (each exercised by a test in src/domains/observability/).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, type TestApp } from "./harness";

let t: TestApp;
type Op = { responses: Record<string, { content?: Record<string, { schema: unknown }> }>; parameters?: Array<{ name: string; in: string }>; "x-permission"?: string };
let doc: { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, unknown> } };
beforeAll(async () => {
  t = await createTestApp();
  doc = (await (await fetch(`${t.url}/api/docs/json`)).json()) as typeof doc;
});
afterAll(() => t.close());

const READS: Array<[path: string, statuses: number[], ok: string, params: string[], permission?: string]> = [
  ["/api/v1/obs/logs", [200, 401, 403, 422], "LogEntry", ["service", "level", "q", "from", "to", "limit", "project", "environment"]],
  ["/api/v1/obs/logs/volume", [200, 401, 403, 422], "LogVolumeResponse", ["service", "level", "from", "to", "project", "environment"]],
  ["/api/v1/obs/metrics/names", [200, 401, 403, 422], "MetricName", ["project", "environment"]],
  ["/api/v1/obs/metrics/series", [200, 401, 403, 422], "SeriesResponse", ["name", "service", "from", "to", "project", "environment"]],
  ["/api/v1/obs/services", [200, 401, 403, 422], "", ["project", "environment"]],
  ["/api/v1/obs/traces", [200, 401, 403, 422], "SpanEntry", ["service", "q", "status", "from", "to", "limit", "project", "environment"]],
  // Any signed-in caller, narrowed to what it may read: a trace it may read none of is a 404 (decision 0536).
  ["/api/v1/obs/traces/{trace_id}", [200, 401, 403, 404, 422], "SpanEntry", ["trace_id", "project", "environment"], "authenticated"],
];

describe("OpenAPI for observability", () => {
  for (const [p, statuses, ok, params, permission = "obs.read"] of READS) {
    test(`GET ${p}: ${statuses.join(", ")}`, () => {
      const op = doc.paths[p]?.get;
      expect(op).toBeDefined();
      expect(op["x-permission"]).toBe(permission);
      expect(Object.keys(op.responses).sort()).toEqual(statuses.map(String).sort());
      if (ok) expect(JSON.stringify(op.responses["200"].content?.["application/json"]?.schema)).toContain(`#/components/schemas/${ok}`);
      expect((op.parameters ?? []).map((x) => x.name).sort()).toEqual([...params].sort());
      for (const s of statuses.filter((s) => s >= 400)) expect(JSON.stringify(op.responses[String(s)].content)).toContain("snake_case error code");
    });
  }

  for (const signal of ["logs", "traces", "metrics"]) {
    test(`POST /otlp/v1/${signal}: 200, 400, 401, 403, 404, 413, 415, 429, 503`, () => {
      const op = doc.paths[`/otlp/v1/${signal}`]?.post;
      expect(op).toBeDefined();
      expect(op["x-permission"]).toBe("obs.ingest");
      expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "403", "404", "413", "415", "429", "503"]);
      expect(JSON.stringify(op.responses["200"].content)).toContain("#/components/schemas/OtlpExportResponse");
      for (const s of ["400", "401", "403", "404", "413", "415", "429", "503"]) expect(JSON.stringify(op.responses[s].content)).toContain("#/components/schemas/OtlpStatus");
    });
  }

  test("the spec's schema names are registered", () => {
    for (const name of ["LogEntry", "MetricName", "SeriesResponse", "MetricSeries", "SeriesPoint", "SpanEntry", "LogVolumeResponse", "LogVolumeBucket", "OtlpStatus", "OtlpExportResponse"]) {
      expect(Object.keys(doc.components.schemas)).toContain(name);
    }
  });
});
