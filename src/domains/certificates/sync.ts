/**
 * Which hosts need a certificate: each host of a domain with `tls` (default true), while the
 * ingress's HTTPS listener is configured (decision 0343: without it there is nothing to serve a
 * certificate on, and no order is made), and ops's own public host with OPS_TLS=acme. A domain
 * created or changed gets a row per new host, due now; hosts it no longer has lose theirs (and
 * their certificate stops being served); a write of a domain whose order is failing retries it
 * now, unless the ACME server said it is rate-limited. A `*.` host cannot be validated with HTTP-01: its row
 * says so and nothing is ordered. A host no domain may have on this server (ops's own public host,
 * localhost, an IP address: DESIGN §6, checked at every start) gets no row of the domain's, and
 * ops's own host takes over a domain's row for it.
 */
import { and, eq, isNotNull, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import { refusedHost, specOf, type ResourceRow } from "../resources/service";
import { certificates } from "./tables";
import { ownHost, rowOf, rowsOfResource, unserve } from "./store";
import { refreshUploaded } from "./uploaded";
import { kickOrders } from "./orders";

const RATE_LIMITED = /rate.?limit|too many/i;
const WILDCARD_REASON = "a *. host needs the DNS-01 challenge, which ops does not answer; use exact host names";

/** Whether domains get certificates on this server. */
export function certificatesActive(core: Core): boolean {
  return core.config.ingressTlsListen !== null;
}

/** Bring the rows of a domain in line with its spec (`row` null: the domain was deleted). */
export function syncDomain(core: Core, resourceId: string, row: ResourceRow | null): void {
  const spec = row ? specOf<{ hosts: string[]; tls?: boolean; tls_secret_group?: string }>(row) : null;
  const wanted = new Set(row && spec && spec.tls !== false && certificatesActive(core) ? spec.hosts.map((h) => h.toLowerCase()).filter((h) => refusedHost(core, h) === null) : []);
  const source = spec?.tls_secret_group ? ("uploaded" as const) : ("acme" as const);
  const now = core.clock.now();
  let due = false;
  const dropped: string[] = [];
  const uploaded: string[] = [];
  core.db.transaction((t) => {
    for (const cur of rowsOfResource(t, resourceId)) {
      if (wanted.has(cur.host)) continue;
      if (cur.sealedId) core.secrets.delete(t, cur.sealedId);
      t.delete(certificates).where(eq(certificates.host, cur.host)).run();
      dropped.push(cur.host);
    }
    for (const host of wanted) {
      const cur = t.select().from(certificates).where(eq(certificates.host, host)).get();
      const wildcard = host.startsWith("*.");
      if (source === "uploaded") {
        uploaded.push(host);
        if (!cur) t.insert(certificates).values({ host, resourceId, projectId: row!.projectId, source, state: "issuing", nextAttemptAt: null, updatedAt: now }).run();
        else if (cur.source !== source) t.update(certificates).set({ source, state: "issuing", reason: null, failures: 0, nextAttemptAt: null, updatedAt: now }).where(eq(certificates.host, host)).run();
        continue;
      }
      if (cur && cur.source === "uploaded") {
        // From an uploaded certificate back to ACME: the uploaded one is served until the order lands.
        t.update(certificates).set({ source, state: "issuing", reason: wildcard ? WILDCARD_REASON : null, failures: 0, nextAttemptAt: wildcard ? null : now, updatedAt: now }).where(eq(certificates.host, host)).run();
        if (!wildcard) due = true;
        continue;
      }
      if (cur) {
        // A write of the domain retries a failing order now, unless the ACME server said to wait.
        if (cur.state === "failing" && cur.nextAttemptAt !== null && !(cur.reason && RATE_LIMITED.test(cur.reason))) {
          t.update(certificates).set({ nextAttemptAt: now }).where(eq(certificates.host, host)).run();
          due = true;
        }
        continue;
      }
      t.insert(certificates)
        .values({ host, resourceId, projectId: row!.projectId, source, state: wildcard ? "failing" : "issuing", reason: wildcard ? WILDCARD_REASON : null, nextAttemptAt: wildcard ? null : now, updatedAt: now })
        .run();
      if (!wildcard) due = true;
    }
  });
  for (const host of dropped) unserve(core, host);
  for (const host of uploaded) {
    const cur = rowOf(core.db, host);
    if (cur) void refreshUploaded(core, cur).catch((e) => core.log.warn("an uploaded certificate could not be read", { host, err: (e as Error).message }));
  }
  if (due) kickOrders(core);
}

/**
 * Make sure ops's own host has a row when OPS_TLS=acme (due now when it has no certificate). A
 * domain's row for the host (written before OPS_PUBLIC_URL named it) is dropped first, with its
 * certificate: the host is ops's, and the domain's key may be its project's.
 */
export function syncOwnHost(core: Core): void {
  const host = ownHost(core);
  if (!host) return;
  const held = core.db.select().from(certificates).where(and(eq(certificates.host, host), isNotNull(certificates.resourceId))).get();
  if (held) {
    core.db.transaction((t) => {
      if (held.sealedId) core.secrets.delete(t, held.sealedId);
      t.delete(certificates).where(eq(certificates.host, host)).run();
    });
    unserve(core, host);
    core.log.warn("a domain's certificate for ops's own host was dropped", { host, setting: "OPS_PUBLIC_URL" });
  }
  const cur = core.db.select().from(certificates).where(and(eq(certificates.host, host), isNull(certificates.resourceId))).get();
  if (!cur) {
    const now = core.clock.now();
    core.db.insert(certificates).values({ host, resourceId: null, projectId: null, source: "acme", state: "issuing", nextAttemptAt: now, updatedAt: now }).onConflictDoNothing().run();
  }
  kickOrders(core);
}
