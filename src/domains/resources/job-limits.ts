/**
 * A job run's limits (DESIGN §6, Limits; decision 0505): the same as a build step's. Memory
 * (`OPS_JOB_MEMORY_MB`) and processes (`OPS_SANDBOX_PIDS`) through cgroups, the run's home
 * (`run/jobs/<run>`) an ext4 file system of `OPS_BUILD_MAX_DISK_MB` on a loop device (image in
 * `run/job-disks/`), /tmp and /dev/shm sized, the seccomp filter. The run's log says each in one
 * `limits:` line; one the host cannot enforce makes it a `warn` naming it and why, never silent.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { memoryLimit, pidsLimit, releaseLimit, sandboxLines, type LimitLine } from "../../adapters/builder/limits";
import { attachDisk, detachDisk, diskFull, diskImages, mountsUnder } from "../../adapters/sandbox/disk";
import type { MemoryCgroup } from "../../adapters/sandbox/cgroups";
import type { PidsGroup } from "../../adapters/sandbox/pids";
import { emptyAll } from "../../adapters/sandbox/group-end";

export interface JobLimits {
  /** cgroup.procs of the run's memory group, joined by the sandbox before anything runs. */
  cgroupProcs: string | null;
  /** Join files of a v1 pids group, joined first. */
  joinFirst: string[];
  /** What the run's log says about each limit (job-runs.ts joins them into one line). */
  lines: LimitLine[];
  /** Why the run failed because of a limit (out of memory, its home full), or null. */
  verdict(): string | null;
  /** Resolves once every process of the run's sandbox is gone; a GroupNotEmptyError past the bound (decision 0511). */
  ended(): Promise<void>;
  /** Kill what is left, remove the groups, unmount and delete the home. */
  release(): Promise<void>;
}

function jobsDir(core: Core): string {
  return path.join(core.config.dataDir, "run", "jobs");
}

function disksDir(core: Core): string {
  return path.join(core.config.dataDir, "run", "job-disks");
}

/** The run's home on the host: `run/jobs/<run id>` (bound into its sandbox through the root wrapper, decision 0204). */
export function jobHomeOf(core: Core, runId: number): string {
  return path.join(jobsDir(core), String(runId));
}

/** Set up run `runId`'s limits; its home exists afterwards (a mount point when capped). */
export async function jobLimits(core: Core, runId: number): Promise<JobLimits> {
  const { jobMemoryMb, sandboxPids, buildMaxDiskMb, sandboxTmpMb } = core.config;
  const home = jobHomeOf(core, runId);
  const image = path.join(disksDir(core), `${runId}.img`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const name = `ops-job-${runId}-${process.pid}-${Date.now().toString(36)}`;
  const memory = memoryLimit(jobMemoryMb, name, "job runs");
  const pids = pidsLimit(sandboxPids, name, memory.cgroup, { what: "job runs", under: "ops-sandboxes" });
  const lines: LimitLine[] = [memory.line, pids.line];
  let capped = false;
  if (buildMaxDiskMb <= 0) lines.push({ level: "info", text: "no disk cap is set for job runs (OPS_BUILD_MAX_DISK_MB=0)" });
  else {
    const attempt = await attachDisk(home, image, buildMaxDiskMb);
    capped = attempt.how !== null;
    lines.push(capped ? { level: "info", text: `disk cap ${buildMaxDiskMb} MiB on the run's home (an ext4 image on a loop device)` } : { level: "warn", text: `disk cap ${buildMaxDiskMb} MiB on the run's home is NOT enforced: ${attempt.reason}` });
  }
  lines.push(...sandboxLines(sandboxTmpMb));
  return {
    cgroupProcs: memory.cgroup?.procsFile ?? null,
    joinFirst: pids.group?.joinFile ? [pids.group.joinFile] : [],
    lines,
    verdict() {
      if (memory.cgroup?.oomKilled()) return `ran out of memory (limit ${jobMemoryMb} MiB, OPS_JOB_MEMORY_MB)`;
      if (capped && diskFull(home)) return `its home is full: it may hold ${buildMaxDiskMb} MiB (OPS_BUILD_MAX_DISK_MB)`;
      return null;
    },
    ended: () => emptyAll([memory.cgroup, pids.group]),
    async release() {
      await releaseGroups(memory.cgroup, pids.group);
      await detachDisk(home, existsSync(image) ? image : null);
      rmSync(home, { recursive: true, force: true });
    },
  };
}

async function releaseGroups(memory: MemoryCgroup | null, pids: PidsGroup | null): Promise<void> {
  memory?.killAll();
  pids?.killAll();
  await releaseLimit(memory);
  await pids?.remove();
}

/**
 * At `ops serve` start-up, before interrupted runs are recorded: no run is live, so every home a
 * stopped ops left under `run/jobs/` is unmounted and removed, with its disk image.
 */
export async function sweepJobDisks(core: Core): Promise<void> {
  const dir = jobsDir(core);
  if (existsSync(dir)) {
    for (const m of mountsUnder(dir)) if (m !== dir) await detachDisk(m, null);
    for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { recursive: true, force: true });
  }
  for (const image of diskImages(disksDir(core)).values()) rmSync(image, { force: true });
}
