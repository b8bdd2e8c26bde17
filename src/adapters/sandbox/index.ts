/**
 * The sandbox as ops's other parts use it: the host's network set-up for sandboxes
 * (`sandboxNetworkOf`), and each project's identity (identity.ts). One per Core; namespaces still
 * open when the Core closes are closed with it, except those handed to the next image of ops on
 * `ops restart` (decision 0390), which `adopt` takes on there.
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { DEFAULT_PATH } from "../runtime/process";
import { networkFiles, networkPolicy, type NetworkPolicy } from "./network";
import { adoptNetns, netnsNotAdoptable, openNetns, NetnsError, type Netns, type NetnsHandover } from "./netns";

export { projectIdentity } from "./identity";
export type { Netns, NetnsHandover } from "./netns";
export { NetnsError } from "./netns";

/** The /etc files a sandbox sees for its network (host paths, world-readable, nothing secret). */
export interface NetworkEtc {
  resolv: string;
  hosts: string;
}

export interface SandboxNetwork {
  readonly mode: "isolated" | "host";
  /** Why isolated sandboxes cannot start on this host (a missing tool), else null. */
  readonly refusal: string | null;
  /** What a build log or a service status says about the network when it is not isolated. */
  readonly note: string | null;
  readonly policy: NetworkPolicy;
  /** A namespace of its own (`forward`: with a host port into it), or null in `host` mode; throws NetnsError. */
  open(forward: boolean): Promise<Netns | null>;
  /** Take on a namespace the previous image of ops handed over (docs/decisions/0390), or the reason it cannot. */
  adopt(h: NetnsHandover): Netns | string;
  /** resolv.conf and hosts for a sandbox named `hostname`. */
  etc(hostname: string): NetworkEtc;
}

const KEY = "sandbox.network";

/** The tools isolated networking needs, or the message that names the missing package. */
export function networkTools(searchPath = DEFAULT_PATH): { pasta: string; nsenter: string; ip: string } | string {
  const pasta = Bun.which("pasta", { PATH: searchPath });
  if (!pasta) return "pasta (Debian package passt) is not installed: builds, job runs and replicas run only in a network namespace of their own. Install it (apt-get install passt), or set OPS_SANDBOX_NETWORK=host to run them on the host's network on purpose";
  const nsenter = Bun.which("nsenter", { PATH: searchPath });
  if (!nsenter) return "nsenter (Debian package util-linux) is not installed: sandboxes enter their network namespace with it (apt-get install util-linux)";
  const ip = Bun.which("ip", { PATH: searchPath });
  if (!ip) return "ip (Debian package iproute2) is not installed: it closes a sandbox's network off (apt-get install iproute2)";
  return { pasta, nsenter, ip };
}

export const HOST_NETWORK_NOTE = "network isolation is off (OPS_SANDBOX_NETWORK=host): this sandbox shares the host's network, including its loopback services";

/** The sandbox network of a Core (or of the data plane, which has only a Core's config, scratch space and close hooks). */
export function sandboxNetworkOf(core: Pick<Core, "config" | "locals" | "onClose">): SandboxNetwork {
  const cached = core.locals.get(KEY) as SandboxNetwork | undefined;
  if (cached) return cached;
  const mode = core.config.sandboxNetwork;
  const tools = mode === "isolated" ? networkTools() : null;
  const policy = networkPolicy(core.config);
  const open = new Set<Netns>();
  // A root ops keeps them in /run, root's own, so a data dir the sandbox user cannot walk into
  // (kept 0700) still works; otherwise they sit in the data dir ops's own user reads.
  const etcDir =
    process.getuid?.() === 0 && existsSync("/run")
      ? path.join("/run", "ops-sandbox", createHash("sha256").update(path.resolve(core.config.dataDir)).digest("hex").slice(0, 16))
      : path.join(core.config.dataDir, "run", "sandbox-etc");
  const written = new Map<string, NetworkEtc>();
  let closing = false;
  // Closed with the Core unless handed over to the next image.
  const track = (ns: Netns): Netns => {
    // Registered at the first namespace, so it runs after the closers of those that opened
    // them (the runtime stops its replicas in their namespaces first).
    if (!closing) {
      closing = true;
      core.onClose.push(async () => {
        await Promise.all([...open].map((n) => n.close()));
      });
    }
    open.add(ns);
    return {
      ...ns,
      close: async () => {
        open.delete(ns);
        await ns.close();
      },
      handOver: () => {
        open.delete(ns);
        return ns.handOver();
      },
    };
  };
  const network: SandboxNetwork = {
    mode,
    refusal: typeof tools === "string" ? tools : null,
    note: mode === "host" ? HOST_NETWORK_NOTE : null,
    policy,
    async open(forward) {
      if (mode === "host") return null;
      if (typeof tools === "string" || tools === null) throw new NetnsError(network.refusal ?? "isolated networking is unavailable");
      return track(await openNetns({ ...tools, policy, forward }));
    },
    adopt(h) {
      const why = netnsNotAdoptable(h);
      return why ?? track(adoptNetns(h));
    },
    etc(hostname) {
      const known = written.get(hostname);
      if (known) return known;
      mkdirSync(etcDir, { recursive: true, mode: 0o755 });
      for (let d = etcDir; d !== path.dirname(d) && (d.startsWith("/run/") || d === etcDir); d = path.dirname(d)) {
        const st = lstatSync(d);
        if (!st.isDirectory() || st.uid !== process.getuid?.()) throw new NetnsError(`${d} must be a directory owned by ops's user`);
        chmodSync(d, 0o755);
      }
      const files = networkFiles(policy, hostname);
      const out = { resolv: path.join(etcDir, "resolv.conf"), hosts: path.join(etcDir, `hosts-${hostname.replace(/[^a-z0-9-]/gi, "_")}`) };
      writeFileSync(out.resolv, files.resolv, { mode: 0o644 });
      writeFileSync(out.hosts, files.hosts, { mode: 0o644 });
      written.set(hostname, out);
      return out;
    },
  };
  core.locals.set(KEY, network);
  return network;
}
