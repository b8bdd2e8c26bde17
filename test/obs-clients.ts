/**
 * The real OpenTelemetry JS SDK and OTLP exporters, for the observability tests: telemetry is
 * produced by the SDK (LoggerProvider, BasicTracerProvider, MeterProvider), then sent by the
 * official exporters (`@opentelemetry/exporter-*-otlp-proto` for protobuf, `-otlp-http` for JSON)
 * exactly as an application would, and the exporter's own verdict (`ExportResult`) is returned.
 */
import { context, trace, SpanKind, SpanStatusCode, type Span } from "@opentelemetry/api";
import { SeverityNumber } from "@opentelemetry/api-logs";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LoggerProvider, InMemoryLogRecordExporter, SimpleLogRecordProcessor, BatchLogRecordProcessor, type ReadableLogRecord } from "@opentelemetry/sdk-logs";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { MeterProvider, MetricReader, AggregationTemporality, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { OTLPLogExporter as LogsProto } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPLogExporter as LogsJson } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPTraceExporter as TracesProto } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as TracesJson } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPMetricExporter as MetricsProto } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPMetricExporter as MetricsJson } from "@opentelemetry/exporter-metrics-otlp-http";

export type Encoding = "proto" | "json";
export { SeverityNumber, SpanKind, SpanStatusCode };

export interface SendOptions {
  encoding: Encoding;
  token: string;
  gzip?: boolean;
  headers?: Record<string, string>;
}

/** What the exporter concluded: code 0 = success; on failure its error (with the HTTP status as `code`). */
export interface ExportOutcome {
  ok: boolean;
  status: number | null;
  message: string;
}

function config(url: string, o: SendOptions) {
  return { url, headers: { Authorization: `Bearer ${o.token}`, ...o.headers }, compression: o.gzip ? ("gzip" as never) : ("none" as never), timeoutMillis: 20_000 };
}

function outcome(result: { code: number; error?: Error }): ExportOutcome {
  const err = result.error as (Error & { code?: number; data?: string }) | undefined;
  return { ok: result.code === 0, status: typeof err?.code === "number" ? err.code : null, message: err ? `${err.message} ${err.data ?? ""}` : "" };
}

export interface LogSpec {
  body: string;
  severityNumber?: SeverityNumber;
  severityText?: string;
  attributes?: Record<string, string | number | boolean>;
  /** Epoch ms. */
  timestamp?: number;
}

/** Log records as the SDK makes them (resource + one logger scope). */
export function makeLogs(resource: Record<string, string>, logs: LogSpec[], scope = "test-app"): ReadableLogRecord[] {
  const memory = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({ resource: resourceFromAttributes(resource), processors: [new SimpleLogRecordProcessor({ exporter: memory })] });
  const logger = provider.getLogger(scope);
  for (const l of logs) {
    logger.emit({ body: l.body, severityNumber: l.severityNumber, severityText: l.severityText, attributes: l.attributes, timestamp: l.timestamp === undefined ? undefined : new Date(l.timestamp) });
  }
  return memory.getFinishedLogRecords();
}

/** Send log records with the real exporter of `encoding` to `base`/otlp/v1/logs. */
export async function exportLogs(base: string, records: ReadableLogRecord[], o: SendOptions): Promise<ExportOutcome> {
  const exporter = o.encoding === "proto" ? new LogsProto(config(`${base}/otlp/v1/logs`, o)) : new LogsJson(config(`${base}/otlp/v1/logs`, o));
  try {
    return outcome(await new Promise((resolve) => exporter.export(records, resolve)));
  } finally {
    await exporter.shutdown();
  }
}

/** The usual application setup: a LoggerProvider with a BatchLogRecordProcessor on the exporter; flushed and shut down. */
export async function logThroughProvider(base: string, resource: Record<string, string>, logs: LogSpec[], o: SendOptions): Promise<void> {
  const exporter = o.encoding === "proto" ? new LogsProto(config(`${base}/otlp/v1/logs`, o)) : new LogsJson(config(`${base}/otlp/v1/logs`, o));
  const provider = new LoggerProvider({ resource: resourceFromAttributes(resource), processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: 60_000 })] });
  const logger = provider.getLogger("provider-app");
  for (const l of logs) logger.emit({ body: l.body, severityNumber: l.severityNumber, severityText: l.severityText, attributes: l.attributes });
  await provider.forceFlush();
  await provider.shutdown();
}

export interface TraceSpec {
  /** Root span name. */
  name: string;
  attributes?: Record<string, string | number>;
  error?: string;
  /** Child span names (each a CLIENT span under the root). */
  children?: string[];
}

/** Spans as the SDK makes them: a SERVER root per spec and its children. Returns the spans and the trace ids. */
export function makeSpans(resource: Record<string, string>, specs: TraceSpec[]): { spans: ReadableSpan[]; traceIds: string[] } {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes(resource), spanProcessors: [new SimpleSpanProcessor(memory)] });
  const tracer = provider.getTracer("test-app");
  const traceIds: string[] = [];
  for (const spec of specs) {
    const root: Span = tracer.startSpan(spec.name, { kind: SpanKind.SERVER, attributes: spec.attributes });
    traceIds.push(root.spanContext().traceId);
    const ctx = trace.setSpan(context.active(), root);
    for (const child of spec.children ?? []) {
      const c = tracer.startSpan(child, { kind: SpanKind.CLIENT }, ctx);
      c.end();
    }
    if (spec.error) root.setStatus({ code: SpanStatusCode.ERROR, message: spec.error });
    root.end();
  }
  return { spans: memory.getFinishedSpans(), traceIds };
}

export async function exportSpans(base: string, spans: ReadableSpan[], o: SendOptions): Promise<ExportOutcome> {
  const exporter = o.encoding === "proto" ? new TracesProto(config(`${base}/otlp/v1/traces`, o)) : new TracesJson(config(`${base}/otlp/v1/traces`, o));
  try {
    return outcome(await new Promise((resolve) => exporter.export(spans, resolve)));
  } finally {
    await exporter.shutdown();
  }
}

/** A reader the test collects from by hand (the periodic reader's timer has no place in a test). */
class CollectingReader extends MetricReader {
  constructor(temporality: AggregationTemporality) {
    super({ aggregationTemporalitySelector: () => temporality });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface Instruments {
  provider: MeterProvider;
  /** Collect what the instruments recorded so far. */
  collect(): Promise<ResourceMetrics>;
}

/** A MeterProvider for `resource` whose metrics `collect()` returns (cumulative unless told otherwise). */
export function meters(resource: Record<string, string>, temporality = AggregationTemporality.CUMULATIVE): Instruments {
  const reader = new CollectingReader(temporality);
  const provider = new MeterProvider({ resource: resourceFromAttributes(resource), readers: [reader] });
  return {
    provider,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw errors[0];
      return resourceMetrics;
    },
  };
}

export async function exportMetrics(base: string, metrics: ResourceMetrics, o: SendOptions): Promise<ExportOutcome> {
  const exporter = o.encoding === "proto" ? new MetricsProto(config(`${base}/otlp/v1/metrics`, o)) : new MetricsJson(config(`${base}/otlp/v1/metrics`, o));
  try {
    return outcome(await new Promise((resolve) => exporter.export(metrics, resolve)));
  } finally {
    await exporter.shutdown();
  }
}

export { AggregationTemporality };
