/**
 * The certificate rows and what the TLS listeners serve: a row's sealed `{cert, key}` is loaded
 * into the ingress's certificate store (and ops's own listener, for its host) whenever it changes
 * and once at start. Reads for the status of a domain.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { iso } from "../../core/clock";
import { ingressOf } from "../../adapters/ingress";
import type { PemPair } from "../../adapters/ingress/tls";
import { certificates } from "./tables";

export type CertificateRow = typeof certificates.$inferSelect;

const OWN_LISTENER = "certificates.own-listener";

/** What ops's own listener does with its certificate (set by serve when OPS_TLS=acme). */
export type OwnCertificateSink = (pair: PemPair) => void | Promise<void>;

export function setOwnCertificateSink(core: Core, sink: OwnCertificateSink | null): void {
  core.locals.set(OWN_LISTENER, sink);
}

/** The host of OPS_PUBLIC_URL when ops's own listener serves HTTPS (OPS_TLS=acme), else null. */
export function ownHost(core: Core): string | null {
  return core.config.tls === "acme" ? new URL(core.config.publicUrl).hostname.toLowerCase() : null;
}

export function rowsOfResource(q: Queryable, resourceId: string): CertificateRow[] {
  return q.select().from(certificates).where(eq(certificates.resourceId, resourceId)).all();
}

export function rowOf(q: Queryable, host: string): CertificateRow | null {
  return q.select().from(certificates).where(eq(certificates.host, host)).get() ?? null;
}

/**
 * Serve the row's `pair` for its host from the next handshake on. Only ops's own row (no domain)
 * reaches ops's own listener: a domain's row for the same host (claimed before OPS_PUBLIC_URL
 * moved there) may hold a key its project uploaded.
 */
export async function serveCertificate(core: Core, row: Pick<CertificateRow, "host" | "resourceId">, pair: PemPair): Promise<void> {
  ingressOf(core).certificates.set(row.host, pair);
  if (row.resourceId === null && row.host === ownHost(core)) await (core.locals.get(OWN_LISTENER) as OwnCertificateSink | null | undefined)?.(pair);
}

export function unserve(core: Core, host: string): void {
  ingressOf(core).certificates.delete(host);
}

export function unseal(core: Core, row: CertificateRow): PemPair | null {
  if (!row.sealedId) return null;
  return JSON.parse(core.secrets.get(core.db, row.sealedId)) as PemPair;
}

/**
 * Load every stored certificate into the listeners (at start; `missing`: only those the ingress
 * does not serve yet, each minute, so certificates sealed at start are served once unsealed).
 * While the secrets store is sealed they are logged and skipped.
 */
export async function loadCertificates(core: Core, missing = false): Promise<number> {
  let n = 0;
  const served = ingressOf(core).certificates;
  for (const row of core.db.select().from(certificates).all()) {
    if (missing && (row.sealedId === null || served.pem(row.host) !== null)) continue;
    try {
      const pair = unseal(core, row);
      if (!pair) continue;
      await serveCertificate(core, row, pair);
      n++;
    } catch (e) {
      core.log.warn("a stored certificate could not be loaded", { host: row.host, err: (e as Error).message });
    }
  }
  return n;
}

/** One host's certificate as the domain's status shows it. */
export function certificateView(row: CertificateRow): Record<string, unknown> {
  return {
    host: row.host,
    source: row.source,
    state: row.state,
    not_after: row.notAfter === null ? null : iso(row.notAfter),
    reason: row.reason,
    next_attempt_at: row.nextAttemptAt === null ? null : iso(row.nextAttemptAt),
  };
}

/** The status line of a set of hosts' certificates: `issuing`, `valid until …`, or `failing: reason`. */
export function certificateSummary(rows: readonly CertificateRow[]): { state: "issuing" | "valid" | "failing"; summary: string } {
  const failing = rows.find((r) => r.state === "failing");
  if (failing) return { state: "failing", summary: `failing: ${failing.host}: ${failing.reason ?? "unknown"}` };
  if (rows.some((r) => r.state === "issuing")) return { state: "issuing", summary: "issuing" };
  const until = Math.min(...rows.map((r) => r.notAfter ?? 0));
  return { state: "valid", summary: `valid until ${iso(until)}` };
}
