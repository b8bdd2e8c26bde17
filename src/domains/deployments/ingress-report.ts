/**
 * The ingress's counters as the admin route reports them (decision 0247): the ingress counts in
 * its process (adapters/ingress, `metrics()`); this is where an operator reads them. Beside them,
 * the processes that serve the estate (decision 0600), for the console's estate status.
 */
import type { Core } from "../../core/core";
import { ingressOf } from "../../adapters/ingress";
import { servingParts } from "../../dataplane/status";
import type { IngressReport, ProcessesReport } from "./model";

/** The control plane, the data plane and its ingress: pid, start, uptime and what each does. */
export function processesReport(core: Core): ProcessesReport {
  const now = Date.now();
  const { mode, parts } = servingParts(core);
  return {
    mode,
    processes: parts.map((p) => ({
      part: p.part,
      pid: p.pid,
      started_at: p.startedAt === null ? null : new Date(p.startedAt).toISOString(),
      uptime_s: p.startedAt === null ? null : Math.max(0, Math.round((now - p.startedAt) / 1000)),
      detail: p.detail,
    })),
  };
}

/** What the ingress counted since ops started, and where it listens. */
export function ingressReport(core: Core): IngressReport {
  const ingress = ingressOf(core);
  const m = ingress.metrics();
  return {
    listen: ingress.address?.url ?? null,
    tls_listen: ingress.tlsAddress?.url ?? null,
    connections_open: m.connections,
    connections_accepted: m.accepted,
    refused_per_address: m.refusedPerAddress,
    refused_total: m.refusedTotal,
    requests: m.requests,
    bad_requests: m.badRequests,
    head_timeouts: m.headTimeouts,
    idle_timeouts: m.idleTimeouts,
    body_timeouts: m.bodyTimeouts,
    credentials_stripped: m.credentialsStripped,
    upstream_failures: m.upstreamFailures,
  };
}
