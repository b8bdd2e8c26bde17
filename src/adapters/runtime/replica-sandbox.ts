/**
 * The sandbox of a replica or a one-off run in the process runtime: its memory group, its process
 * limit beside it, its network namespace and the bwrap argv around its command, and one line for
 * its output that says every limit it runs under, and which of them the host could not enforce
 * (DESIGN §6: "each run's log says what held for it").
 */
import { DEFAULT_PATH } from "./process";
import { detectMemoryController, type MemoryCgroup, type MemoryDetection } from "../sandbox/cgroups";
import { createPidsGroup, type PidsGroup } from "../sandbox/pids";
import { sandboxArgv } from "../sandbox/bwrap";
import { hostArch, seccompFile } from "../sandbox/seccomp";
import { defaultIdentity, findSandboxTools, type SandboxIdentity, type SandboxTools } from "../sandbox/users";
import { NetnsError, type Netns, type SandboxNetwork } from "../sandbox";
import { RuntimeError, type MemoryStatus, type ReplicaSpec } from "./types";
import type { SandboxLimits } from "./replica-env";

export interface ReplicaSandboxOptions {
  memory?: MemoryDetection;
  identityOf?: (labels: Record<string, string>) => SandboxIdentity;
  network?: SandboxNetwork;
  limits?: SandboxLimits;
}

export interface MemorySetup {
  status: MemoryStatus;
  cgroup: MemoryCgroup | null;
}

export interface PidsSetup {
  group: PidsGroup | null;
  /** What is not enforced (memory included), each with why. */
  notEnforced: string[];
}

export function replicaSandbox(opts: ReplicaSandboxOptions) {
  let memory: MemoryDetection | null = opts.memory ?? null;
  let sandboxTools: SandboxTools | null = null;

  const tools = (): SandboxTools => {
    if (sandboxTools) return sandboxTools;
    const found = findSandboxTools(DEFAULT_PATH, "service replicas");
    if (typeof found === "string") throw new RuntimeError(found);
    return (sandboxTools = found);
  };

  function memoryFor(spec: Pick<ReplicaSpec, "id" | "memoryMb">): MemorySetup {
    const limitMb = spec.memoryMb ?? (opts.limits?.memoryMb || null);
    if (limitMb === null) return { status: { limitMb, enforced: true, how: null, reason: null }, cgroup: null };
    memory ??= detectMemoryController();
    if (!memory.ok) return { status: { limitMb, enforced: false, how: null, reason: memory.reason }, cgroup: null };
    try {
      const cgroup = memory.controller.create(spec.id, limitMb * 1024 * 1024);
      return { status: { limitMb, enforced: true, how: cgroup.how, reason: null }, cgroup };
    } catch (e) {
      return { status: { limitMb, enforced: false, how: null, reason: `could not create a ${memory.controller.how} group: ${(e as Error).message}` }, cgroup: null };
    }
  }

  /** The sandbox's process limit beside its memory group, and what is not enforced (memory included). */
  function pidsFor(spec: Pick<ReplicaSpec, "id">, mem: MemorySetup): PidsSetup {
    const notEnforced = mem.status.enforced ? [] : [`memory limit of ${mem.status.limitMb} MiB is not enforced: ${mem.status.reason}`];
    const max = opts.limits?.pids ?? 0;
    if (max <= 0) return { group: null, notEnforced };
    const attempt = createPidsGroup(spec.id, max, { beside: mem.cgroup, under: "ops-replicas" });
    if (!attempt.group) notEnforced.push(`process limit of ${max} is not enforced: ${attempt.reason}`);
    return { group: attempt.group, notEnforced };
  }

  /** The sandboxed argv of `argv` in `image`. */
  function inSandbox(image: ReplicaSpec["image"], argv: string[], cgroup: MemoryCgroup | null, hostname: string, pids: PidsGroup | null, labels: Record<string, string>, netns: Netns | null): string[] {
    const network = netns && opts.network ? { enter: netns.enterArgv(), ...opts.network.etc(hostname) } : null;
    return sandboxArgv(
      tools(),
      {
        mounts: [],
        chdir: image.config.workingDir,
        imageRoot: image.root!,
        tmpfs: ["/tmp"],
        tmpSizeMb: opts.limits?.tmpMb ?? 256,
        user: "host",
        hostUser: opts.identityOf?.(labels) ?? defaultIdentity(),
        cgroupProcs: cgroup?.procsFile ?? null,
        joinFirst: pids?.joinFile ? [pids.joinFile] : [],
        hostname,
        network,
      },
      argv,
    );
  }

  /** A network namespace for a sandbox (null on the host's network); a RuntimeError says why not. */
  async function netnsFor(forward: boolean): Promise<Netns | null> {
    if (!opts.network) return null;
    if (opts.network.refusal) throw new RuntimeError(opts.network.refusal);
    try {
      return await opts.network.open(forward);
    } catch (e) {
      if (e instanceof NetnsError) throw new RuntimeError(e.message);
      throw e;
    }
  }

  /**
   * One `limits:` line for the run's output naming each limit it runs under, as a job run's log
   * does (decision 0505); what the host could not enforce is said as NOT enforced, with why.
   */
  function limitsLine(mem: MemorySetup, pids: PidsSetup, netns: Netns | null, labels: Record<string, string>): string {
    const parts: string[] = [];
    const m = mem.status;
    if (m.limitMb === null) parts.push("no memory limit");
    else parts.push(m.enforced ? `memory ${m.limitMb} MiB (${m.how})` : `memory ${m.limitMb} MiB NOT enforced: ${m.reason}`);
    const max = opts.limits?.pids ?? 0;
    if (max <= 0) parts.push("no process limit");
    else parts.push(pids.group ? `processes ${max} (${pids.group.how})` : `processes ${max} NOT enforced: ${pids.notEnforced.find((n) => n.startsWith("process limit")) ?? "no group"}`);
    parts.push(`/tmp and /dev/shm ${opts.limits?.tmpMb ?? 256} MiB tmpfs each, the rest of /dev read-only`);
    const arch = hostArch();
    parts.push(arch && seccompFile() ? `seccomp filter (${arch}) and no_new_privs` : `seccomp filter NOT enforced: none for ${process.arch} (no_new_privs still set)`);
    parts.push(netns ? "its own network namespace (the host's loopback, private ranges and other sandboxes unreachable)" : (opts.network?.note ?? "the host's network"));
    parts.push(`host uid ${(opts.identityOf?.(labels) ?? defaultIdentity()).uid}`);
    return `limits: ${parts.join("; ")}`;
  }

  return { tools, memoryFor, pidsFor, inSandbox, netnsFor, limitsLine };
}
