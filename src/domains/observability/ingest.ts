/**
 * From decoded OTLP to the rows ops stores: service from the resource's `service.name`,
 * environment from `deployment.environment.name` (or the older `deployment.environment`; default
 * `production`), host from `host.name`; every text scrubbed (scrub.ts), then cut to its column's
 * length (`kept`: scrubbing first, so a cut never leaves half a secret unrecognised); times
 * checked. What cannot be stored is counted and named for the OTLP partial-success answer, never
 * silently dropped.
 */
import { keyable } from "./keys";
import { scrub } from "./scrub";
import { anyToText, attrString, type AnyValue, type Attributes, type LogsRequest, type MetricsRequest, type ResourceGroup, type TracesRequest } from "./otlp-model";
import { severityOfText, type LogRow, type MetricKind, type PointRow, type SpanRow, type WriteBatch } from "./rows";

/** A line's text is cut past this many characters (with a note saying how much was cut). */
export const MAX_MESSAGE_CHARS = 64 * 1024;
const MAX_NAME_CHARS = 1024;
/** Short fields (an HTTP method, status, client address). */
const MAX_FIELD_CHARS = 256;
const MAX_LABELS_CHARS = 4096;
/** A timestamp further ahead than this is a sender's clock running fast: the line keeps its receipt time. */
export const FUTURE_SLACK_MS = 5 * 60_000;

export interface IngestContext {
  /** The project's ops id. */
  projectId: string;
  now: number;
  /** Oldest time still kept (retention); older records are refused. */
  oldestMs: number;
  retentionDays: number;
  /** Whether the caller may send telemetry of this environment (environment policies). */
  mayIngest(environment: string): boolean;
  /**
   * Set for a replica's credential: its resources are stored as this service and environment,
   * whatever `service.name` and `deployment.environment.name` they carry (decision 0651).
   */
  identity?: { service: string; environment: string };
}

export interface IngestOutcome {
  batch: WriteBatch;
  accepted: number;
  rejected: number;
  /** Why records were refused, for the partial-success message. */
  message: string;
  /** Approximate text bytes, for the writer's memory bound. */
  bytes: number;
}

class Rejections {
  readonly reasons = new Map<string, number>();
  count = 0;
  add(reason: string, n = 1): void {
    this.count += n;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + n);
  }
  message(noun: string): string {
    return [...this.reasons].map(([reason, n]) => `${n} ${noun}${n === 1 ? "" : "s"} ${reason}`).join("; ");
  }
}

/** Longest secret shape a cut can split (a PEM block of a large RSA key, with room to spare). */
const SCRUB_MARGIN = 16 * 1024;

/**
 * `text` scrubbed and cut to `max` characters. Only `max` plus a margin is scrubbed (a secret that
 * straddles the cut is still whole there), so a 16 MiB line costs no more than a 64 KiB one.
 */
function kept(text: string, max: number): string {
  if (text.length <= max) return scrub(text);
  const scrubbed = scrub(text.slice(0, max + SCRUB_MARGIN));
  return scrubbed.length <= max ? scrubbed : `${scrubbed.slice(0, max)}… [${text.length - max} more characters not kept]`;
}

/** `kept` for optional values. */
function keptOpt(text: string | null, max: number): string | null {
  return text === null ? null : kept(text, max);
}

interface ResourceInfo {
  service: string;
  environment: string;
  host: string;
  allowed: boolean;
}

function resourceInfo(res: Attributes, ctx: IngestContext): ResourceInfo {
  if (ctx.identity) {
    const { service, environment } = ctx.identity;
    return { service, environment, host: kept(attrString(res, "host.name", "host.id") ?? "", 256), allowed: ctx.mayIngest(environment) };
  }
  const environment = kept((attrString(res, "deployment.environment.name", "deployment.environment") ?? "production").trim(), 64) || "production";
  return {
    service: kept(attrString(res, "service.name") ?? "unknown_service", 128),
    environment,
    host: kept(attrString(res, "host.name", "host.id") ?? "", 256),
    allowed: ctx.mayIngest(environment),
  };
}

