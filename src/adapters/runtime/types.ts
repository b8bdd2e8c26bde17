/**
 * The runtime interface the deployments domain drives: start replicas of an image, watch their
 * state, stop them. Two implementations: supervised sandboxed processes (process-runtime.ts, the
 * default) and the Docker Engine (docker.ts); `core.config.runtime` chooses (see index.ts).
 *
 * A replica is one running copy of a service at one digest. The runtime owns its lifecycle: it
 * picks the port the replica listens on, restarts it with backoff when it crashes, enforces its
 * memory limit (or says that it cannot), hands its output over line by line (its secret values
 * masked), and stops it with SIGTERM, a grace period, then SIGKILL of everything it started. What
 * to run, when, and where traffic goes belong to the caller.
 */
import type { ImageConfig } from "../../domains/registries/service";
import type { CommandHandover } from "./kept";
import type { NetnsHandover } from "../sandbox/netns";

export type { ImageConfig };

/** An image, ready for a runtime: the process runtime needs `root`; Docker pulls `reference`. */
export interface RuntimeImage {
  /** The image manifest's digest. */
  digest: string;
  config: ImageConfig;
  /** Process runtime: the unpacked root (unpack.ts). */
  root?: string;
  /** Docker: a reference the engine can pull, e.g. `127.0.0.1:8080/shop/web@sha256:…`. */
  reference?: string;
}

export interface RestartPolicy {
  /** First delay after a crash (default 1 s). */
  initialMs: number;
  /** Cap of the doubling delay (default 30 s). */
  maxMs: number;
  /** A run that lasted this long resets the delay (default 60 s). */
  resetAfterMs: number;
}

export interface ReplicaSpec {
  /** Unique among the runtime's live replicas; names it in output, status and cgroups. */
  id: string;
  image: RuntimeImage;
  /** Replaces the image's Entrypoint and Cmd; run as `/bin/sh -c <command>`. */
  command?: string | null;
  /**
   * Variables applied after the image's `Env`, in order, later winning: the env group's, then the
   * unit's secrets. `PORT` is set by the runtime after all of them.
   */
  env?: ReadonlyArray<readonly [string, string]>;
  /**
   * Secret values (the env group's secret ones, the unit's secrets) masked in its output before
   * `onLine` sees it, in their encoded forms too (src/core/secret-mask.ts, decision 0516).
   */
  masked?: readonly string[];
  /** `limits.memory_mb`; null or omitted: the runtime's default (`OPS_REPLICA_MEMORY_MB`). */
  memoryMb?: number | null;
  /** Docker only: the port the app listens on in its container (default 8080). */
  containerPort?: number;
  /** Recorded with the replica: service, environment, project. */
  labels?: Record<string, string>;
  restart?: Partial<RestartPolicy>;
  /** Swarm only: placement constraints (`node.labels.zone==eu`), passed through as they are. */
  placement?: readonly string[];
  /** Engines only: CPUs it may use (0.5 = half of one); null or omitted: no limit. */
  cpus?: number | null;
}

/**
 * starting: spawned, its port not accepting connections yet. running: its port accepts
 * connections. crashed: it exited on its own and waits `nextRestartAt` to start again.
 * stopping: SIGTERM sent, within the grace period. stopped: gone for good.
 */
export type ReplicaState = "starting" | "running" | "crashed" | "stopping" | "stopped";

export interface ReplicaExit {
  code: number | null;
  signal: string | null;
  /** The kernel's OOM killer ended it: it went over its memory limit. */
  oomKilled: boolean;
  at: number;
}

export interface MemoryStatus {
  limitMb: number | null;
  /** False when a limit was asked for and nothing enforces it (`reason` says why). */
  enforced: boolean;
  how: "cgroup-v2" | "cgroup-v1" | "docker" | null;
  reason: string | null;
}

export interface ReplicaStatus {
  id: string;
  state: ReplicaState;
  /** Where the ingress reaches it. */
  host: string;
  port: number;
  /** Its network namespace, when the ingress may connect inside it instead (decision 0601). */
  netns?: { path: string; ident: string } | null;
  /** The pid ops started (the sandbox's outer process), while one runs. */
  pid: number | null;
  /** Restarts after crashes so far. */
  restarts: number;
  /** When the current (or last) run started, ms since the epoch. */
  startedAt: number | null;
  lastExit: ReplicaExit | null;
  nextRestartAt: number | null;
  memory: MemoryStatus;
  /** The limits the host could not enforce for it, each with the reason (DESIGN §6, Limits); empty when all hold. */
  notEnforced: string[];
  labels: Record<string, string>;
  /** Swarm: the node its current task runs on (the log store's host), null until placed. */
  node?: { id: string; name: string; addr: string; task: string } | null;
}

