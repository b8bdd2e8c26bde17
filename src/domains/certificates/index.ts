/**
 * The certificates domain: ACME certificates for domains' hosts and ops's own host, served by the
 * ingress's HTTPS listener by SNI (and by ops's own listener with OPS_TLS=acme). Domain writes
 * start orders (a write of an unchanged spec retries a failing one now: the console's "retry
 * now"), `certificates.orders` retries and renews, and the domain's status shows each host's
 * certificate.
 */
import type { Core, DomainModule } from "../../core/core";
import { ingressOf } from "../../adapters/ingress";
import { extendKind, listOfTypeEverywhere, resourceById, specOf, type ResourceRow } from "../resources/service";
import { ORDERS_TASK, orderState, runDueOrders } from "./orders";
import { certificateSummary, certificateView, loadCertificates, rowsOfResource } from "./store";
import { certificatesActive, syncDomain, syncOwnHost } from "./sync";
import { refreshAllUploaded } from "./uploaded";

/** What a domain's status says of its certificates (null: none asked for or served here). */
function domainCertificates(core: Core, row: ResourceRow): { state: string; summary: string; detail: Record<string, unknown> } | null {
  const rows = rowsOfResource(core.db, row.id);
  if (rows.length === 0) {
    // HTTPS asked for, but this server has no TLS listener to serve it on (decision 0343).
    if (specOf<{ tls?: boolean }>(row).tls !== false && !certificatesActive(core)) return { state: "off", summary: "not served: OPS_INGRESS_TLS_LISTEN is off", detail: { state: "off", hosts: [] } };
    return null;
  }
  const s = certificateSummary(rows);
  return { state: s.state, summary: s.summary, detail: { state: s.state, hosts: rows.map(certificateView) } };
}

export const certificatesModule: DomainModule = {
  name: "certificates",
  install(core) {
    const pending = orderState(core).pending;
    const ingress = ingressOf(core);
    ingress.setChallenges((token) => pending.get(token) ?? null);
    // The data plane's ingress answers from a copy it is handed at every change (decision 0600).
    if (ingress.challengesChanged) pending.onChange = (tokens) => ingress.challengesChanged!(tokens);
    core.scheduler.defineTask(ORDERS_TASK, "* * * * *", async () => {
      await loadCertificates(core, true);
      await runDueOrders(core);
      await refreshAllUploaded(core);
    });
    extendKind(core, "domain", {
      afterWrite(c, _t, row) {
        // After the write commits (the transaction is synchronous; a microtask runs after it).
        queueMicrotask(() => syncDomain(c, row.id, resourceById(c.db, row.id)));
      },
      onDelete(c, _t, row) {
        queueMicrotask(() => syncDomain(c, row.id, null));
      },
    });
    core.locals.set("resources.domain-certificates", (c: Core, row: ResourceRow) => domainCertificates(c, row));
  },
  async onServe(core) {
    const loaded = await loadCertificates(core);
    if (loaded > 0) core.log.info("certificates loaded", { certificates: loaded });
    if (certificatesActive(core)) for (const d of listOfTypeEverywhere(core.db, "domain")) syncDomain(core, d.id, d);
    syncOwnHost(core);
    if (core.config.tls === "acme" && core.config.ingressListen === null) core.log.warn("OPS_TLS=acme needs the ingress's plain listener on port 80 for the ACME challenge; OPS_INGRESS_LISTEN is off", { setting: "OPS_INGRESS_LISTEN" });
  },
};