/** The record's time, or a refusal reason. */
function timeOf(ms: number, fallback: number, ctx: IngestContext, rej: Rejections): number | null {
  let t = ms > 0 ? ms : fallback > 0 ? fallback : ctx.now;
  if (t > ctx.now + FUTURE_SLACK_MS) t = ctx.now;
  if (!keyable(t) || t < ctx.oldestMs) {
    rej.add(`older than the ${ctx.retentionDays}-day retention (not stored)`);
    return null;
  }
  return t;
}

function eachResource<T>(groups: Array<ResourceGroup<T>>, ctx: IngestContext, rej: Rejections, fn: (info: ResourceInfo, scope: string, item: T) => void): void {
  for (const g of groups) {
    const info = resourceInfo(g.resource, ctx);
    for (const s of g.scopes) {
      if (!info.allowed) {
        rej.add(`of environment "${info.environment}", where this credential may not send telemetry`, s.items.length);
        continue;
      }
      for (const item of s.items) fn(info, s.name, item);
    }
  }
}

/** Log records → log rows. */
export function logsToRows(req: LogsRequest, ctx: IngestContext): IngestOutcome {
  const rej = new Rejections();
  const logs: LogRow[] = [];
  let bytes = 0;
  eachResource(req, ctx, rej, (info, scope, rec) => {
    const ms = timeOf(rec.timeMs, rec.observedMs, ctx, rej);
    if (ms === null) return;
    let message = anyToText(rec.body);
    if (message === "") message = rec.eventName || (attrString(rec.attributes, "exception.message") ?? "");
    const target = attrString(rec.attributes, "log.target", "target", "code.namespace", "logger.name") ?? scope;
    const severity = Math.max(0, Math.min(24, rec.severityNumber || severityOfText(rec.severityText)));
    const row: LogRow = {
      ms,
      project: ctx.projectId,
      environment: info.environment,
      service: info.service,
      severity,
      level: rec.severityText ? kept(rec.severityText, 32) : null,
      host: info.host,
      target: kept(target, 512),
      message: kept(message, MAX_MESSAGE_CHARS),
      traceId: /^[0-9a-f]{32}$/.test(rec.traceId) ? rec.traceId : null,
      spanId: /^[0-9a-f]{16}$/.test(rec.spanId) ? rec.spanId : null,
      client: keptOpt(attrString(rec.attributes, "client.address", "http.client_ip", "net.peer.ip", "net.sock.peer.addr"), MAX_FIELD_CHARS),
      method: keptOpt(attrString(rec.attributes, "http.request.method", "http.method"), MAX_FIELD_CHARS),
      route: keptOpt(attrString(rec.attributes, "http.route", "url.path", "http.target"), MAX_NAME_CHARS),
      status: keptOpt(attrString(rec.attributes, "http.response.status_code", "http.status_code"), MAX_FIELD_CHARS),
    };
    bytes += row.message.length + row.target.length + 64;
    logs.push(row);
  });
  return { batch: { logs, spans: [], points: [] }, accepted: logs.length, rejected: rej.count, message: rej.message("log record"), bytes };
}

const SPAN_KINDS = [null, "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"] as const;
const STATUS = ["UNSET", "OK", "ERROR"] as const;

