/**
 * Memory limits through cgroups, for builds and replicas alike: v2 where the host's unified
 * hierarchy offers the memory controller to ops's own group, else v1's memory controller, else
 * none — and then the caller reports the limit as not enforced with the reason, never silently.
 *
 * Groups are made below the cgroup ops runs in (its own limits still apply above them), so ops
 * works in a delegated subtree (systemd `Delegate=yes`, a container) as well as at the root. A
 * process joins its group before it execs anything (`joinArgv`, or the sandbox's root wrapper), so
 * nothing it forks escapes the limit. An OOM kill is read back from the kernel's counters
 * (`oom_kill` in v2's `memory.events`, v1's `memory.oom_control`), never guessed from an exit.
 *
 * v2's "no internal processes" rule: a group that hands controllers to its children may not hold
 * processes itself. When ops's own group holds ops, ops moves itself into a leaf `ops-server`
 * first, as container runtimes do.
 *
 * Two ways to make a group: `createMemoryCgroup` (one group directly below ops's own, named by
 * the caller: a build) and `detectMemoryController` (a controller that makes groups under
 * `<own>/ops-replicas/`, sweeping the ones a dead ops left: replicas).
 *
 * A sandbox has ended when its group is empty, not when its command exited: a run's verdict waits
 * for the group's `empty()` (group-end.ts, decision 0511).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { groupEnd } from "./group-end";

export type CgroupHow = "cgroup-v2" | "cgroup-v1";

export interface MemoryCgroup {
  readonly version: 1 | 2;
  readonly how: CgroupHow;
  readonly dir: string;
  /** The file a process writes its pid to in order to join. */
  readonly procsFile: string;
  /** How many times the kernel's OOM killer acted in this group so far. */
  oomKills(): number;
  /** True once the kernel's OOM killer killed a process of this group. */
  oomKilled(): boolean;
  /** SIGKILL every process still in the group (one sweep). */
  killAll(): void;
  /** Kill every process of the group and resolve once none is left; a GroupNotEmptyError past the bound (`emptyGroup`). */
  empty(): Promise<void>;
  /** Empty the group and remove it; one that cannot be emptied stays and is tried again every 10 s (`empty` is what says so). */
  remove(): Promise<void>;
}

export type CgroupAttempt = { cgroup: MemoryCgroup; reason: null } | { cgroup: null; reason: string };

/** A hierarchy with a memory controller, and the host directory of the cgroup ops is in. */
export interface Hierarchy {
  version: 1 | 2;
  own: string;
}

export interface MemoryController {
  readonly how: CgroupHow;
  /** The directory groups are made in. */
  readonly base: string;
  /** A new group with `limitBytes`; throws when the kernel refuses. */
  create(name: string, limitBytes: number): MemoryCgroup;
}

export type MemoryDetection = { ok: true; controller: MemoryController } | { ok: false; reason: string };

export interface DetectOptions {
  /** Contents of /proc/self/mountinfo and /proc/self/cgroup (tests pass their own). */
  mountinfo?: string;
  selfCgroup?: string;
}

export interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

export function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const line of text.split("\n")) {
    const dash = line.indexOf(" - ");
    if (dash < 0) continue;
    const left = line.slice(0, dash).split(" ");
    const right = line.slice(dash + 3).split(" ");
    out.push({ root: unescape(left[3]), mountPoint: unescape(left[4]), fsType: right[0], superOptions: (right[2] ?? "").split(",") });
  }
  return out;
}

/** mountinfo escapes spaces and friends as \\040 octal. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

function read(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

function counter(file: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, "m").exec(read(file));
  return m ? Number(m[1]) : 0;
}

export function groupDir(mount: Mount, own: string): string {
  const rel = path.posix.relative(mount.root, own);
  return rel.startsWith("..") ? mount.mountPoint : path.join(mount.mountPoint, rel);
}

/**
 * The hierarchies ops may make memory groups in (v2 first), and why the others cannot be used.
 * A v2 hierarchy counts only when ops's own group offers the memory controller.
 */
export function memoryHierarchies(opts: DetectOptions = {}): { found: Hierarchy[]; reasons: string[] } {
  return controllerHierarchies("memory", opts);
}

/**
 * The hierarchies ops may make groups with `controller` (memory, pids) in, v2 first, and why the
 * others cannot be used. A v2 hierarchy counts only when ops's own group offers the controller; a
 * v1 one is the controller's own mount.
 */
