/**
 * The ingress's counters as the admin route reports them (decision 0247): the ingress counts in
 * process (adapters/ingress, `metrics()`); this is where an operator reads them.
 */
import type { Core } from "../../core/core";
import { ingressOf } from "../../adapters/ingress";
import type { IngressReport } from "./model";

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
