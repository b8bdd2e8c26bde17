/**
 * What a sandbox's network namespace may reach (DESIGN §6 "Network"), as pure data: pasta's
 * argv, the routes that close the namespace off, and the resolv.conf and hosts files bound into
 * the sandbox. netns.ts starts and stops namespaces from these (decision 0201).
 *
 * The namespace is wired to the internet by `pasta` (Debian package passt), a user-mode TCP/UDP
 * translator: the sandbox's connections become ordinary sockets of pasta on the host, so nothing
 * changes the host's routing or firewall and nothing outlives pasta. Inside:
 * - `169.254.1.2/30` with gateway and DNS forwarder `169.254.1.1` (`--no-map-gw`: the gateway is
 *   not the host's loopback);
 * - `prohibit` routes for every range that is not the internet (loopback is the namespace's own,
 *   link-local with cloud metadata, the private ranges, CGNAT, multicast, the host's own
 *   addresses), except the CIDRs `OPS_SANDBOX_ALLOW_CIDRS` lists, routed through the gateway;
 * - ops's own public port (and `OPS_SANDBOX_HOST_PORTS`) forwarded from the namespace's loopback
 *   to the host's (`-T`), so `OPS_PUBLIC_URL` works inside (its host name maps to 127.0.0.1 in
 *   the sandbox's /etc/hosts); no other host port is (`-T` defaults to every bound port);
 * - for a replica, one port forwarded from the host's 127.0.0.1 into the namespace (`-t`), where
 *   the app listens on `$PORT` at 127.0.0.1, 0.0.0.0 or [::]: the ingress's only way in.
 */
import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";

/** The sandbox's own address, its gateway and DNS forwarder (link-local, a /30 of its own). */
export const SANDBOX_ADDRESS = "169.254.1.2";
export const SANDBOX_GATEWAY = "169.254.1.1";
const PREFIX = 30;

/**
 * Ranges a sandbox never reaches. The documentation ranges (192.0.2.0/24, 198.51.100.0/24,
 * 203.0.113.0/24) are not here: they are not routed on the internet, so a host that uses them
 * (a lab, a test network) uses them as its internet.
 */
export const CLOSED_RANGES = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/4",
  "240.0.0.0/4",
];

export interface NetworkPolicy {
  /** Host loopback ports reachable from inside at 127.0.0.1 (ops's public port first). */
  hostPorts: number[];
  /** Host name of `OPS_PUBLIC_URL` when it is a name (mapped to 127.0.0.1 inside), else null. */
  publicHost: string | null;
  /** `OPS_SANDBOX_ALLOW_CIDRS`. */
  allowCidrs: string[];
  /** The host's own IPv4 addresses (closed unless allowed). */
  hostAddresses: string[];
}

/** The policy of this host from ops's configuration. */
export function networkPolicy(config: { publicUrl: string; sandboxAllowCidrs: readonly string[]; sandboxHostPorts: readonly number[] }): NetworkPolicy {
  const url = new URL(config.publicUrl);
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const hostAddresses: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) hostAddresses.push(a.address);
  }
  return {
    hostPorts: [...new Set([port, ...config.sandboxHostPorts])],
    publicHost: isIP(host) === 0 ? host.toLowerCase() : null,
    allowCidrs: [...config.sandboxAllowCidrs],
    hostAddresses: [...new Set(hostAddresses)],
  };
}

/** pasta's argv that makes a namespace for `holder` (argv run inside it) with `forward` (a host port) or none. */
export function pastaArgv(pasta: string, policy: NetworkPolicy, forward: number | null, holder: readonly string[]): string[] {
  return [
    pasta,
    // Stay root on the host side when ops is root: an unprivileged pasta cannot finish setting up
    // the namespace it made (decision 0201).
    ...(process.getuid?.() === 0 ? ["--runas", "0"] : []),
    "--config-net",
    "-4",
    "-a",
    SANDBOX_ADDRESS,
    "-n",
    String(PREFIX),
    "-g",
    SANDBOX_GATEWAY,
    "--no-map-gw",
    "--dns-forward",
    SANDBOX_GATEWAY,
    "-t",
    forward === null ? "none" : `127.0.0.1/${forward}`,
    "-u",
    "none",
    "-T",
    policy.hostPorts.length > 0 ? policy.hostPorts.join(",") : "none",
    "-U",
    "none",
    "-f",
    "-q",
    "--",
    ...holder,
  ];
}

/** `ip -batch` lines that close the namespace off (run inside it, as root of its owner). */
export function routeScript(policy: NetworkPolicy): string {
  const lines: string[] = [];
  for (const r of CLOSED_RANGES) if (r !== "127.0.0.0/8") lines.push(`route add prohibit ${r}`);
  for (const a of policy.hostAddresses) if (!policy.allowCidrs.some((c) => inCidr(a, c))) lines.push(`route add prohibit ${a}/32`);
  for (const c of policy.allowCidrs) lines.push(`route replace ${c.includes("/") ? c : `${c}/32`} via ${SANDBOX_GATEWAY}`);
  return lines.join("\n") + "\n";
}

/** The sandbox's /etc/resolv.conf and /etc/hosts. */
export function networkFiles(policy: NetworkPolicy, hostname: string): { resolv: string; hosts: string } {
  const names = ["localhost", hostname, ...(policy.publicHost && policy.publicHost !== "localhost" ? [policy.publicHost] : [])];
  return {
    resolv: `nameserver ${SANDBOX_GATEWAY}\noptions timeout:2 attempts:2\n`,
    hosts: `127.0.0.1 ${names.join(" ")}\n::1 localhost ip6-localhost ip6-loopback\n`,
  };
}

/** Whether IPv4 `addr` is inside `cidr` (a bare address is a /32), by node's BlockList. */
export function inCidr(addr: string, cidr: string): boolean {
  const [base, bits = "32"] = cidr.split("/");
  const list = new BlockList();
  list.addSubnet(base!, Number(bits), "ipv4");
  return list.check(addr, "ipv4");
}
