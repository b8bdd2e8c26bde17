/**
 * Where a channel may send (DESIGN §6, trust boundaries): a project member controls the URL, so
 * ops must not become their way into the host's own services, the cloud metadata endpoint or the
 * private network. A URL is refused (422) when its host is, or resolves to, a private, loopback,
 * link-local, CGNAT, multicast or unspecified address — unless the estate setting
 * `allow_private_targets` names the address (or a CIDR holding it). Checked when a channel is
 * made and again before every send (the name may resolve elsewhere later); redirects are not
 * followed. Decision 0650.
 */
import { BlockList, isIP } from "node:net";
import { lookup } from "node:dns/promises";
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { alertSettings } from "./tables";

const CLOSED = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 3],
] as const) CLOSED.addSubnet(net, bits, "ipv4");
for (const [net, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
] as const) CLOSED.addSubnet(net, bits, "ipv6");

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as its IPv4 address. */
function unmapped(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1] : ip;
}

/** Whether `ip` is private, loopback, link-local or otherwise not on the public internet. */
export function isClosedAddress(ip: string): boolean {
  const a = unmapped(ip);
  const family = isIP(a);
  if (family === 0) return true;
  return CLOSED.check(a, family === 4 ? "ipv4" : "ipv6");
}

const SETTING = "allow_private_targets";

/** The estate's allowed private targets (addresses or CIDRs). */
export function allowedPrivateTargets(core: Core): string[] {
  const row = core.db.select().from(alertSettings).where(eq(alertSettings.key, SETTING)).get();
  return row ? (JSON.parse(row.value) as string[]) : [];
}

/** Parse `a.b.c.d`, `a.b.c.d/n`, an IPv6 address or CIDR; null when it is none of them. */
export function parseTarget(text: string): { net: string; bits: number; family: "ipv4" | "ipv6" } | null {
  const [addr, bitsText, extra] = text.trim().split("/");
  if (extra !== undefined) return null;
  const family = isIP(addr);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  const bits = bitsText === undefined ? max : /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : -1;
  if (bits < 0 || bits > max) return null;
  return { net: addr, bits, family: family === 4 ? "ipv4" : "ipv6" };
}

/** Replace the estate's allowed private targets; 422 names an entry that is no address or CIDR. */
export function writeAllowedPrivateTargets(core: Core, q: Queryable, targets: string[]): string[] {
  const clean = [...new Set(targets.map((s) => s.trim()).filter((s) => s !== ""))];
  for (const s of clean) if (!parseTarget(s)) throw new OpsError("validation_failed", `"${s}" is not an IP address or CIDR.`, { fields: [{ path: "allow_private_targets", message: "not an IP address or CIDR" }] });
  const value = JSON.stringify(clean);
  q.insert(alertSettings).values({ key: SETTING, value, updatedAt: core.clock.now() }).onConflictDoUpdate({ target: alertSettings.key, set: { value, updatedAt: core.clock.now() } }).run();
  return clean;
}

function allowedBy(list: string[], ip: string): boolean {
  const a = unmapped(ip);
  const family = isIP(a) === 6 ? "ipv6" : "ipv4";
  const b = new BlockList();
  for (const s of list) {
    const p = parseTarget(s);
    if (p && p.family === family) b.addSubnet(p.net, p.bits, p.family);
  }
  return b.check(a, family);
}

/** Check the URL's form: http or https, a host, no user name or password in it. */
export function parseChannelUrl(text: string): URL {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new OpsError("validation_failed", "url: not a URL.", { fields: [{ path: "url", message: "not a URL" }] });
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new OpsError("validation_failed", "url: use http or https.", { fields: [{ path: "url", message: "http or https only" }] });
  if (u.username || u.password) throw new OpsError("validation_failed", "url: no user name or password in the URL.", { fields: [{ path: "url", message: "credentials in the URL" }] });
  return u;
}

/**
 * The addresses `url`'s host stands for, every one checked: `refused` (422) when one is closed
 * and not allowed by the estate, `validation_failed` when the name does not resolve.
 */
export async function assertReachable(core: Core, url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      throw new OpsError("validation_failed", `url: the host "${host}" does not resolve.`, { fields: [{ path: "url", message: "does not resolve" }] });
    }
  }
  const allowed = allowedPrivateTargets(core);
  for (const a of addresses) {
    if (isClosedAddress(a) && !allowedBy(allowed, a)) {
      throw new OpsError("refused", `url: ${host} is a private, loopback or link-local address (${a}); the estate's alert settings may allow it.`, { host, address: a });
    }
  }
}

/** What may be shown of a channel URL: its scheme and host. */
export function urlHint(url: URL): string {
  return `${url.protocol}//${url.host}/…`;
}