export function controllerHierarchies(controller: string, opts: DetectOptions = {}): { found: Hierarchy[]; reasons: string[] } {
  let mountinfo: string;
  let selfCgroup: string;
  try {
    mountinfo = opts.mountinfo ?? readFileSync("/proc/self/mountinfo", "utf8");
    selfCgroup = opts.selfCgroup ?? readFileSync("/proc/self/cgroup", "utf8");
  } catch {
    return { found: [], reasons: ["this system has no /proc/self/mountinfo (not Linux?)"] };
  }
  const mounts = parseMountinfo(mountinfo);
  const lines = selfCgroup
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [, , controllers, p] = /^(\d+):([^:]*):(.*)$/.exec(l) ?? [];
      return { controllers: (controllers ?? "").split(","), path: p ?? "/" };
    });
  const found: Hierarchy[] = [];
  const reasons: string[] = [];
  const unified = mounts.find((m) => m.fsType === "cgroup2");
  const ownV2 = lines.find((l) => l.controllers.length === 1 && l.controllers[0] === "");
  if (unified && ownV2) {
    const dir = groupDir(unified, ownV2.path);
    if (read(path.join(dir, "cgroup.controllers")).split(/\s+/).includes(controller)) found.push({ version: 2, own: dir });
    else reasons.push(`cgroup v2 at ${dir} offers no ${controller} controller`);
  }
  const v1 = mounts.find((m) => m.fsType === "cgroup" && m.superOptions.includes(controller));
  const ownV1 = lines.find((l) => l.controllers.includes(controller));
  if (v1 && ownV1) found.push({ version: 1, own: groupDir(v1, ownV1.path) });
  else reasons.push(`no cgroup v1 ${controller} controller is mounted`);
  return { found, reasons };
}

/** Offer v2's `controller` (memory, pids) to the children of `dir`. */
export function enableController(dir: string, controller = "memory"): void {
  if (read(path.join(dir, "cgroup.subtree_control")).split(/\s+/).includes(controller)) return;
  writeFileSync(path.join(dir, "cgroup.subtree_control"), `+${controller}`);
}

/** Hand a v2 controller down from `own`, moving ops into a leaf of its own when `own` holds it. */
export function delegateV2(own: string, controller = "memory"): void {
  try {
    enableController(own, controller);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EBUSY") throw e;
    const leaf = path.join(own, "ops-server");
    mkdirSync(leaf, { recursive: true });
    writeFileSync(path.join(leaf, "cgroup.procs"), String(process.pid));
    enableController(own, controller);
  }
}

/** The handle of an existing group (one the previous image of ops handed over, docs/decisions/0390). */
export function openMemoryCgroup(version: 1 | 2, dir: string): MemoryCgroup {
  return handle(version, dir);
}

function handle(version: 1 | 2, dir: string): MemoryCgroup {
  const oomFile = version === 2 ? path.join(dir, "memory.events") : path.join(dir, "memory.oom_control");
  return {
    version,
    how: version === 2 ? "cgroup-v2" : "cgroup-v1",
    dir,
    procsFile: path.join(dir, "cgroup.procs"),
    oomKills: () => counter(oomFile, "oom_kill"),
    oomKilled: () => counter(oomFile, "oom_kill") > 0,
    ...groupEnd(version, dir),
  };
}

/**
 * Make `dir` with its limit: no swap beyond it, and on v2 an OOM kills the whole group rather than
 * one process of it. Throws (having removed what it made) when the kernel refuses.
 */
function makeGroup(version: 1 | 2, dir: string, limitBytes: number): MemoryCgroup {
  mkdirSync(dir);
  try {
    writeFileSync(path.join(dir, version === 2 ? "memory.max" : "memory.limit_in_bytes"), String(limitBytes));
  } catch (e) {
    try {
      rmdirSync(dir);
    } catch {
      // Left for the sweep.
    }
    throw e;
  }
  const optional: Array<[string, string]> = version === 2 ? [["memory.swap.max", "0"], ["memory.oom.group", "1"]] : [["memory.memsw.limit_in_bytes", String(limitBytes)]];
  for (const [file, value] of optional) {
    if (!existsSync(path.join(dir, file))) continue;
    try {
      writeFileSync(path.join(dir, file), value);
    } catch {
      // No swap accounting, or an older kernel: the main limit holds.
    }
  }
  return handle(version, dir);
}

const errCode = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e as Error).message ?? "error";

/**
 * A fresh memory group named `name` (unique per use) directly below ops's own group, limited to
 * `limitBytes`, or the reasons no hierarchy could be used. `found` defaults to this process's.
 */
