/** The shapes of `ops doctor`'s checks (doctor.ts runs them; other files add checks of their own). */
export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** What to do when it does not hold; null when it holds. */
  fix: string | null;
}

/** The settings the checks test against (from the server's configuration). */
export interface DoctorContext {
  pids: number;
  tmpMb: number;
  buildMemoryMb: number;
  replicaMemoryMb: number;
  /** `OPS_BUILD_MAX_DISK_MB`. */
  buildDiskMb: number;
  /** Data directory (checks that need a place to write use it). */
  dataDir: string;
  /** The sandboxes' network settings (OPS_SANDBOX_NETWORK and friends). */
  network?: { mode: "isolated" | "host"; publicUrl: string; allowCidrs: readonly string[]; hostPorts: readonly number[] };
  /** OPS_SANDBOX_UID_BASE. */
  uidBase?: number;
}

export type DoctorCheckFn = (ctx: DoctorContext) => DoctorCheck | Promise<DoctorCheck>;
