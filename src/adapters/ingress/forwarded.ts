/**
 * Who the client is, as the app is told it (DESIGN §6, Ingress): `X-Forwarded-For`,
 * `X-Forwarded-Proto`, `X-Forwarded-Host`, `X-Real-IP` and `Forwarded` (RFC 7239) come from the
 * peer's address. A client's own values are dropped, unless the peer is a proxy the operator
 * trusts (`OPS_TRUSTED_PROXIES`): then its chain is kept and appended to, its proto and host are
 * believed, and `X-Real-IP` is the rightmost address of the chain that is not a trusted proxy
 * (what nginx's `real_ip_recursive on` gives).
 */
import { BlockList, isIP } from "node:net";
import type { ClientForwarding } from "./request-parser";

export interface TrustedProxies {
  /** Whether `ip` (IPv4 or IPv6, no brackets) is a trusted proxy. */
  has(ip: string): boolean;
  readonly none: boolean;
}

/** Compile CIDRs (`10.0.0.0/8`, `::1/128`) and bare addresses; throws on one that is neither. */
export function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const raw of cidrs) {
    const [addr, bits, more] = raw.trim().split("/");
    const family = isIP(addr);
    if (family === 0 || more !== undefined) throw new Error(`"${raw}" is not an IP address or CIDR`);
    const type = family === 4 ? "ipv4" : "ipv6";
    if (bits === undefined) list.addAddress(addr, type);
    else {
      const prefix = Number(bits);
      if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128)) throw new Error(`"${raw}" has an invalid prefix length`);
      list.addSubnet(addr, prefix, type);
    }
  }
  const none = cidrs.length === 0;
  return {
    none,
    has(ip) {
      if (none) return false;
      const family = isIP(ip);
      return family !== 0 && list.check(ip, family === 4 ? "ipv4" : "ipv6");
    },
  };
}

/** A socket's remote address as the app is told it: IPv4-mapped IPv6 written as IPv4. */
export function peerAddress(remote: string | undefined): string {
  const a = remote ?? "";
  return a.startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/** A node or host as a Forwarded parameter value (quoted unless it is a token). */
function param(v: string): string {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v) ? v : `"${v.replace(/["\\]/g, "\\$&")}"`;
}

/** `Forwarded` element for one hop. */
function element(peer: string, host: string | null, proto: string): string {
  const node = peer.includes(":") ? `"[${peer}]"` : param(peer);
  return `for=${node}${host ? `;host=${param(host)}` : ""};proto=${proto}`;
}

/** The rightmost address of `chain` + `peer` that is not a trusted proxy. */
function realClient(chain: string | null, peer: string, trusted: TrustedProxies): string {
  const hops = chain === null ? [] : chain.split(",").map((s) => s.trim());
  let real = peer;
  for (let k = hops.length - 1; k >= 0 && trusted.has(real); k--) {
    const hop = hops[k].startsWith("[") ? hops[k].slice(1, hops[k].indexOf("]")) : hops[k];
    if (isIP(hop) === 0) break;
    real = hop;
  }
  return real;
}

/**
 * The forwarding field lines for a request (each starting with CRLF, no blank line after):
 * `client` holds the client's own fields, believed only when `peerTrusted`.
 */
export function forwardedFields(client: ClientForwarding, peer: string, peerTrusted: boolean, trusted: TrustedProxies, host: string | null, proto: string): string {
  if (!peerTrusted) {
    return `\r\nx-forwarded-for: ${peer}\r\nx-forwarded-proto: ${proto}${host ? `\r\nx-forwarded-host: ${host}` : ""}\r\nx-real-ip: ${peer}\r\nforwarded: ${element(peer, host, proto)}`;
  }
  const xff = client.forwardedFor ? `${client.forwardedFor}, ${peer}` : peer;
  const xfProto = client.forwardedProto ?? proto;
  const xfHost = client.forwardedHost ?? host;
  const fwd = client.forwarded ? `${client.forwarded}, ${element(peer, host, proto)}` : element(peer, host, proto);
  return `\r\nx-forwarded-for: ${xff}\r\nx-forwarded-proto: ${xfProto}${xfHost ? `\r\nx-forwarded-host: ${xfHost}` : ""}\r\nx-real-ip: ${realClient(client.forwardedFor, peer, trusted)}\r\nforwarded: ${fwd}`;
}
