/**
 * Uploaded certificates (decision 0346): a domain whose `tls_secret_group` names a secret group
 * serves that group's `TLS_CERT` (PEM, leaf first, then its chain) and `TLS_KEY` for every host
 * instead of ordering one. The pair is checked (it loads, and the certificate names each host),
 * sealed in the host's row like an ACME one, and read again each minute by `certificates.orders`
 * so a rotated value is served without touching the domain. A group without a usable pair makes
 * the host `failing` with the reason.
 */
import { X509Certificate } from "node:crypto";
import tls from "node:tls";
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { findResource, resourceById, secretValues, specOf, observeRow, type ResourceRow } from "../resources/service";
import { certificates } from "./tables";
import { serveCertificate, unseal, type CertificateRow } from "./store";
import type { PemPair } from "../../adapters/ingress/tls";

/** The group's pair for `host`, or why it cannot be served. */
export function groupPair(core: Core, domain: ResourceRow, group: string, host: string): { pair: PemPair; notBefore: number; notAfter: number } | { reason: string } {
  const g = findResource(core.db, { project: { id: domain.projectId } as never, environment: domain.environment }, "secret-group", group);
  if (!g) return { reason: `no secret-group "${group}" in ${domain.environment}` };
  const { env } = secretValues(core).groupEnv(core, core.db, g.id);
  const cert = env.TLS_CERT;
  const key = env.TLS_KEY;
  if (!cert || !key) return { reason: `secret-group "${group}" has no TLS_CERT and TLS_KEY` };
  try {
    tls.createSecureContext({ cert, key });
    const x = new X509Certificate(cert);
    if (!x.checkHost(host)) return { reason: `the certificate in "${group}" does not name ${host}` };
    return { pair: { cert, key }, notBefore: Date.parse(x.validFrom), notAfter: Date.parse(x.validTo) };
  } catch (e) {
    return { reason: `TLS_CERT and TLS_KEY of "${group}" do not load: ${(e as Error).message}` };
  }
}

/** Bring an uploaded row in line with its group; serves the pair when it changed. */
export async function refreshUploaded(core: Core, row: CertificateRow): Promise<boolean> {
  const domain = row.resourceId ? resourceById(core.db, row.resourceId) : null;
  const group = domain ? specOf<{ tls_secret_group?: string }>(domain).tls_secret_group : undefined;
  if (!domain || !group) return false;
  const got = groupPair(core, domain, group, row.host);
  const now = core.clock.now();
  if ("reason" in got) {
    if (row.state === "failing" && row.reason === got.reason) return false;
    core.db.update(certificates).set({ state: "failing", reason: got.reason, updatedAt: now }).where(eq(certificates.host, row.host)).run();
  } else {
    const cur = row.sealedId ? unseal(core, row) : null;
    if (row.state === "valid" && cur && cur.cert === got.pair.cert && cur.key === got.pair.key) return false;
    core.db.transaction((t) => {
      let sealedId = row.sealedId;
      const text = JSON.stringify(got.pair);
      if (sealedId) core.secrets.replace(t, sealedId, text);
      else sealedId = core.secrets.put(t, `certificate:${row.host}`, text);
      t.update(certificates).set({ state: "valid", reason: null, sealedId, notBefore: got.notBefore, notAfter: got.notAfter, failures: 0, updatedAt: now }).where(eq(certificates.host, row.host)).run();
    });
    await serveCertificate(core, row, got.pair);
  }
  await observeRow(core, domain).catch(() => undefined);
  return true;
}

/** Every uploaded row, read again (each minute). */
export async function refreshAllUploaded(core: Core): Promise<void> {
  for (const row of core.db.select().from(certificates).where(eq(certificates.source, "uploaded")).all()) {
    try {
      await refreshUploaded(core, row);
    } catch (e) {
      core.log.warn("an uploaded certificate could not be read", { host: row.host, err: (e as Error).message });
    }
  }
}
