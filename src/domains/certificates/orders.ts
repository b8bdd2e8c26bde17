/**
 * Ordering certificates: every ACME row whose `next_attempt_at` has come is ordered, one at a time
 * (`certificates.orders`, each minute, and right after a domain asks for one). A new certificate is
 * sealed, served from the next handshake and due again at two thirds of its lifetime. A failure
 * keeps the certificate served until then (if any), records the ACME server's reason, and waits
 * the next step of the backoff (decision 0343) — at least an hour when the server says it is
 * rate-limited. The first failure of a run raises `certificate.failing` for the project.
 */
import { and, eq, isNotNull, lte } from "drizzle-orm";
import { coreLocal, type Core } from "../../core/core";
import { iso } from "../../core/clock";
import { accountKey, AcmeOrderError, orderCertificate } from "../../adapters/acme/client";
import { notify } from "../notifications/service";
import { observeRow, resourceById } from "../resources/service";
import { certificates } from "./tables";
import { serveCertificate, type CertificateRow } from "./store";

export const ORDERS_TASK = "certificates.orders";

// Decision 0343: the waits after the 1st, 2nd … failure in a row (then the last, again and again).
export const BACKOFF_MS = [60_000, 10 * 60_000, 30 * 60_000, 60 * 60_000, 3 * 3600_000, 6 * 3600_000, 12 * 3600_000, 24 * 3600_000];
const RATE_LIMIT_WAIT_MS = 3600_000;

/**
 * HTTP-01 token → key authorization, answered by the ingress's plain listener. An ingress in the
 * data plane's process answers from a copy (decision 0600): every change is handed to `onChange`,
 * and `synced()` resolves once the last one arrived there.
 */
export class Challenges extends Map<string, string> {
  onChange: ((tokens: Array<[string, string]>) => Promise<void> | void) | null = null;
  private last: Promise<void> = Promise.resolve();
  override set(token: string, auth: string): this {
    super.set(token, auth);
    this.changed();
    return this;
  }
  override delete(token: string): boolean {
    const had = super.delete(token);
    if (had) this.changed();
    return had;
  }
  private changed(): void {
    if (this.onChange) this.last = Promise.resolve(this.onChange([...this])).catch(() => undefined);
  }
  synced(): Promise<void> {
    return this.last;
  }
}

interface OrderState {
  /** HTTP-01 token → key authorization, answered by the ingress's plain listener. */
  pending: Challenges;
  running: Promise<number> | null;
  again: boolean;
}

export function orderState(core: Core): OrderState {
  return coreLocal<OrderState>(core, "certificates.orders", () => ({ pending: new Challenges(), running: null, again: false }));
}

/** Order every due certificate; resolves with how many were ordered. A call while a run is under way joins it (and runs again after). */
export function runDueOrders(core: Core): Promise<number> {
  const s = orderState(core);
  if (s.running) {
    s.again = true;
    return s.running;
  }
  const run = (async () => {
    await Promise.resolve();
    let n = 0;
    do {
      s.again = false;
      const due = core.db
        .select()
        .from(certificates)
        .where(and(eq(certificates.source, "acme"), isNotNull(certificates.nextAttemptAt), lte(certificates.nextAttemptAt, core.clock.now())))
        .all();
      for (const row of due) {
        await orderOne(core, row);
        n++;
      }
    } while (s.again);
    return n;
  })().finally(() => {
    if (s.running === run) s.running = null;
  });
  s.running = run;
  return s.running;
}

/** Start a run now without waiting for it (after a domain asked for certificates). */
export function kickOrders(core: Core): void {
  void runDueOrders(core).catch((e) => core.log.error("certificate orders failed", { err: (e as Error).message }));
}

async function orderOne(core: Core, row: CertificateRow): Promise<void> {
  const settings = core.config.acme;
  try {
    const issued = await orderCertificate(settings, await accountKey(core.config.dataDir), [row.host], orderState(core).pending);
    const pair = JSON.stringify({ cert: issued.cert, key: issued.key });
    const now = core.clock.now();
    core.db.transaction((t) => {
      const cur = t.select().from(certificates).where(eq(certificates.host, row.host)).get();
      if (!cur) return; // the domain went while the order ran
      let sealedId = cur.sealedId;
      if (sealedId) core.secrets.replace(t, sealedId, pair);
      else sealedId = core.secrets.put(t, `certificate:${row.host}`, pair);
      const renewAt = issued.notBefore + Math.floor(((issued.notAfter - issued.notBefore) * 2) / 3);
      t.update(certificates)
        .set({ state: "valid", reason: null, sealedId, notBefore: issued.notBefore, notAfter: issued.notAfter, failures: 0, nextAttemptAt: Math.max(renewAt, now + BACKOFF_MS[0]!), updatedAt: now })
        .where(eq(certificates.host, row.host))
        .run();
    });
    await serveCertificate(core, row, { cert: issued.cert, key: issued.key });
    core.log.info("certificate issued", { host: row.host, not_after: iso(issued.notAfter) });
  } catch (e) {
    const reason = e instanceof AcmeOrderError ? e.message : `the order could not be made: ${(e as Error).message}`;
    const rateLimited = e instanceof AcmeOrderError && e.rateLimited;
    const now = core.clock.now();
    const failures = row.failures + 1;
    const wait = Math.max(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1]!, rateLimited ? RATE_LIMIT_WAIT_MS : 0);
    core.db.transaction((t) => {
      const cur = t.select().from(certificates).where(eq(certificates.host, row.host)).get();
      if (!cur) return;
      t.update(certificates).set({ state: "failing", reason, failures, nextAttemptAt: now + wait, updatedAt: now }).where(eq(certificates.host, row.host)).run();
      const project = cur.projectId ? core.access.findProjectById(cur.projectId) : null;
      const domain = cur.resourceId ? resourceById(t, cur.resourceId) : null;
      if (failures === 1 && project && domain) {
        notify(core, t, {
          kind: "certificate.failing",
          projectId: project.id,
          params: { project: project.slug, environment: domain.environment ?? "", domain: domain.name, host: row.host },
          link: `/projects/${project.slug}/resources/domain/${encodeURIComponent(domain.name)}?environment=${encodeURIComponent(domain.environment ?? "")}`,
        });
      }
    });
    core.log.warn("certificate order failed", { host: row.host, failures, retry_at: iso(now + wait), reason });
  }
  if (row.resourceId) {
    const domain = resourceById(core.db, row.resourceId);
    if (domain) await observeRow(core, domain).catch(() => undefined);
  }
}
