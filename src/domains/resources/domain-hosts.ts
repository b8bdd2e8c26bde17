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

/**
 * Throw unless `project` may claim every one of `hosts` (422 for names no domain may have, 409 for
 * names another project holds).
 */
export function assertHostsClaimable(core: Core, q: Queryable, project: ProjectRef, hosts: readonly string[]): void {
  const consoleHost = publicHost(core);
  const own = project.slug.toLowerCase();
  hosts.forEach((raw, i) => {
    const host = raw.toLowerCase();
    const bare = host.startsWith("*.") ? host.slice(2) : host;
    if (isIP(bare) !== 0 || isIP(bare.replace(/^\[|\]$/g, "")) !== 0) throw invalid(i, host, "is an IP address; a domain is a host name");
    if (host === consoleHost || hostsOverlap(host, consoleHost)) throw invalid(i, host, `would answer on the console's host ${consoleHost} (OPS_PUBLIC_URL)`);
    const ns = localhostOwner(host);
    if (ns === "") throw invalid(i, host, "is localhost, where the console and every app would share cookies");
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
