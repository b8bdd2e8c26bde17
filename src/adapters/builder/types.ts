/**
 * What the builders take and give back. The builds domain owns the state machine (queue, steps,
 * leases, the log store); a builder runs one build's commands and reports lines, timings and an
 * outcome in the spec's vocabulary (`failure_kind`).
 */
import type { SandboxIdentity } from "../sandbox/users";
import type { SandboxNetwork } from "../sandbox";

/** A build-time variable of the service. Secret values are masked in every line a build prints. */
export interface BuildVariable {
  name: string;
  value: string;
  secret: boolean;
}

/** The build states a builder runs in (the spec's state names). */
export type BuilderStep = "checks" | "building";

/** The `failure_kind`s a builder can report. */
export type BuilderFailureKind = "checks" | "build" | "memory" | "internal";

/** One line of build output. `ops` lines are the builder's own (commands, limits, verdicts). */
export interface BuildLine {
  step: BuilderStep;
  stream: "stdout" | "stderr" | "ops";
  level: "info" | "warn" | "error";
  line: string;
}

export interface StepTiming {
  step: BuilderStep;
  startedAt: number;
  finishedAt: number;
  ok: boolean;
  note?: string;
}

export interface BuildRunOptions {
  /** Every line, already masked. */
  onLine(line: BuildLine): void;
  /** Called when a step starts (the domain moves the build's state). */
  onStep?(step: BuilderStep): void;
  /** Aborting kills the whole process tree; the outcome is then `cancelled`. */
  signal?: AbortSignal;
  /** Epoch ms for timings (the Core's clock); default Date.now. */
  now?(): number;
}

/** How a memory limit was applied. */
export type MemoryEnforcement = "cgroup2" | "cgroup1" | "not enforced" | "none";

export interface BuildOutcome {
  status: "succeeded" | "failed" | "cancelled";
  failureKind: BuilderFailureKind | null;
  /** One sentence for the build's `error`; null on success. */
  error: string | null;
  /** The step that failed or was cancelled. */
  failedStep: BuilderStep | null;
  /** The command that failed (already masked). */
  failedCommand: string | null;
  timedOut: boolean;
  timings: StepTiming[];
  /** 0 to 1, or null when no dependency cache was used (see cache.ts). */
  cacheHit: number | null;
  memory: MemoryEnforcement;
}

/** Where a project's dependency caches live and what they may hold (cache.ts). */
export interface CacheCap {
  /** The project's cache folder (`cache/deps/<project>`), the image's mount point. */
  root: string;
  /** `OPS_CACHE_MAX_MB`; 0 = no cap. */
  capMb: number;
}

export interface NativeBuildSpec {
  /** The checked-out build context (absolute); mounted read-write at /app inside the sandbox. */
  contextDir: string;
  /** This build's scratch directory (absolute, writable): home, tmp and generated files go there. */
  workDir: string;
  /** The service's dependency cache directory, or null for none. */
  cacheDir: string | null;
  /** The cap the service's caches share with the rest of its project's (cache.ts); omitted: none. */
  cacheCap?: CacheCap | null;
  /** The `checks` step's commands, in order (may be empty). */
  checks: readonly string[];
  /** The build commands, in order (may be empty). */
  build: readonly string[];
  variables: readonly BuildVariable[];
  /** Memory limit of the build's processes in MiB; 0 = none. */
  memoryMb: number;
  /** Time limit of each step, in seconds. */
  stepTimeoutSecs: number;
  /** Most processes (and threads) at once, `OPS_SANDBOX_PIDS`; 0 or omitted = none. */
  pids?: number;
  /** Size of the sandbox's /tmp tmpfs in MiB, `OPS_SANDBOX_TMP_MB` (default 256). */
  tmpMb?: number;
  /** Directory packed into the image, relative to the context ("." = the context). */
  output: string;
  /** Host paths that must never be visible inside the sandbox (the data dir). */
  hide?: readonly string[];
  /** PATH used to find bwrap/setpriv on the host; default the standard system PATH. */
  toolPath?: string;
  /** The host user the sandbox runs as when ops is root: the project's own (sandbox/identity.ts); default nobody. */
  identity?: SandboxIdentity;
  /** The build's network namespace maker (sandbox/index.ts); omitted: the host's network. */
  network?: SandboxNetwork;
}

export interface NativeBuildOutcome extends BuildOutcome {
  /** The directory to pack (absolute, inside the context) when the build succeeded. */
  outputDir: string | null;
}
