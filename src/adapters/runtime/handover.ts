/**
 * The hand-over of live replicas from one image of `ops serve` to the next across `ops restart`'s
 * exec (docs/decisions/0390). The old image writes the replicas (their environment included) as
 * JSON into a memfd, clears FD_CLOEXEC on it and on every descriptor the replicas live by, and
 * names the memfd in OPS_HANDOVER_FD; the new image claims it first thing (`claimHandover`, which
 * makes those descriptors close-on-exec again before anything is spawned) and the runtime adopts
 * the replicas when it is created. Nothing is written to disk, so there is no stale hand-over: a
 * hand-over that does not name this very process (pid and start time) is refused and what it
 * names is stopped, never adopted.
 */
import { closeSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Netns, SandboxNetwork } from "../sandbox";
import { openMemoryCgroup, type MemoryCgroup } from "../sandbox/cgroups";
import { openPidsGroup, type PidsGroup } from "../sandbox/pids";
import { closeFd, fdIdentity, memfdWith, reapChild, setCloexec, startTimeOf } from "./fds";
import { notAdoptable, type KeptCommand } from "./kept";
import type { ReplicaHandover, RuntimeHandover } from "./types";

export const HANDOVER_ENV = "OPS_HANDOVER_FD";

/** Bumped when the hand-over's shape changes: a binary refuses (and stops) what it cannot read, and starts the services again. */
export const HANDOVER_FORMAT = 1;

interface HandoverFile {
  format: number;
  ops: { pid: number; start: string; dataDir: string };
  replicas: ReplicaHandover[];
}

/** Write `h` for the next image: returns the memfd and the environment entry naming it; call right before execve. */
export function prepareHandover(dataDir: string, h: RuntimeHandover): { env: Record<string, string>; fds: number[] } {
  const body: HandoverFile = { format: HANDOVER_FORMAT, ops: { pid: process.pid, start: startTimeOf(process.pid) ?? "", dataDir: path.resolve(dataDir) }, replicas: h.replicas };
  const fd = memfdWith(JSON.stringify(body));
  const fds = [...h.fds, fd];
  for (const f of fds) setCloexec(f, false);
  return { env: { [HANDOVER_ENV]: String(fd) }, fds };
}

let claimed: { dataDir: string; replicas: ReplicaHandover[] } | null = null;

/** Every descriptor a replica's hand-over names that is still what it was. */
function ownFds(r: ReplicaHandover): number[] {
  const named = [r.command.stdout, r.command.stderr, ...(r.netns?.fds ?? [])];
  return named.filter((f) => f.ident !== "" && fdIdentity(f.fd) === f.ident).map((f) => f.fd);
}

/**
 * At start-up, before anything is spawned: read the hand-over the previous image left (if any),
 * make its descriptors close-on-exec again, and keep it for the runtime. Returns why it was
 * refused when it does not belong to this process and data dir (its replicas are then stopped).
 */
export function claimHandover(dataDir: string, env: Record<string, string | undefined> = process.env): { replicas: number; refused: string | null } | null {
  const raw = env[HANDOVER_ENV];
  if (raw === undefined) return null;
  delete env[HANDOVER_ENV];
  const fd = Number(raw);
  let file: HandoverFile;
  try {
    file = JSON.parse(readFileSync(fd, "utf8")) as HandoverFile;
    closeSync(fd);
  } catch (e) {
    return { replicas: 0, refused: `could not read the hand-over (fd ${raw}): ${(e as Error).message}` };
  }
  if (file.format !== HANDOVER_FORMAT || !Array.isArray(file.replicas)) {
    // Another version's hand-over: its descriptors are unknown here, so only its processes can be ended.
    for (const r of Array.isArray(file.replicas) ? file.replicas : []) if (r?.command?.pid && startTimeOf(r.command.pid) === r.command.pidStart) signal(-r.command.pid, "SIGKILL");
    return { replicas: 0, refused: `it is of another format (${String(file.format)}, this binary reads ${HANDOVER_FORMAT})` };
  }
  for (const r of file.replicas) for (const f of ownFds(r)) setCloexec(f, true);
  const refused =
    file.ops.pid !== process.pid || file.ops.start !== startTimeOf(process.pid)
      ? `it names another process (pid ${file.ops.pid})`
      : file.ops.dataDir !== path.resolve(dataDir)
        ? `it is of another data dir (${file.ops.dataDir})`
        : null;
  if (refused !== null) {
    // What an ops that is gone left is stopped; a live one's replicas are its own business.
    if (startTimeOf(file.ops.pid) !== file.ops.start) for (const r of file.replicas) void discardHandover(r, null);
    return { replicas: file.replicas.length, refused };
  }
  claimed = { dataDir: path.resolve(dataDir), replicas: file.replicas };
  return { replicas: file.replicas.length, refused: null };
}

