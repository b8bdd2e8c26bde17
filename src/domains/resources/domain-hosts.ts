/**
 * Who may claim a host name (DESIGN §6, Ingress). A host or wildcard belongs to one project across
 * the estate:
 *
 * - `localhost`, IP addresses and the host of OPS_PUBLIC_URL (or a wildcard covering it) are never
 *   a domain's host: browsers send the console's cookies to every port of its host, and an app
 *   answering there would read them (422);
 * - every name under `.<project>.localhost` belongs to that project (its services' default hosts
 *   live there): another project's claim is taken (409), one under no project's name is reserved
 *   (422);
 * - a project holding a host also holds every name under it (decision 0530: an app there shares
 *   its cookies); a wildcard holds the names under its suffix. A claim whose names meet names
 *   another project holds is taken (409): `*.beta.test`, `www.beta.test` or `*.www.beta.test`
 *   while another project holds `beta.test`, and `beta.test` while another holds `*.beta.test`.
 *   The answer never names the holder: the caller may not be allowed to see that project.
 *
 * Within one project, an exact host and a wildcard covering it may coexist (the exact one wins at
 * the ingress); the same exact host twice is refused by `domain_hosts`' key.
 */
import { isIP } from "node:net";
import { eq, ne } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { domainHosts, resources } from "./tables";
import { listOfTypeEverywhere, specOf } from "./rows";
import { observeRow } from "./store";
import { localhostOwner } from "../../adapters/ingress/table";

/** The suffix a wildcard covers (`*.example.com` → `.example.com`), or null for an exact host. */
function suffixOf(host: string): string | null {
  return host.startsWith("*.") ? host.slice(1) : null;
}

/** Whether some request host could match both `a` and `b` (exact hosts or `*.` wildcards). */
export function hostsOverlap(a: string, b: string): boolean {
  const sa = suffixOf(a);
  const sb = suffixOf(b);
  if (sa === null && sb === null) return a === b;
  if (sa === null) return a.endsWith(sb!) && a.length > sb!.length;
  if (sb === null) return b.endsWith(sa) && b.length > sa.length;
  return sa.endsWith(sb) || sb.endsWith(sa);
}

/** The name a claim's names are at or under: the host itself, or a wildcard's suffix (`*.example.com` → `example.com`). */
function rootOf(host: string): string {
  return host.startsWith("*.") ? host.slice(2) : host;
}

/**
 * Whether two claims hold a name in common, counting every name under an exact host as its
 * holder's: true when one claim's root is the other's or lies under it.
 */
export function claimsMeet(a: string, b: string): boolean {
  const ra = rootOf(a);
  const rb = rootOf(b);
  return ra === rb || ra.endsWith(`.${rb}`) || rb.endsWith(`.${ra}`);
}

function invalid(i: number, host: string, message: string): OpsError {
  const path = `spec.hosts.${i}`;
  return new OpsError("validation_failed", `${path}: "${host}" ${message}`, { fields: [{ path, message }] });
}

function taken(host: string): OpsError {
  return new OpsError("conflict", `Host "${host}" is already taken by another project.`, { host });
}

/** The host of OPS_PUBLIC_URL, lower case, without port or brackets. */
function publicHost(core: Core): string {
  return new URL(core.config.publicUrl).hostname.toLowerCase().replace(/^\[|\]$/g, "");
}

/** Why `host` (exact or wildcard) can never be a domain's host on this server, or null when it can be. */
export function refusedHost(core: Core, raw: string): string | null {
  const host = raw.toLowerCase();
  const bare = rootOf(host);
  if (isIP(bare) !== 0 || isIP(bare.replace(/^\[|\]$/g, "")) !== 0) return "is an IP address; a domain is a host name";
  const consoleHost = publicHost(core);
  if (host === consoleHost || hostsOverlap(host, consoleHost)) return `would answer on the console's host ${consoleHost} (OPS_PUBLIC_URL)`;
  if (localhostOwner(host) === "") return "is localhost, where the console and every app would share cookies";
  return null;
}

/**
 * The hosts of a domain this server does not route, each as `host: why`. Checked where routes are
 * made and at every start, not only when a domain is written (DESIGN §6): OPS_PUBLIC_URL may have
 * moved onto a host a domain claimed before, or a row may predate a rule.
 */
export function unroutedHosts(core: Core, hosts: readonly string[]): string[] {
  return hosts.flatMap((h) => {
    const why = refusedHost(core, h);
    return why === null ? [] : [`${h.toLowerCase()}: ${why}`];
  });
}

/**
 * At start: every domain is observed again, so one holding a host this server does not route
 * says so in its status from now on (and one that no longer does stops saying it); each such
 * domain is logged. The routes leave those hosts out wherever they are made (deployments'
 * `domainRoutes`). Resolves with how many domains hold such a host.
 */
export async function checkDomainHosts(core: Core): Promise<number> {
  let n = 0;
  for (const row of listOfTypeEverywhere(core.db, "domain")) {
    const unrouted = unroutedHosts(core, specOf<{ hosts: string[] }>(row).hosts);
    if (unrouted.length > 0) {
      n++;
      const project = core.access.findProjectById(row.projectId);
      core.log.warn("a domain's host is not routed", { project: project?.slug ?? row.projectId, environment: row.environment, domain: row.name, hosts: unrouted });
    }
    await observeRow(core, row).catch((e) => core.log.info("resource not observed", { type: row.type, name: row.name, reason: (e as Error).message }));
  }
  return n;
}

/**
 * Throw unless `project` may claim every one of `hosts` (422 for names no domain may have, 409 for
 * names another project holds).
 */
export function assertHostsClaimable(core: Core, q: Queryable, project: ProjectRef, hosts: readonly string[]): void {
  const own = project.slug.toLowerCase();
  hosts.forEach((raw, i) => {
    const host = raw.toLowerCase();
    const why = refusedHost(core, host);
    if (why !== null) throw invalid(i, host, why);
    const ns = localhostOwner(host);
    if (ns !== null && ns !== own) {
      if (core.access.findProject(ns)) throw taken(host);
      throw invalid(i, host, `is reserved: names under .${ns}.localhost are the default hosts of project ${ns}`);
    }
  });
  // Other projects' domain hosts whose names the claims would meet.
  const held = q
    .select({ host: domainHosts.host })
    .from(domainHosts)
    .innerJoin(resources, eq(resources.id, domainHosts.resourceId))
    .where(ne(resources.projectId, project.id))
    .all();
  for (const raw of hosts) {
    const host = raw.toLowerCase();
    if (held.some((h) => claimsMeet(host, h.host))) throw taken(host);
  }
}
