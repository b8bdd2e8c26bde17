/**
 * Request metrics from the ingress, per service and environment, with no change to the app
 * (issue 36). Every `INTERVAL_MS` the ingress's per-service counters (cumulative since each
 * ingress process started: adapters/ingress/service-stats.ts, summed over the data plane's
 * processes) are turned into what changed since the last read and written to the telemetry store
 * as the service's own metric series:
 * - `ops.ingress.requests` (counter): requests answered; `ops.ingress.responses.1xx` … `.5xx`
 *   (counters): those of each status class (a name each, so a 5xx rate is one series to chart or
 *   alert on);
 * - `ops.ingress.request.duration` (histogram, ms): from the head's arrival to the answer's end;
 * - `ops.ingress.request.duration.p50`, `.p95`, `.p99` (gauges, ms): this interval's quantiles,
 *   read off the histogram's buckets (linear within a bucket), written when it had requests;
 * - `ops.ingress.response.bytes` (counter): bytes relayed from the replicas;
 * - `ops.ingress.upstream.errors` (counter, `kind` refused, timeout, reset, other);
 * - `ops.ingress.requests.inflight` (gauge): requests in flight to its replicas now;
 * - `ops.ingress.connections.open` (gauge): client connections being served by it now (a request
 *   in flight or a WebSocket tunnel; an idle kept-alive connection belongs to no service).
 * A counter lower than at the last read means an ingress process started again: what it counted
 * since is the increase. Metrics reads, the service page and alert rules read these as any series.
 */
import type { Core } from "../../core/core";
import { ingressOf, LATENCY_BOUNDS_MS, type ServiceStat } from "../../adapters/ingress";
import { appendPlatformPoints, type PlatformPoint } from "../observability/service";

export const INTERVAL_MS = 10_000;
const LAST = "deployments.ingress-metrics.last";
const CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;

const keyOf = (s: ServiceStat) => `${s.service.project}\u0000${s.service.environment}\u0000${s.service.service}`;

/** `now - before`, or `now` when a counter went down (a process restarted). */
function increase(now: ServiceStat, before: ServiceStat | undefined): ServiceStat {
  const counters = (s: ServiceStat) => [...s.classes, ...s.latency.counts, s.latency.count, s.bytes, ...Object.values(s.upstreamErrors)];
  if (!before) return now;
  const was = counters(before);
  if (counters(now).some((v, i) => v < (was[i] ?? 0))) return now;
  return {
    service: now.service,
    classes: now.classes.map((v, i) => v - before.classes[i]!) as ServiceStat["classes"],
    latency: { counts: now.latency.counts.map((v, i) => v - (before.latency.counts[i] ?? 0)), sum: now.latency.sum - before.latency.sum, count: now.latency.count - before.latency.count },
    bytes: now.bytes - before.bytes,
    upstreamErrors: { refused: now.upstreamErrors.refused - before.upstreamErrors.refused, timeout: now.upstreamErrors.timeout - before.upstreamErrors.timeout, reset: now.upstreamErrors.reset - before.upstreamErrors.reset, other: now.upstreamErrors.other - before.upstreamErrors.other },
  };
}

/** The `q` quantile (0…1) of a histogram's buckets, interpolated within its bucket; the overflow bucket reads as its lower bound. */
export function quantileOf(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((n, c) => n + c, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i]!;
    if (c > 0 && seen + c >= rank) {
      const lo = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const hi = LATENCY_BOUNDS_MS[i] ?? lo;
      return lo + ((hi - lo) * (rank - seen)) / c;
    }
    seen += c;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

/** Read the ingress once and write what changed; returns how many points were written. */
export async function recordIngressMetrics(core: Core, now = core.clock.now()): Promise<number> {
  const ingress = ingressOf(core);
  const stats = ingress.serviceStats();
  const last = (core.locals.get(LAST) as Map<string, ServiceStat> | undefined) ?? new Map<string, ServiceStat>();
  const points: PlatformPoint[] = [];
  const inflight = new Map<string, number>();
  const tunnels = new Map<string, number>();
  for (const e of ingress.table()) {
    const k = `${e.service.project}\u0000${e.service.environment}\u0000${e.service.service}`;
    inflight.set(k, e.upstreams.reduce((n, u) => n + ingress.inflight(u), 0));
    tunnels.set(k, e.upstreams.reduce((n, u) => n + ingress.websockets(u), 0));
  }
  const next = new Map<string, ServiceStat>();
  for (const s of stats) {
    next.set(keyOf(s), s);
    const project = core.access.findProject(s.service.project);
    if (!project) continue;
    const d = increase(s, last.get(keyOf(s)));
    const at = { project: project.id, environment: s.service.environment, service: s.service.service, timestamp: now };
    const counter = (name: string, unit: string, value: number, attrs: Record<string, string> = {}) => points.push({ ...at, name, kind: "counter", unit, attrs, value });
    // A counter seen once keeps a point every interval, so a rate reads 0 rather than nothing.
    counter("ops.ingress.requests", "1", d.classes.reduce((n, v) => n + v, 0));
    d.classes.forEach((v, i) => {
      if (v > 0 || s.classes[i]! > 0) counter(`ops.ingress.responses.${CLASSES[i]!}`, "1", v);
    });
    if (s.latency.count > 0) {
      points.push({ ...at, name: "ops.ingress.request.duration", kind: "histogram", unit: "ms", attrs: {}, value: null, count: d.latency.count, sum: d.latency.sum, buckets: { bounds: LATENCY_BOUNDS_MS, counts: d.latency.counts } });
      counter("ops.ingress.response.bytes", "By", d.bytes);
    }
    if (d.latency.count > 0) {
      for (const [name, q] of [["p50", 0.5], ["p95", 0.95], ["p99", 0.99]] as const) {
        points.push({ ...at, name: `ops.ingress.request.duration.${name}`, kind: "gauge", unit: "ms", attrs: {}, value: quantileOf(d.latency.counts, q) });
      }
    }
    for (const [kind, v] of Object.entries(d.upstreamErrors)) if (v > 0 || s.upstreamErrors[kind as keyof ServiceStat["upstreamErrors"]] > 0) counter("ops.ingress.upstream.errors", "1", v, { kind });
    points.push({ ...at, name: "ops.ingress.requests.inflight", kind: "gauge", unit: "1", attrs: {}, value: inflight.get(keyOf(s)) ?? 0 });
    points.push({ ...at, name: "ops.ingress.connections.open", kind: "gauge", unit: "1", attrs: {}, value: (inflight.get(keyOf(s)) ?? 0) + (tunnels.get(keyOf(s)) ?? 0) });
  }
  core.locals.set(LAST, next);
  if (points.length > 0) await appendPlatformPoints(core, points);
  return points.length;
}

/** Under `ops serve`: read the ingress every INTERVAL_MS until the Core closes. */
export function startIngressMetrics(core: Core): void {
  const timer = setInterval(() => {
    recordIngressMetrics(core).catch((e) => core.log.warn("the ingress's request metrics were not written", { err: (e as Error).message }));
  }, INTERVAL_MS);
  (timer as { unref?: () => void }).unref?.();
  core.onClose.push(() => clearInterval(timer));
}
