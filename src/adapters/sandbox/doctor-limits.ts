/**
 * What holds for each kind of run (DESIGN §6, "Every kind of run" and "Limits"; decision 0508):
 * builds, job runs, release steps, publish steps and replicas differ in which limits apply and
 * with which setting, and share the host's means to enforce them. Each kind's limits are read off
 * the host checks (doctor.ts) by name, so `ops doctor` never says a limit holds for a kind of run
 * that the check behind it found not enforced; what is not enforced is gathered for the last line.
 */
import { CHECK, type DoctorCheck, type DoctorContext } from "./doctor-types";

/** The kinds of run, in the order `ops doctor` lists them. */
export const RUN_KINDS = ["build", "job run", "release step", "publish step", "replica"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

interface Limit {
  /** What the limit is called in the list of what is not enforced. */
  what: string;
  /** The limit as this kind of run has it. */
  text: string;
  /** The host check it depends on; null when ops enforces it itself (a setting of 0 aside). */
  check: string | null;
  /** False when its setting switches it off. */
  set: boolean;
  /** What to do when it is not enforced (default: the check behind it). */
  fix?: string;
}

function limitsOf(kind: RunKind, c: DoctorContext): Limit[] {
  const memory = (mb: number, setting: string, unlessService: boolean): Limit => ({
    what: "memory",
    text: mb > 0 ? `memory ${mb} MiB (${setting}${unlessService ? ", unless limits.memory_mb says otherwise" : ""})` : `no memory limit (${setting}=0)`,
    check: CHECK.memory,
    set: mb > 0,
    fix: `set ${setting}`,
  });
  const pids: Limit = { what: "processes", text: c.pids > 0 ? `${c.pids} processes` : "no process limit (OPS_SANDBOX_PIDS=0)", check: CHECK.pids, set: c.pids > 0, fix: "set OPS_SANDBOX_PIDS" };
  const tmp: Limit = { what: "/tmp and /dev/shm", text: `/tmp and /dev/shm ${c.tmpMb} MiB each, the rest of /dev read-only`, check: CHECK.tmp, set: true };
  const seccomp: Limit = { what: "seccomp", text: "seccomp filter and no_new_privs", check: CHECK.seccomp, set: true };
  const network: Limit = { what: "network isolation", text: "a network namespace of its own", check: CHECK.network, set: true };
  const disk = (where: string): Limit => ({
    what: "disk",
    text: c.buildDiskMb > 0 ? `${where} ${c.buildDiskMb} MiB (OPS_BUILD_MAX_DISK_MB)` : `${where} not capped (OPS_BUILD_MAX_DISK_MB=0)`,
    check: CHECK.disk,
    set: c.buildDiskMb > 0,
    fix: "set OPS_BUILD_MAX_DISK_MB",
  });
  const readOnly: Limit = { what: "disk", text: "nothing else writable (the image is read-only)", check: null, set: true };
  switch (kind) {
    case "build":
      return [
        memory(c.buildMemoryMb, "OPS_BUILD_MEMORY_MB", false),
        pids,
        tmp,
        disk("build dir"),
        { what: "dependency caches", text: c.cacheMb > 0 ? `dependency caches ${c.cacheMb} MiB per project (OPS_CACHE_MAX_MB)` : "dependency caches not capped (OPS_CACHE_MAX_MB=0)", check: CHECK.caches, set: c.cacheMb > 0, fix: "set OPS_CACHE_MAX_MB" },
        { what: "image size", text: c.imageMb > 0 ? `image ${c.imageMb} MiB (OPS_IMAGE_MAX_MB)` : "image size not capped (OPS_IMAGE_MAX_MB=0)", check: null, set: c.imageMb > 0, fix: "set OPS_IMAGE_MAX_MB" },
        seccomp,
        network,
      ];
    case "job run":
      return [memory(c.jobMemoryMb, "OPS_JOB_MEMORY_MB", false), pids, tmp, disk("home"), seccomp, network];
    case "release step":
    case "replica":
      if (c.runtime === "docker") {
        // The engine runs them (src/adapters/runtime/docker.ts): its defaults, not ops's sandbox.
        const fix = "OPS_RUNTIME=process runs them in ops's sandbox, under every limit";
        return [
          { ...memory(c.replicaMemoryMb, "OPS_REPLICA_MEMORY_MB", true), check: null },
          { what: "processes", text: "no process limit (the Docker runtime sets none)", check: null, set: false, fix },
          { what: "/tmp and /dev/shm", text: "/tmp not sized (the Docker runtime leaves it on the container's layer)", check: null, set: false, fix },
        ];
      }
      if (c.runtime === "swarm") {
        // The swarm's nodes enforce them (src/adapters/runtime/swarm.ts, decision 0615), not this host.
        const fix = "Swarm 20.10 cannot: OPS_RUNTIME=process runs them in ops's sandbox";
        return [
          { ...memory(c.replicaMemoryMb, "OPS_REPLICA_MEMORY_MB", true), check: null },
          { ...pids, check: null },
          { ...tmp, check: null },
          readOnly,
          { what: "no_new_privs", text: "Docker's seccomp profile; no_new_privs not set (a Swarm 20.10 service spec has no such field)", check: null, set: false, fix },
          { what: "network isolation", text: "its project's overlay network; outbound traffic not filtered (a task reaches what its node reaches)", check: null, set: false, fix },
        ];
      }
      return [memory(c.replicaMemoryMb, "OPS_REPLICA_MEMORY_MB", true), pids, tmp, readOnly, seccomp, network];
    case "publish step":
      // `npm pack` and `cargo package` run in the native build sandbox, in the build's dir, with no dependency cache.
      return [memory(c.buildMemoryMb, "OPS_BUILD_MEMORY_MB", false), pids, tmp, disk("build dir"), seccomp, network];
  }
}

/** One entry per kind of run: its limits, each marked NOT enforced where its check failed or its setting is 0. */
export function limitsByKind(c: DoctorContext, checks: readonly DoctorCheck[]): Array<DoctorCheck & { notEnforced: string[] }> {
  const failed = new Set(checks.filter((k) => !k.ok).map((k) => k.name));
  return RUN_KINDS.map((kind) => {
    const limits = limitsOf(kind, c);
    const off = limits.filter((l) => !l.set || (l.check !== null && failed.has(l.check)));
    const detail = limits.map((l) => (off.includes(l) && l.set ? `${l.text} NOT enforced` : l.text)).join("; ");
    const fixes = [...new Set(off.map((l) => (l.set || !l.fix ? `see the ${l.check} check above` : l.fix)))];
    return { name: `${kind} limits`, ok: off.length === 0, detail, fix: off.length === 0 ? null : fixes.join("; "), notEnforced: off.map((l) => l.what) };
  });
}

/** The last line's list: each limit not enforced, with the kinds of run it leaves open; null when there is none. */
export function notEnforcedSummary(kinds: ReadonlyArray<{ name: string; notEnforced: string[] }>): string | null {
  const byLimit = new Map<string, string[]>();
  for (const k of kinds) for (const what of k.notEnforced) byLimit.set(what, [...(byLimit.get(what) ?? []), k.name.replace(/ limits$/, "")]);
  if (byLimit.size === 0) return null;
  return [...byLimit].map(([what, names]) => `${what} (${names.join(", ")})`).join("; ");
}
