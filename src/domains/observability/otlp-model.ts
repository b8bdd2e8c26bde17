/**
 * What an OTLP export request decodes to, whichever encoding it came in (otlp-proto.ts for
 * `application/x-protobuf`, otlp-json.ts for `application/json`): only the fields ops stores, with
 * times in epoch milliseconds, ids as lowercase hex and attributes as maps.
 */

/** An attribute value (OTLP `AnyValue`). Bytes become base64 text. */
export type AnyValue = string | number | boolean | null | AnyValue[] | { [key: string]: AnyValue };
export type Attributes = Map<string, AnyValue>;
/** How deep attribute values may nest (an array or kvlist inside another counts one); deeper is refused whole. */
export const MAX_ANY_DEPTH = 32;

export interface ResourceGroup<T> {
  resource: Attributes;
  scopes: Array<{ name: string; items: T[] }>;
}

export interface LogRecordIn {
  /** 0 when absent. */
  timeMs: number;
  observedMs: number;
  severityNumber: number;
  severityText: string;
  body: AnyValue;
  attributes: Attributes;
  traceId: string;
  spanId: string;
  eventName: string;
}

export interface SpanIn {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP Span.kind (0 unspecified … 5 consumer). */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  /** OTLP Status.code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
}

export type MetricType = "gauge" | "sum" | "histogram" | "exponential_histogram" | "summary" | "none";

export interface DataPointIn {
  attributes: Attributes;
  timeMs: number;
  /** Gauge and sum points. */
  value: number | null;
  /** Histogram-like points. */
  count: number | null;
  sum: number | null;
  min: number | null;
  max: number | null;
  bucketCounts: number[];
  explicitBounds: number[];
  /** `flags & 1`: no recorded value. */
  noValue: boolean;
}

export interface MetricIn {
  name: string;
  unit: string;
  type: MetricType;
  /** 1 delta, 2 cumulative (0 unspecified). */
  temporality: number;
  monotonic: boolean;
  points: DataPointIn[];
}

export type LogsRequest = Array<ResourceGroup<LogRecordIn>>;
export type TracesRequest = Array<ResourceGroup<SpanIn>>;
export type MetricsRequest = Array<ResourceGroup<MetricIn>>;

export type Signal = "logs" | "traces" | "metrics";

/** Undecodable input: the request is refused with 400 and nothing is stored. */
export class OtlpDecodeError extends Error {
  override name = "OtlpDecodeError";
}

/** First string among `keys` in `attrs`, or null. */
export function attrString(attrs: Attributes, ...keys: string[]): string | null {
  for (const k of keys) {
    const v = attrs.get(k);
    if (v === undefined || v === null) continue;
    if (typeof v === "string") {
      if (v !== "") return v;
      continue;
    }
    if (typeof v === "number" || typeof v === "boolean") return String(v);
  }
  return null;
}

/** An `AnyValue` as display text: strings as they are, everything else as JSON. */
export function anyToText(v: AnyValue): string {
  if (v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

/** An attribute map as a plain object (for storing label sets canonically: keys sorted). */
export function attrsToObject(attrs: Attributes): Record<string, AnyValue> {
  const out: Record<string, AnyValue> = {};
  for (const k of [...attrs.keys()].sort()) out[k] = attrs.get(k) as AnyValue;
  return out;
}
