/**
 * The ingress of a Core: one per server, created on first use so the deployments domain can set
 * routes whether or not the listener runs (`OPS_INGRESS_LISTEN=off`). `ops serve` starts and
 * drains the listener (src/serve.ts).
 */
import type { Core } from "../../core/core";
import { createIngress, type Ingress } from "./ingress";

export { createIngress, type Ingress, type IngressAddress, type IngressMetrics, type IngressOptions } from "./ingress";
export { defaultHost, normaliseHost, serviceKey, type ServiceEntry, type ServiceRef, type ServiceRoute, type Upstream, type RouteConflict } from "./table";

const KEY = "ingress";

/** The Core's ingress (its route table, and its listener once `ops serve` started it). */
export function ingressOf(core: Core): Ingress {
  let ingress = core.locals.get(KEY) as Ingress | undefined;
  if (!ingress) {
    const limits = core.config.ingressLimits;
    ingress = createIngress({
      log: core.log.child({ component: "ingress" }),
      headerTimeoutMs: limits.headerTimeoutSecs * 1000,
      idleTimeoutMs: limits.idleTimeoutSecs * 1000,
      bodyTimeoutMs: limits.bodyTimeoutSecs * 1000,
      sendTimeoutMs: limits.sendTimeoutSecs * 1000,
      maxConnPerIp: limits.maxConnPerIp,
      maxConnections: limits.maxConnections,
      trustedProxies: core.config.trustedProxies,
    });
    core.locals.set(KEY, ingress);
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
