/**
 * What both builders do around one command: put it under the build's memory cgroup and its
 * process limit (sandbox/pids.ts), stop it at the step's deadline or on cancel (the whole process
 * tree, through the process group and the cgroup), and tell an OOM kill, a refused fork, a
 * timeout, a cancel and a failing exit apart.
 */
import { rmdirSync } from "node:fs";
import { startCommand, type SecretMasker } from "../runtime/process";
import { createMemoryCgroup, joinArgv, type MemoryCgroup } from "../sandbox/cgroups";
import { createPidsGroup, type PidsGroup } from "../sandbox/pids";
import { emptyAll } from "../sandbox/group-end";
import { hostArch, seccompFile } from "../sandbox/seccomp";
import type { MemoryEnforcement } from "./types";

export interface MemorySetup {
  cgroup: MemoryCgroup | null;
  memory: MemoryEnforcement;
  /** The build log's line about the limit: a limit that is not enforced is said, never silent. */
  line: { level: "info" | "warn"; text: string };
}

/** A memory cgroup for one build or job run (`name` unique; `what` for the log line), or the reason there is none. */
export function memoryLimit(memoryMb: number, name: string, what = "builds"): MemorySetup {
  if (memoryMb <= 0) return { cgroup: null, memory: "none", line: { level: "info", text: `no memory limit is set for ${what}` } };
  const attempt = createMemoryCgroup(name.replace(/[^A-Za-z0-9._-]/g, "_"), memoryMb * 1024 * 1024);
  if (!attempt.cgroup) return { cgroup: null, memory: "not enforced", line: { level: "warn", text: `memory limit ${memoryMb} MiB is NOT enforced: ${attempt.reason}` } };
  const v = attempt.cgroup.version;
  return { cgroup: attempt.cgroup, memory: v === 2 ? "cgroup2" : "cgroup1", line: { level: "info", text: `memory limit ${memoryMb} MiB (cgroup v${v})` } };
}

/** A line for a run's log about one of its limits (a limit that is not enforced is a `warn`). */
export interface LimitLine {
  level: "info" | "warn";
  text: string;
}

/**
 * The lines every sandboxed run's log carries besides its cgroups and disks: /tmp and /dev/shm
 * sized (bwrap.ts), the rest of /dev read-only, and the seccomp filter with no_new_privs.
 */
export function sandboxLines(tmpMb: number): LimitLine[] {
  const arch = hostArch();
  const filter: LimitLine = arch && seccompFile() ? { level: "info", text: `seccomp filter (${arch}) and no_new_privs` } : { level: "warn", text: `the seccomp filter is NOT enforced: ops has none for ${process.arch} (no_new_privs still set)` };
  return [{ level: "info", text: `/tmp and /dev/shm: ${tmpMb} MiB tmpfs each, the rest of /dev read-only` }, filter];
}

export interface PidsSetup {
  group: PidsGroup | null;
  /** The build log's line about the process limit (a limit not enforced is said). */
  line: { level: "info" | "warn"; text: string };
}

/** The process limit (`OPS_SANDBOX_PIDS`) of a build (or job run: `what`, `under`), in its memory group on cgroup v2, or the reason there is none. */
export function pidsLimit(max: number, name: string, memory: MemoryCgroup | null, opts: { what?: string; under?: string } = {}): PidsSetup {
  if (max <= 0) return { group: null, line: { level: "info", text: `no process limit is set for ${opts.what ?? "builds"}` } };
  const attempt = createPidsGroup(`${name}-pids`, max, { beside: memory, under: opts.under ?? "ops-builds" });
  if (!attempt.group) return { group: null, line: { level: "warn", text: `process limit ${max} is NOT enforced: ${attempt.reason}` } };
  return { group: attempt.group, line: { level: "info", text: `process limit ${max} (${attempt.group.how})` } };
}

/** Remove the build's pids group (nothing when it is the memory group's own file). */
export async function releasePids(pids: PidsGroup | null): Promise<void> {
  await pids?.remove();
}

/**
 * The argv prefix that puts a command into the build's group before it execs (on cgroup v1 the
 * shell moves only itself through `tasks`, without the RCU wait of a `cgroup.procs` write: see
 * cgroups.ts `joinFile`).
 */
export function builderJoinArgv(cgroup: MemoryCgroup): string[] {
  return joinArgv(cgroup);
}

/**
 * Remove the build's group once its commands ended. The sandbox's init (bwrap as pid 1 of its
 * namespace) reports the command's exit before it has finished tearing its namespaces down, and
 * until then the group is busy: the development machine saw that window in about half the builds.
 * The group's own `remove` retries every 50 ms, so this tries again after 1, 2, 4 … ms first.
 */
export async function releaseLimit(cgroup: MemoryCgroup | null): Promise<void> {
  if (!cgroup) return;
  for (let wait = 0; wait <= 32; wait = wait === 0 ? 1 : wait * 2) {
    if (wait > 0) await Bun.sleep(wait);
    cgroup.killAll();
    try {
      rmdirSync(cgroup.dir);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EBUSY") return;
    }
  }
  await cgroup.remove();
}

export type Verdict = { kind: "ok" } | { kind: "memory" | "pids" | "timeout" | "cancelled" | "exit"; why: string };

export interface LimitedCommand {
  argv: readonly string[];
  env: Record<string, string>;
  cwd: string;
  /** Epoch ms by which it must have finished. */
  deadline: number;
  cgroup: MemoryCgroup | null;
  /** The build's process limit (joined first when it is a group of its own). */
  pids?: PidsGroup | null;
  signal?: AbortSignal;
  onLine(stream: "stdout" | "stderr", line: string): void;
  /** The build's secret values, masked before a long line is cut (process.ts). */
  mask?: SecretMasker;
}

/** Run one command under the build's limits and say how it ended. */
export async function runLimited(c: LimitedCommand): Promise<Verdict> {
  if (c.signal?.aborted) return { kind: "cancelled", why: "cancelled before it started" };
  const joinPids = c.pids?.joinFile ? joinArgv(c.pids.joinFile) : [];
  const refusedBefore = c.pids?.refused() ?? 0;
  const running = startCommand({
    command: [...joinPids, ...(c.cgroup ? builderJoinArgv(c.cgroup) : []), ...c.argv],
    cwd: c.cwd,
    env: c.env,
    timeoutMs: Math.max(1, c.deadline - Date.now()),
    onLine: c.onLine,
    mask: c.mask,
  });
  const abort = () => running.stop(1000);
  c.signal?.addEventListener("abort", abort);
  try {
    const res = await running.done;
    // The step has ended once its groups are empty, not when its command exited (decision 0511).
    await emptyAll([c.cgroup, c.pids]);
    if (c.cgroup?.oomKilled()) return { kind: "memory", why: "ran out of memory" };
    if (c.signal?.aborted) return { kind: "cancelled", why: "cancelled: the process tree was killed" };
    if (res.timedOut) return { kind: "timeout", why: "timed out" };
    if (res.exitCode !== 0 && c.pids && c.pids.refused() > refusedBefore) {
      return { kind: "pids", why: `hit the process limit of ${c.pids.max} (OPS_SANDBOX_PIDS): the kernel refused ${c.pids.refused() - refusedBefore} fork(s)` };
    }
    if (res.exitCode !== 0) return { kind: "exit", why: res.signal ? `was killed by ${res.signal}` : `exited with code ${res.exitCode}` };
    return { kind: "ok" };
  } finally {
    c.signal?.removeEventListener("abort", abort);
  }
}
