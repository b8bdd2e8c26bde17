/**
 * The ingress of a Core: one per server, created on first use so the deployments domain can set
 * routes whether or not the listener runs (`OPS_INGRESS_LISTEN=off`). `ops serve` starts and
 * drains the listener (src/serve.ts).
 */
import type { Core } from "../../core/core";
import type { Config } from "../../core/config";
import type { Logger } from "../../core/log";
import { createIngress, type Ingress, type IngressOptions } from "./ingress";

export { createIngress, type Ingress, type IngressAddress, type IngressMetrics, type IngressOptions } from "./ingress";
export { defaultHost, normaliseHost, serviceKey, type ServiceEntry, type ServiceRef, type ServiceRoute, type Upstream, type RouteConflict } from "./table";

/** Where a Core keeps its ingress (`ops serve` puts the data plane's there before the domains install, decision 0600). */
export const INGRESS_LOCAL = "ingress";

/** The ingress's options from ops's configuration, the same in one process or in the data plane's. */
export function ingressOptions(config: Config, log: Logger): IngressOptions {
  const limits = config.ingressLimits;
  return {
    log,
    headerTimeoutMs: limits.headerTimeoutSecs * 1000,
    idleTimeoutMs: limits.idleTimeoutSecs * 1000,
    bodyTimeoutMs: limits.bodyTimeoutSecs * 1000,
    sendTimeoutMs: limits.sendTimeoutSecs * 1000,
    maxConnPerIp: limits.maxConnPerIp,
    maxConnections: limits.maxConnections,
    trustedProxies: config.trustedProxies,
  };
}

/** The Core's ingress (its route table, and its listener once `ops serve` started it). */
export function ingressOf(core: Core): Ingress {
  let ingress = core.locals.get(INGRESS_LOCAL) as Ingress | undefined;
  if (!ingress) {
    ingress = createIngress(ingressOptions(core.config, core.log.child({ component: "ingress" })));
    core.locals.set(INGRESS_LOCAL, ingress);
  }
  return ingress;
}

/**
 * Start the ingress listener on `core.config.ingressListen` (null: off). A port that cannot be
 * bound is logged as an error and ops serves on without it: the API, the console and the registry
 * stay up, and the error says which setting to change.
 */
export function startIngress(core: Core): Ingress | null {
  const listen = core.config.ingressListen;
  if (!listen) {
    core.log.info("the ingress is off (OPS_INGRESS_LISTEN=off)");
    return null;
  }
  const ingress = ingressOf(core);
  try {
    const addr = ingress.listen(listen.host, listen.port);
    core.log.info("the ingress is serving", { listen: addr.url });
    return ingress;
  } catch (e) {
    core.log.error("the ingress could not listen; services are not reachable through it", { listen: `${listen.host}:${listen.port}`, err: (e as Error).message, setting: "OPS_INGRESS_LISTEN" });
    return null;
  }
}

/**
 * Start the ingress's HTTPS listener on `core.config.ingressTlsListen` (null: off). Like the plain
 * listener, a port that cannot be bound is logged as an error and ops serves on without it.
 */
export async function startIngressTls(core: Core): Promise<Ingress | null> {
  const listen = core.config.ingressTlsListen;
  if (!listen) return null;
  const ingress = ingressOf(core);
  try {
    const addr = await ingress.listenTls(listen.host, listen.port);
    core.log.info("the ingress is serving HTTPS", { listen: addr.url, certificates: ingress.certificates.names().length });
    return ingress;
  } catch (e) {
    core.log.error("the ingress could not listen for HTTPS; services are not reachable over it", { listen: `${listen.host}:${listen.port}`, err: (e as Error).message, setting: "OPS_INGRESS_TLS_LISTEN" });
    return null;
  }
}
export { LATENCY_BOUNDS_MS, type ServiceStat } from "./service-stats";
