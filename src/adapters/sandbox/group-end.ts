/**
 * The end of a sandbox (decision 0511): a sandbox has ended when its cgroup is empty, not when its
 * command exited. bwrap reports the command's exit before the kernel has torn the sandbox's pid
 * namespace down (that happens asynchronously once bwrap's pid 1 is gone), processes that left the
 * command's process group are not reached by its kill, and a process in uninterruptible sleep
 * outlives any signal for as long as the kernel keeps it there. So a run's verdict waits for
 * `emptyGroup`: kill, look again, kill what is left, until `cgroup.procs` is empty, within a
 * bound past which it says what is left rather than vouching for an end it did not see.
 */
import { existsSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";

function read(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** The host pids of the processes in the group at `dir` (none when it is gone). */
export function groupPids(dir: string): number[] {
  return read(path.join(dir, "cgroup.procs")).split("\n").filter(Boolean).map(Number);
}

/** How long a sandbox's group may take to empty once its processes were killed (decision 0511). */
export const EMPTY_BOUND_MS = 5000;

/** A group that still held processes when the bound ran out: the run's end cannot be vouched for. */
export class GroupNotEmptyError extends Error {
  constructor(
    readonly dir: string,
    readonly pids: readonly number[],
    boundMs: number,
  ) {
    const shown = pids.slice(0, 8).join(", ") + (pids.length > 8 ? ", …" : "");
    super(`${pids.length} process(es) of the sandbox were still alive ${boundMs / 1000} s after they were killed (pid ${shown}, cgroup ${dir}); a process in uninterruptible sleep (state D) ignores SIGKILL until the kernel wakes it`);
    this.name = "GroupNotEmptyError";
  }
}

function writeIf(dir: string, file: string, value: string): boolean {
  try {
    writeFileSync(path.join(dir, file), value);
    return true;
  } catch {
    return false;
  }
}

function sigkill(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/**
 * One kill of every process in the group: v2's `cgroup.kill` (Linux 5.14) where there is one, which
 * the kernel applies to processes forked meanwhile too; else, on v2, SIGKILL to each process while
 * the group is frozen (no fork between the read and the kill), then thawed; on v1, SIGKILL to each
 * listed process. v1 has no freezer in the groups a sandbox joins, so `emptyGroup` repeats the
 * sweep: the process limit bounds what a sweep can miss, and once the sandbox's pid 1 is dead the
 * kernel refuses every fork inside it.
 */
export function killGroup(version: 1 | 2, dir: string, listed: readonly number[] = groupPids(dir)): void {
  if (version === 2) {
    if (existsSync(path.join(dir, "cgroup.kill")) && writeIf(dir, "cgroup.kill", "1")) return;
    const frozen = existsSync(path.join(dir, "cgroup.freeze")) && writeIf(dir, "cgroup.freeze", "1");
    sigkill(frozen ? groupPids(dir) : listed);
    if (frozen) writeIf(dir, "cgroup.freeze", "0");
    return;
  }
  sigkill(listed);
}

/**
 * Kill every process of the group at `dir` and resolve once its `cgroup.procs` is empty, looking
 * again after 1, 2, 4 … 50 ms and killing what is still there; a GroupNotEmptyError naming what is
 * left once `boundMs` passed. This, not the command's exit, is when a sandbox has ended.
 */
export async function emptyGroup(version: 1 | 2, dir: string, boundMs = EMPTY_BOUND_MS): Promise<void> {
  const deadline = Date.now() + boundMs;
  for (let round = 0; ; round++) {
    const left = groupPids(dir);
    if (left.length === 0) return;
    if (round > 0 && Date.now() >= deadline) throw new GroupNotEmptyError(dir, left, boundMs);
    killGroup(version, dir, left);
    await Bun.sleep(Math.min(2 ** round, 50));
  }
}

/** Try to remove the group at `dir`: true once it is gone (or cannot be ours to remove), false while it is busy. */
function rmdirGroup(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "EBUSY";
  }
}

/** How often a group left holding processes is killed and tried again. */
const RETRY_MS = 10_000;

/**
 * Remove the group at `dir` once it is empty: nothing to wait for when `stuck` (its `empty` gave up
 * already), else `emptyGroup` first. A group that cannot be emptied stays, still holding its
 * processes' limits, and is killed and tried again every 10 s until it is gone.
 */
async function removeGroup(version: 1 | 2, dir: string, stuck: boolean): Promise<void> {
  if (stuck) killGroup(version, dir);
  const emptied = stuck ? groupPids(dir).length === 0 : await emptyGroup(version, dir).then(() => true, () => false);
  if (emptied) {
    for (let i = 0; i < 20; i++) {
      if (rmdirGroup(dir)) return;
      await Bun.sleep(Math.min(2 ** i, 50));
    }
  }
  const retry = setInterval(() => {
    killGroup(version, dir);
    if (rmdirGroup(dir)) clearInterval(retry);
  }, RETRY_MS);
  retry.unref();
}

/** A group's kill, empty and remove, sharing whether its `empty` gave up (then `remove` does not wait for it again). */
export function groupEnd(version: 1 | 2, dir: string): { killAll(): void; empty(): Promise<void>; remove(): Promise<void> } {
  let stuck = false;
  return {
    killAll: () => killGroup(version, dir),
    empty: () =>
      emptyGroup(version, dir).then(
        () => void (stuck = false),
        (e) => ((stuck = true), Promise.reject(e)),
      ),
    remove: () => removeGroup(version, dir, stuck),
  };
}

/**
 * Empty every group of one sandbox at once (on cgroup v1 its memory and pids groups hold the same
 * processes, so they run out of time together and neither is waited for twice); the first
 * GroupNotEmptyError once all have settled.
 */
export async function emptyAll(groups: ReadonlyArray<{ empty(): Promise<void> } | null | undefined>): Promise<void> {
  const settled = await Promise.allSettled(groups.map((g) => g?.empty()));
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
}