export function createMemoryCgroup(name: string, limitBytes: number, found?: readonly Hierarchy[]): CgroupAttempt {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`invalid cgroup name ${name}`);
  const detected = found ? { found, reasons: [] as string[] } : memoryHierarchies();
  const reasons = [...detected.reasons];
  if (detected.found.length === 0 && reasons.length === 0) reasons.push("no cgroup hierarchy is mounted");
  for (const h of detected.found) {
    if (h.version === 2) {
      try {
        delegateV2(h.own);
      } catch (e) {
        reasons.push(`cgroup v2: cannot delegate the memory controller below ${h.own} (${errCode(e)})`);
        continue;
      }
    }
    const dir = path.join(h.own, name);
    try {
      return { cgroup: makeGroup(h.version, dir, limitBytes), reason: null };
    } catch (e) {
      reasons.push(`cgroup v${h.version}: cannot create ${dir} (${errCode(e)})`);
    }
  }
  return { cgroup: null, reason: reasons.join("; ") };
}

/** Groups a previous ops process left behind (it died without removing them): remove the empty ones. */
export function sweep(base: string): void {
  for (const name of readdirSync(base)) {
    const pid = Number(name.split("-")[0]);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    if (existsSync(`/proc/${pid}`)) continue;
    try {
      rmdirSync(path.join(base, name));
    } catch {
      // Still busy or not ours to remove.
    }
  }
}

let counterN = 0;
/** Told apart per image of the process: groups an earlier image handed over keep their names (the pid stays across an exec). */
export const IMAGE_TAG = Date.now().toString(36);
const sanitize = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 200);

function controllerIn(h: Hierarchy): MemoryController {
  if (h.version === 2) delegateV2(h.own);
  const base = path.join(h.own, "ops-replicas");
  mkdirSync(base, { recursive: true });
  if (h.version === 2) enableController(base);
  sweep(base);
  return {
    how: h.version === 2 ? "cgroup-v2" : "cgroup-v1",
    base,
    create: (name, limitBytes) => makeGroup(h.version, path.join(base, `${process.pid}-${IMAGE_TAG}${++counterN}-${sanitize(name)}`), limitBytes),
  };
}

/** A memory controller for replicas (groups under `<own>/ops-replicas/`), or the reason there is none. */
export function detectMemoryController(opts: DetectOptions = {}): MemoryDetection {
  const { found, reasons } = memoryHierarchies(opts);
  for (const h of found) {
    try {
      return { ok: true, controller: controllerIn(h) };
    } catch (e) {
      reasons.splice(h.version === 2 ? 0 : reasons.length, 0, `cgroup v${h.version}${h.version === 1 ? " memory" : ""} at ${h.own} is not writable (${(e as Error).message})`);
    }
  }
  return { ok: false, reason: reasons.join("; ") };
}

/**
 * The file a process writes to in order to join the group of `cgroup` (a group, or its
 * `cgroup.procs` path). On v1 it is the group's `tasks`, written `0` (the writing thread): the
 * joining shell is single-threaded and everything it execs and forks inherits the group, as with
 * `cgroup.procs`, but a `cgroup.procs` write takes the kernel's global threadgroup lock for
 * writing, which waits for an RCU grace period unless another move happened just before (6-10 ms
 * on the development machine, against 0.3 ms for the thread's own move). v2 has no `tasks` in a
 * non-root group (its thread files need a threaded subtree), so it keeps `cgroup.procs` and the pid.
 */
export function joinFile(cgroup: MemoryCgroup | string): string {
  const procs = typeof cgroup === "string" ? cgroup : cgroup.procsFile;
  const version = typeof cgroup === "string" ? (existsSync(path.join(path.dirname(procs), "tasks")) ? 1 : 2) : cgroup.version;
  return version === 1 ? path.join(path.dirname(procs), "tasks") : procs;
}

/** Shell that joins the group whose join file (`joinFile`) is in `$J`: `0` to `tasks`, else the pid. */
export const JOIN_SHELL = 'case "$J" in */tasks) echo 0 > "$J" ;; *) echo $$ > "$J" ;; esac';

/**
 * The argv prefix that moves the process into a group before it execs the rest: a shell joins
 * (see `joinFile`), then execs, so every descendant starts inside the limit.
 */
export function joinArgv(cgroup: MemoryCgroup | string): string[] {
  return ["/bin/sh", "-c", `J="$0"; ${JOIN_SHELL} || { echo "ops: could not join the memory cgroup" >&2; exit 125; }; exec "$@"`, joinFile(cgroup)];
}