/** ops's own notes about a replica (started, crashed, restarting, not enforced…) use stream "ops". */
export type OutputStream = "stdout" | "stderr" | "ops";

export interface RuntimeHooks {
  /**
   * Every line a replica writes, and ops's notes about it. `meta` comes with lines that were kept
   * for a while (the data plane's spool, decision 0600): the replica's labels and when it wrote them.
   */
  onLine?(replicaId: string, stream: OutputStream, line: string, meta?: { labels: Record<string, string>; at: number }): void;
  /** Every state change. */
  onState?(status: ReplicaStatus): void;
  /** Resolves once every line handed to `onLine` so far is in the log store (a data plane then forgets them). */
  stored?(): Promise<void>;
}

/** A one-off command in an image (a release step): run to completion, never restarted. */
export interface OneOffSpec {
  id: string;
  image: RuntimeImage;
  /** Run as `/bin/sh -c <command>`. */
  command: string;
  env?: ReadonlyArray<readonly [string, string]>;
  /** As `ReplicaSpec.masked`: masked in its output and in the result's `tail`. */
  masked?: readonly string[];
  memoryMb?: number | null;
  labels?: Record<string, string>;
  /** Stopped (SIGTERM, then SIGKILL) past this. */
  timeoutMs: number;
}

export interface OneOffResult {
  code: number | null;
  signal: string | null;
  oomKilled: boolean;
  timedOut: boolean;
  /** The last lines it wrote (stdout and stderr), for a message. */
  tail: string[];
}

export interface Runtime {
  readonly kind: "process" | "docker" | "swarm";
  /**
   * Engines with nodes (Swarm): whether `count` more replicas of this memory limit and placement fit
   * beside those running (start-first), or the ones they replace must stop first (stop-first).
   * Omitted: one host, always start-first.
   */
  room?(want: { memoryMb: number | null; placement: readonly string[] }, count: number): Promise<{ mode: "start-first" | "stop-first"; why: string }>;
  /** Start a replica; resolves once it was spawned (state starting). 409-style error for a live id. */
  start(spec: ReplicaSpec): Promise<ReplicaStatus>;
  status(id: string): ReplicaStatus | null;
  /** Live replicas (not yet stopped). */
  list(): ReplicaStatus[];
  /** SIGTERM, `graceMs` (default 10 s), SIGKILL of the whole tree; resolves with its last status once gone. */
  stop(id: string, graceMs?: number): Promise<ReplicaStatus | null>;
  /** Stop every replica (shutdown). */
  stopAll(graceMs?: number): Promise<void>;
  /** Run a one-off command in an image to completion (its output goes to `onLine` under `id`). */
  run(spec: OneOffSpec): Promise<OneOffResult>;
}

/**
 * A live replica as the next image of ops takes it on after an exec (docs/decisions/0390): its
 * spec (environment included: the hand-over lives in a memfd, never on disk), its state, its
 * groups, its network namespace and its process with its output pipes.
 */
export interface ReplicaHandover {
  spec: ReplicaSpec;
  status: ReplicaStatus;
  policy: RestartPolicy;
  delayMs: number;
  oomBase: number;
  cgroup: { version: 1 | 2; dir: string } | null;
  pids: { version: 1 | 2; dir: string; max: number; own: boolean } | null;
  netns: NetnsHandover | null;
  command: CommandHandover;
}

/** What `handOver` gives the exec: the replicas, and every descriptor that must stay open across it. */
export interface RuntimeHandover {
  replicas: ReplicaHandover[];
  fds: number[];
}

/** Replicas that keep running while ops re-executes itself (the process runtime). */
export interface HandingOverRuntime extends Runtime {
  /** Stop watching every live replica and describe it for the next image; they leave this runtime (stopAll no longer stops them). */
  handOver(): RuntimeHandover;
  /** Take on the replicas the previous image handed over; what was not adoptable is stopped and cleaned up, with the reason. */
  adopt(replicas: readonly ReplicaHandover[]): Array<{ id: string; adopted: boolean; reason: string | null }>;
}

export class RuntimeError extends Error {}
