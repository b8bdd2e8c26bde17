/** The shapes of `ops doctor`'s checks (doctor.ts runs them; other files add checks of their own). */
export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** What to do when it does not hold; null when it holds. */
  fix: string | null;
}

/** The names of the checks whose verdicts say which limits hold for each kind of run (doctor-limits.ts). */
export const CHECK = {
  network: "network isolation",
  memory: "memory limit",
  pids: "process limit",
  seccomp: "seccomp",
  tmp: "sized /tmp and /dev/shm",
  disk: "build disk",
  caches: "dependency caches",
} as const;

/** The settings the checks test against (from the server's configuration). */
export interface DoctorContext {
  pids: number;
  tmpMb: number;
  buildMemoryMb: number;
  replicaMemoryMb: number;
  /** `OPS_JOB_MEMORY_MB`. */
  jobMemoryMb: number;
  /** `OPS_BUILD_MAX_DISK_MB`. */
  buildDiskMb: number;
  /** `OPS_CACHE_MAX_MB`. */
  cacheMb: number;
  /** `OPS_IMAGE_MAX_MB`. */
  imageMb: number;
  /** `OPS_RUNTIME`: who runs release steps and replicas (omitted: the process runtime). */
  runtime?: "process" | "docker" | "swarm";
  /** Data directory (checks that need a place to write use it). */
  dataDir: string;
  /** The sandboxes' network settings (OPS_SANDBOX_NETWORK and friends). */
  network?: { mode: "isolated" | "host"; publicUrl: string; allowCidrs: readonly string[]; hostPorts: readonly number[] };
  /** OPS_SANDBOX_UID_BASE. */
  uidBase?: number;
}

export type DoctorCheckFn = (ctx: DoctorContext) => DoctorCheck | Promise<DoctorCheck>;
