/**
 * OTLP-JSON (`application/json`) into the same records as the protobuf decoder. The JSON mapping
 * has its own rules (docs reference otlp.md §2): lowerCamelCase keys only (others ignored), ids as
 * hex strings, enums as integers, 64-bit integers as decimal strings or numbers, doubles possibly
 * "NaN"/"Infinity", bytes as base64.
 */
import {
  MAX_ANY_DEPTH,
  OtlpDecodeError,
  type AnyValue,
  type Attributes,
  type DataPointIn,
  type LogRecordIn,
  type LogsRequest,
  type MetricIn,
  type MetricsRequest,
  type MetricType,
  type ResourceGroup,
  type SpanIn,
  type TracesRequest,
} from "./otlp-model";

type Json = unknown;
type Obj = Record<string, Json>;

function isObj(v: Json): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function arr(v: Json, what: string): Json[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new OtlpDecodeError(`${what} must be an array`);
  return v;
}

function obj(v: Json, what: string): Obj {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw new OtlpDecodeError(`${what} must be an object`);
  return v;
}

/** A 64-bit integer sent as a decimal string or a number. */
function int(v: Json, what: string): number {
  if (v === undefined || v === null || v === "") return 0;
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string" && /^-?\d+$/.test(v)) return Number(v);
  throw new OtlpDecodeError(`${what} must be an integer`);
}

/** Nanoseconds (string or number) as fractional milliseconds. */
function nanosAsMs(v: Json, what: string): number {
  if (v === undefined || v === null || v === "" || v === 0) return 0;
  if (typeof v === "string" && /^\d+$/.test(v)) {
    // Above 2^53 a number loses the last digits: keep microseconds (as the protobuf decoder does).
    return v.length > 3 ? Number(v.slice(0, -3)) / 1e3 : 0;
  }
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return Math.floor(v / 1e3) / 1e3;
  throw new OtlpDecodeError(`${what} must be nanoseconds as a decimal string`);
}

function double(v: Json, what: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "number") return v;
  if (v === "NaN") return Number.NaN;
  if (v === "Infinity") return Number.POSITIVE_INFINITY;
  if (v === "-Infinity") return Number.NEGATIVE_INFINITY;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  throw new OtlpDecodeError(`${what} must be a number`);
}

function str(v: Json, what: string): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new OtlpDecodeError(`${what} must be a string`);
  return v;
}

function hexId(v: Json, what: string): string {
  const s = str(v, what).toLowerCase();
  if (s !== "" && !/^[0-9a-f]+$/.test(s)) throw new OtlpDecodeError(`${what} must be hex`);
  return s;
}

function anyValue(v: Json, depth: number): AnyValue {
  if (depth > MAX_ANY_DEPTH) throw new OtlpDecodeError("attribute values nested too deeply");
  if (!isObj(v)) return null;
  if ("stringValue" in v) return str(v.stringValue, "stringValue");
  if ("boolValue" in v) return v.boolValue === true;
  if ("intValue" in v) return int(v.intValue, "intValue");
  if ("doubleValue" in v) return double(v.doubleValue, "doubleValue");
  if ("bytesValue" in v) return str(v.bytesValue, "bytesValue");
  if ("arrayValue" in v) return arr(obj(v.arrayValue, "arrayValue").values, "arrayValue.values").map((x) => anyValue(x, depth + 1));
  if ("kvlistValue" in v) {
    const out: { [k: string]: AnyValue } = Object.create(null);
    for (const kv of arr(obj(v.kvlistValue, "kvlistValue").values, "kvlistValue.values")) {
      const o = obj(kv, "KeyValue");
      out[str(o.key, "key")] = anyValue(o.value, depth + 1);
    }
    return out;
  }
  return null;
}

function attributes(v: Json): Attributes {
  const attrs: Attributes = new Map();
  for (const kv of arr(v, "attributes")) {
    const o = obj(kv, "KeyValue");
    attrs.set(str(o.key, "key"), anyValue(o.value, 0));
  }
  return attrs;
}

