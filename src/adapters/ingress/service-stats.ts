/**
 * What the ingress saw of each service's requests (issue 36, request metrics with no change to
 * the app): requests by status class, a latency histogram (ms, explicit bounds), response bytes
 * and upstream errors by kind. Counters are cumulative since the ingress process started, like a
 * Prometheus counter: the control plane turns successive snapshots into deltas
 * (src/domains/deployments/ingress-metrics.ts) and a counter that went down means a restart. The
 * hot path is one Map lookup and a few increments per request.
 */
import type { ServiceRef } from "./table";

/** Upper bounds (ms) of the latency buckets; the last bucket is everything above. */
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

export type UpstreamErrorKind = "refused" | "timeout" | "reset" | "other";

export interface ServiceStat {
  service: ServiceRef;
  /** Requests answered, by status class: 1xx … 5xx (index 0 … 4). */
  classes: [number, number, number, number, number];
  /** Counts per latency bucket (LATENCY_BOUNDS_MS, then the overflow), their sum (ms) and count. */
  latency: { counts: number[]; sum: number; count: number };
  /** Response bytes received from replicas and relayed. */
  bytes: number;
  upstreamErrors: Record<UpstreamErrorKind, number>;
}

export interface ServiceStats {
  record(service: ServiceRef, status: number, ms: number, bytes: number): void;
  upstreamError(service: ServiceRef, reason: string): void;
  snapshot(): ServiceStat[];
}

const keyOf = (s: ServiceRef) => `${s.project}\u0000${s.environment}\u0000${s.service}`;

export function upstreamErrorKind(reason: string): UpstreamErrorKind {
  if (/refused|ECONNREFUSED/i.test(reason)) return "refused";
  if (/timed? ?out|ETIMEDOUT/i.test(reason)) return "timeout";
  if (/reset|ECONNRESET|closed|EPIPE/i.test(reason)) return "reset";
  return "other";
}

export function serviceStats(): ServiceStats {
  const stats = new Map<string, ServiceStat>();
  const of = (service: ServiceRef): ServiceStat => {
    const k = keyOf(service);
    let s = stats.get(k);
    if (!s) {
      s = { service: { ...service }, classes: [0, 0, 0, 0, 0], latency: { counts: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0), sum: 0, count: 0 }, bytes: 0, upstreamErrors: { refused: 0, timeout: 0, reset: 0, other: 0 } };
      stats.set(k, s);
    }
    return s;
  };
  return {
    record(service, status, ms, bytes) {
      const s = of(service);
      const cls = Math.floor(status / 100) - 1;
      if (cls >= 0 && cls < 5) s.classes[cls]!++;
      let b = 0;
      while (b < LATENCY_BOUNDS_MS.length && ms > LATENCY_BOUNDS_MS[b]!) b++;
      s.latency.counts[b]!++;
      s.latency.sum += ms;
      s.latency.count++;
      s.bytes += bytes;
    },
    upstreamError(service, reason) {
      of(service).upstreamErrors[upstreamErrorKind(reason)]++;
    },
    snapshot() {
      return [...stats.values()].map((s) => ({ service: { ...s.service }, classes: [...s.classes] as ServiceStat["classes"], latency: { counts: [...s.latency.counts], sum: s.latency.sum, count: s.latency.count }, bytes: s.bytes, upstreamErrors: { ...s.upstreamErrors } }));
    },
  };
}

/** Several processes' snapshots as one (the data plane's ingress workers). */
export function sumServiceStats(lists: ReadonlyArray<readonly ServiceStat[]>): ServiceStat[] {
  const out = new Map<string, ServiceStat>();
  for (const list of lists) {
    for (const s of list) {
      const k = keyOf(s.service);
      const o = out.get(k);
      if (!o) {
        out.set(k, { service: { ...s.service }, classes: [...s.classes] as ServiceStat["classes"], latency: { counts: [...s.latency.counts], sum: s.latency.sum, count: s.latency.count }, bytes: s.bytes, upstreamErrors: { ...s.upstreamErrors } });
        continue;
      }
      s.classes.forEach((v, i) => (o.classes[i] += v));
      s.latency.counts.forEach((v, i) => (o.latency.counts[i] = (o.latency.counts[i] ?? 0) + v));
      o.latency.sum += s.latency.sum;
      o.latency.count += s.latency.count;
      o.bytes += s.bytes;
      for (const kind of Object.keys(o.upstreamErrors) as UpstreamErrorKind[]) o.upstreamErrors[kind] += s.upstreamErrors[kind];
    }
  }
  return [...out.values()];
}