/** Spans → span rows. */
export function spansToRows(req: TracesRequest, ctx: IngestContext): IngestOutcome {
  const rej = new Rejections();
  const spans: SpanRow[] = [];
  let bytes = 0;
  eachResource(req, ctx, rej, (info, _scope, s) => {
    if (!/^[0-9a-f]{32}$/.test(s.traceId) || /^0+$/.test(s.traceId) || !/^[0-9a-f]{16}$/.test(s.spanId)) {
      rej.add("without a valid trace or span id");
      return;
    }
    const ms = timeOf(s.startMs, 0, ctx, rej);
    if (ms === null) return;
    const row: SpanRow = {
      ms,
      project: ctx.projectId,
      environment: info.environment,
      service: info.service,
      traceId: s.traceId,
      spanId: s.spanId,
      parentSpanId: /^[0-9a-f]{16}$/.test(s.parentSpanId) && !/^0+$/.test(s.parentSpanId) ? s.parentSpanId : null,
      name: kept(s.name, MAX_NAME_CHARS),
      kind: SPAN_KINDS[s.kind] ?? null,
      status: STATUS[s.statusCode] ?? "UNSET",
      durationMs: s.endMs > s.startMs ? Math.round((s.endMs - s.startMs) * 1000) / 1000 : 0,
      method: keptOpt(attrString(s.attributes, "http.request.method", "http.method"), MAX_FIELD_CHARS),
      route: keptOpt(attrString(s.attributes, "http.route", "url.path", "http.target"), MAX_NAME_CHARS),
      httpStatus: keptOpt(attrString(s.attributes, "http.response.status_code", "http.status_code"), MAX_FIELD_CHARS),
    };
    bytes += row.name.length + 200;
    spans.push(row);
  });
  return { batch: { logs: [], spans, points: [] }, accepted: spans.length, rejected: rej.count, message: rej.message("span"), bytes };
}

function scrubValue(v: AnyValue): AnyValue {
  if (typeof v === "string") return scrub(v);
  if (Array.isArray(v)) return v.map(scrubValue);
  if (v && typeof v === "object") {
    const out: { [k: string]: AnyValue } = {};
    for (const k of Object.keys(v).sort()) out[scrub(k)] = scrubValue(v[k]);
    return out;
  }
  return v;
}

/** A label set as canonical JSON: keys sorted, strings scrubbed. */
function labels(attrs: Attributes): string {
  const out: Record<string, AnyValue> = {};
  for (const k of [...attrs.keys()].sort()) out[scrub(k)] = scrubValue(attrs.get(k) as AnyValue);
  return JSON.stringify(out);
}

const finiteOrNull = (v: number | null) => (v === null || Number.isFinite(v) ? v : null);

/** Metric data points → point rows. Gauges and non-monotonic sums are levels, monotonic sums counters. */
export function metricsToRows(req: MetricsRequest, ctx: IngestContext): IngestOutcome {
  const rej = new Rejections();
  const points: PointRow[] = [];
  eachResource(req, ctx, rej, (info, _scope, m) => {
    if (m.type === "none") return;
    const name = scrub(m.name.trim());
    if (name === "" || name.length > 255) {
      rej.add("of a metric without a usable name", m.points.length);
      return;
    }
    const unit = kept(m.unit, 64);
    const kind: MetricKind = m.type === "gauge" ? "gauge" : m.type === "sum" ? (m.monotonic ? "counter" : "gauge") : "histogram";
    const delta = m.temporality === 1 && m.type !== "gauge";
    for (const p of m.points) {
      if (p.noValue) continue;
      const ms = timeOf(p.timeMs, 0, ctx, rej);
      if (ms === null) continue;
      const histogram = kind === "histogram";
      if (!histogram && (p.value === null || !Number.isFinite(p.value))) {
        rej.add("without a finite value");
        continue;
      }
      if (histogram && (p.count === null || !Number.isFinite(p.count))) {
        rej.add("without a count");
        continue;
      }
      const attrs = labels(p.attributes);
      if (attrs.length > MAX_LABELS_CHARS) {
        rej.add(`with a label set over ${MAX_LABELS_CHARS} characters`);
        continue;
      }
      const buckets = histogram && p.bucketCounts.length > 0 && p.bucketCounts.length === p.explicitBounds.length + 1 ? JSON.stringify({ bounds: p.explicitBounds, counts: p.bucketCounts }) : null;
      points.push({
        ms,
        project: ctx.projectId,
        environment: info.environment,
        service: info.service,
        name,
        kind,
        unit,
        attrs,
        delta,
        value: histogram ? null : p.value,
        count: histogram ? p.count : null,
        sum: histogram ? finiteOrNull(p.sum) : null,
        min: histogram ? finiteOrNull(p.min) : null,
        max: histogram ? finiteOrNull(p.max) : null,
        buckets,
      });
    }
  });
  return { batch: { logs: [], spans: [], points }, accepted: points.length, rejected: rej.count, message: rej.message("data point"), bytes: points.length * 200 };
}