function groups<T>(body: Json, groupKey: string, scopeKey: string, itemKey: string, item: (o: Obj) => T): Array<ResourceGroup<T>> {
  if (!isObj(body)) throw new OtlpDecodeError("the request body must be a JSON object");
  return arr(body[groupKey], groupKey).map((g) => {
    const go = obj(g, groupKey);
    return {
      resource: attributes(obj(go.resource, "resource").attributes),
      scopes: arr(go[scopeKey], scopeKey).map((s) => {
        const so = obj(s, scopeKey);
        return { name: str(obj(so.scope, "scope").name, "scope.name"), items: arr(so[itemKey], itemKey).map((i) => item(obj(i, itemKey))) };
      }),
    };
  });
}

function logRecord(o: Obj): LogRecordIn {
  return {
    timeMs: nanosAsMs(o.timeUnixNano, "timeUnixNano"),
    observedMs: nanosAsMs(o.observedTimeUnixNano, "observedTimeUnixNano"),
    severityNumber: int(o.severityNumber, "severityNumber"),
    severityText: str(o.severityText, "severityText"),
    body: anyValue(o.body, 0),
    attributes: attributes(o.attributes),
    traceId: hexId(o.traceId, "traceId"),
    spanId: hexId(o.spanId, "spanId"),
    eventName: str(o.eventName, "eventName"),
  };
}

function span(o: Obj): SpanIn {
  const status = obj(o.status, "status");
  return {
    traceId: hexId(o.traceId, "traceId"),
    spanId: hexId(o.spanId, "spanId"),
    parentSpanId: hexId(o.parentSpanId, "parentSpanId"),
    name: str(o.name, "name"),
    kind: int(o.kind, "kind"),
    startMs: nanosAsMs(o.startTimeUnixNano, "startTimeUnixNano"),
    endMs: nanosAsMs(o.endTimeUnixNano, "endTimeUnixNano"),
    attributes: attributes(o.attributes),
    statusCode: int(status.code, "status.code"),
    statusMessage: str(status.message, "status.message"),
  };
}

function point(o: Obj, type: MetricType): DataPointIn {
  const histogramLike = type === "histogram" || type === "exponential_histogram" || type === "summary";
  return {
    attributes: attributes(o.attributes),
    timeMs: nanosAsMs(o.timeUnixNano, "timeUnixNano"),
    value: histogramLike ? null : "asDouble" in o ? double(o.asDouble, "asDouble") : "asInt" in o ? int(o.asInt, "asInt") : null,
    count: histogramLike ? int(o.count, "count") : null,
    sum: histogramLike ? double(o.sum, "sum") : null,
    min: type === "summary" ? null : double(o.min, "min"),
    max: type === "summary" ? null : double(o.max, "max"),
    bucketCounts: type === "histogram" ? arr(o.bucketCounts, "bucketCounts").map((c) => int(c, "bucketCounts")) : [],
    explicitBounds: type === "histogram" ? arr(o.explicitBounds, "explicitBounds").map((b) => double(b, "explicitBounds") ?? 0) : [],
    noValue: (int(o.flags, "flags") & 1) === 1,
  };
}

const METRIC_KEYS: Array<[string, MetricType]> = [
  ["gauge", "gauge"],
  ["sum", "sum"],
  ["histogram", "histogram"],
  ["exponentialHistogram", "exponential_histogram"],
  ["summary", "summary"],
];

function metric(o: Obj): MetricIn {
  const m: MetricIn = { name: str(o.name, "name"), unit: str(o.unit, "unit"), type: "none", temporality: 0, monotonic: false, points: [] };
  for (const [key, type] of METRIC_KEYS) {
    if (!(key in o)) continue;
    const data = obj(o[key], key);
    m.type = type;
    m.temporality = int(data.aggregationTemporality, "aggregationTemporality");
    m.monotonic = data.isMonotonic === true;
    m.points = arr(data.dataPoints, "dataPoints").map((p) => point(obj(p, "dataPoint"), type));
    break;
  }
  return m;
}

/** Parse and normalise an OTLP-JSON logs request body. */
export function decodeLogsJson(body: Json): LogsRequest {
  return groups(body, "resourceLogs", "scopeLogs", "logRecords", logRecord);
}

/** Parse and normalise an OTLP-JSON traces request body. */
export function decodeTracesJson(body: Json): TracesRequest {
  return groups(body, "resourceSpans", "scopeSpans", "spans", span);
}

/** Parse and normalise an OTLP-JSON metrics request body. */
export function decodeMetricsJson(body: Json): MetricsRequest {
  return groups(body, "resourceMetrics", "scopeMetrics", "metrics", metric);
}