/** The claimed replicas of `dataDir`, once (the runtime adopts them). */
export function takeClaimedReplicas(dataDir: string): ReplicaHandover[] {
  if (!claimed || claimed.dataDir !== path.resolve(dataDir)) return [];
  const { replicas } = claimed;
  claimed = null;
  return replicas;
}

const signal = (pid: number, sig: NodeJS.Signals) => {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
};

/**
 * Stop a handed-over replica that is not adopted, and release what is ours of it: its process
 * group (only when its pid is still that process), its namespace (through `netns` when it was
 * taken on, else its descriptors and pasta), its groups. Never touches a descriptor or a pid that
 * is something else now.
 */
export async function discardHandover(h: ReplicaHandover, netns: Netns | null): Promise<void> {
  const alive = startTimeOf(h.command.pid) === h.command.pidStart;
  if (alive) signal(-h.command.pid, "SIGKILL");
  for (const p of [h.command.stdout, h.command.stderr]) if (p.ident !== "" && fdIdentity(p.fd) === p.ident) closeFd(p.fd);
  if (netns) await netns.close();
  else if (h.netns) {
    for (const f of h.netns.fds) if (f.ident !== "" && fdIdentity(f.fd) === f.ident) closeFd(f.fd);
    const pasta = h.netns.pasta;
    if (startTimeOf(pasta.pid) === pasta.start) {
      await Bun.sleep(500);
      if (startTimeOf(pasta.pid) === pasta.start) signal(pasta.pid, "SIGKILL");
      for (let i = 0; i < 50 && reapChild(pasta.pid) === null; i++) await Bun.sleep(20);
    }
  }
  if (h.cgroup) await openMemoryCgroup(h.cgroup.version, h.cgroup.dir).remove();
  if (h.pids) await openPidsGroup(h.pids.version, h.pids.dir, h.pids.max, h.pids.own).remove();
  if (alive) {
    for (let i = 0; i < 50 && reapChild(h.command.pid) === null; i++) await Bun.sleep(20);
  }
}

/** What a live replica's hand-over holds, and the descriptors it needs kept open across the exec. */
export function replicaHandover(
  r: { spec: ReplicaHandover["spec"]; status: ReplicaHandover["status"]; policy: ReplicaHandover["policy"]; delayMs: number; oomBase: number; cgroup: MemoryCgroup | null; pids: PidsGroup | null; netns: Netns | null },
  run: KeptCommand,
): { record: ReplicaHandover; fds: number[] } {
  const command = run.handOver();
  const netns = r.netns?.handOver() ?? null;
  return {
    record: {
      spec: r.spec,
      status: { ...r.status, labels: { ...r.status.labels } },
      policy: r.policy,
      delayMs: r.delayMs,
      oomBase: r.oomBase,
      cgroup: r.cgroup ? { version: r.cgroup.version, dir: r.cgroup.dir } : null,
      pids: r.pids ? { version: r.pids.how === "cgroup-v2" ? 2 : 1, dir: r.pids.dir, max: r.pids.max, own: r.pids.joinFile !== null } : null,
      netns,
      command,
    },
    fds: [command.stdout.fd, command.stderr.fd, ...(netns?.fds.map((f) => f.fd) ?? [])],
  };
}

/** Whether a handed-over replica can be taken on: its namespace and groups when it can, the reason when not. */
export function adoptableParts(
  h: ReplicaHandover,
  network: SandboxNetwork | undefined,
  taken: boolean,
): { reason: string; netns: Netns | null } | { reason: null; netns: Netns | null; cgroup: MemoryCgroup | null; pids: PidsGroup | null } {
  const reason = taken ? `a replica ${h.spec.id} already runs here` : notAdoptable(h.command);
  if (reason !== null) return { reason, netns: null };
  let netns: Netns | null = null;
  if (h.netns) {
    const n = network ? network.adopt(h.netns) : "this runtime has no sandbox network";
    if (typeof n === "string") return { reason: `its network: ${n}`, netns: null };
    netns = n;
  }
  return {
    reason: null,
    netns,
    cgroup: h.cgroup ? openMemoryCgroup(h.cgroup.version, h.cgroup.dir) : null,
    pids: h.pids ? openPidsGroup(h.pids.version, h.pids.dir, h.pids.max, h.pids.own) : null,
  };
}
