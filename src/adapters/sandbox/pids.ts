/**
 * Process limits through cgroups (DESIGN §6, Limits): every build step, release step, job run and
 * replica runs in a group whose `pids.max` (`OPS_SANDBOX_PIDS`, default 512) caps the processes
 * and threads it may hold at once, so a fork bomb stays inside its sandbox instead of filling the
 * host's pid table (a per-user limit cannot do it: the sandboxes share host uids, and a host's
 * per-user limit is often above its pid maximum).
 *
 * On cgroup v2 a process is in one group only, so the limit goes into the sandbox's memory group
 * when it has one (`beside`), else into a group of its own; on v1 the pids controller is a
 * hierarchy of its own, and the sandbox joins a group there too (`joinFile`). A fork the limit
 * refused is counted by the kernel (`max` in `pids.events`), so a build that failed because of it
 * is told apart from one that failed on its own. No pids controller: the caller names the limit
 * as not enforced, with the reason.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { IMAGE_TAG, controllerHierarchies, delegateV2, enableController, sweep, type CgroupHow, type DetectOptions, type Hierarchy, type MemoryCgroup } from "./cgroups";
import { groupEnd } from "./group-end";

export interface PidsGroup {
  readonly max: number;
  readonly how: CgroupHow;
  readonly dir: string;
  /** The file a process writes to in order to join (see cgroups.ts `joinFile`); null when the limit sits in the memory group it joins anyway. */
  readonly joinFile: string | null;
  /** How many forks the limit refused so far. */
  refused(): number;
  /** SIGKILL every process still in the group (one sweep). */
  killAll(): void;
  /** Kill every process of the group and resolve once none is left; a GroupNotEmptyError past the bound (group-end.ts). */
  empty(): Promise<void>;
  /** Empty the group and remove it (only a group of its own); one that cannot be emptied stays and is tried again every 10 s (`empty` is what says so). */
  remove(): Promise<void>;
}

export type PidsAttempt = { group: PidsGroup; reason: null } | { group: null; reason: string };

function read(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** Where ops may make pids groups: v2 when its own group offers `pids`, else v1's pids hierarchy. */
export function pidsHierarchy(opts: DetectOptions = {}): Hierarchy | { reason: string } {
  const { found, reasons } = controllerHierarchies("pids", opts);
  return found[0] ?? { reason: reasons.join("; ") };
}

/** The handle of an existing group (one the previous image of ops handed over, docs/decisions/0390). */
export function openPidsGroup(version: 1 | 2, dir: string, max: number, own: boolean): PidsGroup {
  return handle(version, dir, max, own);
}

function handle(version: 1 | 2, dir: string, max: number, own: boolean): PidsGroup {
  const end = groupEnd(version, dir);
  return {
    max,
    how: version === 2 ? "cgroup-v2" : "cgroup-v1",
    dir,
    joinFile: own ? (version === 1 ? path.join(dir, "tasks") : path.join(dir, "cgroup.procs")) : null,
    refused: () => Number(/^max (\d+)$/m.exec(read(path.join(dir, "pids.events")))?.[1] ?? 0),
    killAll: end.killAll,
    empty: end.empty,
    // A limit inside the sandbox's memory group goes with that group.
    remove: async () => (own ? end.remove() : undefined),
  };
}

function makeGroup(h: Hierarchy, dir: string, max: number): PidsGroup {
  mkdirSync(dir);
  try {
    writeFileSync(path.join(dir, "pids.max"), String(max));
  } catch (e) {
    try {
      rmdirSync(dir);
    } catch {
      // Left for the sweep.
    }
    throw e;
  }
  return handle(h.version, dir, max, true);
}

const errText = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e as Error).message;
let counterN = 0;

/**
 * A pids limit of `max` for one sandbox: inside `beside` (its v2 memory group) when there is one,
 * else a group named `name` below ops's own (under `under/`, a folder swept of groups a dead ops
 * left, when given). The reason when the host has no usable pids controller.
 */
export function createPidsGroup(name: string, max: number, opts: { beside?: MemoryCgroup | null; under?: string; detect?: DetectOptions } = {}): PidsAttempt {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 200);
  const h = pidsHierarchy(opts.detect);
  if ("reason" in h) return { group: null, reason: h.reason };
  try {
    if (h.version === 2 && opts.beside?.version === 2) {
      enableController(path.dirname(opts.beside.dir), "pids");
      writeFileSync(path.join(opts.beside.dir, "pids.max"), String(max));
      return { group: handle(2, opts.beside.dir, max, false), reason: null };
    }
    if (h.version === 2) delegateV2(h.own, "pids");
    let base = h.own;
    if (opts.under) {
      base = path.join(h.own, opts.under);
      if (!existsSync(base)) mkdirSync(base, { recursive: true });
      if (h.version === 2) enableController(base, "pids");
      sweep(base);
    }
    return { group: makeGroup(h, path.join(base, opts.under ? `${process.pid}-${IMAGE_TAG}${++counterN}-${safe}` : safe), max), reason: null };
  } catch (e) {
    return { group: null, reason: `cgroup v${h.version} pids at ${h.own} is not writable (${errText(e)})` };
  }
}

/** A process limit for one sandbox started on its own (a job run): what to join, the note when it is not enforced, and its removal. */
export function sandboxPids(max: number, name: string): { joinFirst: string[]; note: string | null; release(): Promise<void> } {
  if (max <= 0) return { joinFirst: [], note: null, release: async () => {} };
  const attempt = createPidsGroup(name, max, { under: "ops-sandboxes" });
  if (!attempt.group) return { joinFirst: [], note: `process limit of ${max} is NOT enforced: ${attempt.reason}`, release: async () => {} };
  const group = attempt.group;
  return { joinFirst: group.joinFile ? [group.joinFile] : [], note: null, release: () => group.remove() };
}
