/**
 * The Docker runtime's containers (docker.ts) as the Engine sees them: the create body a replica
 * or a one-off gets (its limits, its labels, its published port), the labels that let a later ops
 * find and take on the containers this one made, what their inspect says in the runtime's terms,
 * whether the app in one listens yet, and what the runtime keeps about each one it watches.
 */
import { readFileSync } from "node:fs";
import { constants } from "node:os";
import type { SecretMasker } from "../../core/secret-mask";
import { listeningAddresses } from "../sandbox/proc-net";
import type { ReplicaExit, ReplicaSpec, ReplicaState, ReplicaStatus } from "./types";

/** Limits every container gets unless its spec says otherwise (ops's sandbox limits, DESIGN §6). */
export interface DockerLimits {
  /** A replica's memory without `limits.memory_mb`, MiB (`OPS_REPLICA_MEMORY_MB`; 0 = none). */
  memoryMb?: number;
  /** `PidsLimit` (`OPS_SANDBOX_PIDS`; 0 = none). */
  pids?: number;
  /** /tmp and /dev/shm as sized tmpfs, MiB (`OPS_SANDBOX_TMP_MB`; 0 = left on the container's layer). */
  tmpMb?: number;
}

/** The one `limits:` line a replica's or a one-off's output starts with (as the process runtime's). */
export function limitsText(limits: DockerLimits, mem: number | null, cpus: number | null | undefined): string {
  const parts = [mem ? `memory ${mem} MiB (docker)` : "no memory limit", limits.pids ? `processes ${limits.pids} (docker)` : "no process limit"];
  parts.push(limits.tmpMb ? `/tmp and /dev/shm ${limits.tmpMb} MiB tmpfs each` : "/tmp not sized");
  if (cpus) parts.push(`${cpus} CPUs`);
  parts.push("the engine's default seccomp profile and no_new_privs", "the engine's bridge network", "the image's user");
  return `limits: ${parts.join("; ")}`;
}

/** What DESIGN §6 asks of a replica that the engine does not give it, each with the reason. */
export function notEnforcedBy(limits: DockerLimits): string[] {
  return [
    ...(limits.tmpMb ? [] : ["/tmp is not sized: it stays on the container's layer (OPS_SANDBOX_TMP_MB is 0)"]),
    ...(limits.pids ? [] : ["the process limit is not enforced: OPS_SANDBOX_PIDS is 0"]),
    "the sandbox's network rules are not enforced: the container is on the engine's bridge network and reaches what the engine's host reaches",
    "the project's own host uid is not used: the container runs as its image's user",
  ];
}

/** Labels of ops's containers; a spec's own labels go under `dev.ops.label.`. */
export const LABEL = {
  replica: "dev.ops.replica",
  release: "dev.ops.release",
  owner: "dev.ops.owner",
  digest: "dev.ops.digest",
  containerPort: "dev.ops.container-port",
  /** Names of the variables whose values are masked (never the values: labels are public). */
  maskedEnv: "dev.ops.masked-env",
  prefix: "dev.ops.label.",
} as const;

const MiB = 1024 * 1024;

/** The memory limit a spec runs under, MiB, or null for none. */
export function memoryOf(spec: { memoryMb?: number | null }, limits: DockerLimits): number | null {
  const mb = spec.memoryMb ?? limits.memoryMb ?? 0;
  return mb > 0 ? mb : null;
}

/** `HostConfig` parts every container shares: limits, an init that passes signals on, bounded logs. */
function hostConfig(spec: { memoryMb?: number | null; cpus?: number | null }, limits: DockerLimits, graceMs: number) {
  const mem = memoryOf(spec, limits);
  const tmp = limits.tmpMb ?? 0;
  return {
    // PID 1 ignores SIGTERM unless it installs a handler: docker-init (tini) passes signals on.
    Init: true,
    ...(mem ? { Memory: mem * MiB, MemorySwap: mem * MiB } : {}),
    ...(limits.pids ? { PidsLimit: limits.pids } : {}),
    ...(spec.cpus ? { NanoCpus: Math.round(spec.cpus * 1e9) } : {}),
    ...(tmp > 0 ? { Tmpfs: { "/tmp": `rw,nosuid,nodev,size=${tmp}m` }, ShmSize: tmp * MiB } : {}),
    SecurityOpt: ["no-new-privileges"],
    LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } },
    StopTimeout: Math.max(1, Math.ceil(graceMs / 1000)),
  };
}

/** Label values of a spec's own labels, and the masked variables' names. */
function labelsOf(kind: "replica" | "release", spec: { id: string; labels?: Record<string, string>; env?: ReadonlyArray<readonly [string, string]>; masked?: readonly string[] }, owner: string, digest: string) {
  const masked = new Set(spec.masked ?? []);
  const names = [...new Set((spec.env ?? []).filter(([, v]) => masked.has(v)).map(([k]) => k))];
  return {
    [LABEL[kind]]: spec.id,
    [LABEL.owner]: owner,
    [LABEL.digest]: digest,
    [LABEL.maskedEnv]: names.join(","),
    ...Object.fromEntries(Object.entries(spec.labels ?? {}).map(([k, v]) => [LABEL.prefix + k, v])),
  };
}

/** The create body of a replica: the image's Entrypoint/Cmd unless `command`, env then PORT, its port published on `hostIp:hostPort`. */
export function replicaBody(spec: ReplicaSpec, ref: string, o: { owner: string; limits: DockerLimits; graceMs: number; hostIp: string; hostPort: number }) {
  const port = spec.containerPort ?? 8080;
  return {
    Image: ref,
    ...(spec.command ? { Entrypoint: ["/bin/sh", "-c"], Cmd: [spec.command] } : {}),
    Env: [...(spec.env ?? []).map(([k, v]) => `${k}=${v}`), `PORT=${port}`],
    Labels: { ...labelsOf("replica", spec, o.owner, spec.image.digest), [LABEL.containerPort]: String(port) },
    ExposedPorts: { [`${port}/tcp`]: {} },
    HostConfig: {
      ...hostConfig(spec, o.limits, o.graceMs),
      PortBindings: { [`${port}/tcp`]: [{ HostIp: o.hostIp, HostPort: String(o.hostPort) }] },
      // Docker restarts it after a crash (doubling from 100 ms), and after the engine restarts, whether ops runs or not.
      RestartPolicy: { Name: "unless-stopped" },
    },
  };
}

/** The create body of a one-off command: `/bin/sh -c`, never restarted, nothing published (a release step may reach out, as in the sandbox). */
export function oneOffBody(spec: { id: string; command: string; env?: ReadonlyArray<readonly [string, string]>; masked?: readonly string[]; labels?: Record<string, string>; memoryMb?: number | null; image: { digest: string } }, ref: string, o: { owner: string; limits: DockerLimits; graceMs: number }) {
  return {
    Image: ref,
    Entrypoint: ["/bin/sh", "-c"],
    Cmd: [spec.command],
    Env: (spec.env ?? []).map(([k, v]) => `${k}=${v}`),
    Labels: labelsOf("release", spec, o.owner, spec.image.digest),
    HostConfig: { ...hostConfig(spec, o.limits, o.graceMs), RestartPolicy: { Name: "no" } },
  };
}

/** What `GET /containers/{id}/json` says that the runtime reads. */
export interface ContainerInspect {
  Id: string;
  Name: string;
  RestartCount: number;
  State: { Status: string; Running: boolean; ExitCode: number; OOMKilled: boolean; StartedAt: string; FinishedAt: string; Pid: number };
  Config: { Labels: Record<string, string> | null; Env: string[] | null };
  HostConfig: { Memory: number; PortBindings: Record<string, Array<{ HostIp: string; HostPort: string }> | null> | null };
}

/** A container of ops's as the next ops takes it on: its replica id, labels, port and masked values. */
export function takenOn(info: ContainerInspect): { id: string; labels: Record<string, string>; containerPort: number; hostPort: number | null; masked: string[]; memoryMb: number | null } | null {
  const l = info.Config.Labels ?? {};
  const id = l[LABEL.replica];
  if (!id) return null;
  const containerPort = Number(l[LABEL.containerPort] ?? 8080);
  const bound = info.HostConfig.PortBindings?.[`${containerPort}/tcp`]?.[0]?.HostPort;
  const names = new Set((l[LABEL.maskedEnv] ?? "").split(",").filter(Boolean));
  const masked = (info.Config.Env ?? []).flatMap((e) => {
    const i = e.indexOf("=");
    return i > 0 && names.has(e.slice(0, i)) && e.length > i + 1 ? [e.slice(i + 1)] : [];
  });
  const labels = Object.fromEntries(Object.entries(l).filter(([k]) => k.startsWith(LABEL.prefix)).map(([k, v]) => [k.slice(LABEL.prefix.length), v]));
  return { id, labels, containerPort, hostPort: bound ? Number(bound) : null, masked, memoryMb: info.HostConfig.Memory ? Math.round(info.HostConfig.Memory / MiB) : null };
}

/** The runtime's state of a container the engine reports in `status`. */
export function stateOf(status: string): ReplicaState {
  if (status === "running") return "starting"; // running once its port is listened on
  if (status === "created") return "starting";
  if (status === "removing") return "stopping";
  return "crashed"; // restarting, exited, dead, paused
}

const SIGNALS = Object.fromEntries(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/** An exit as the engine reports it: 128 + n is signal n (137: SIGKILL). */
export function exitOf(code: number, oomKilled: boolean, at: number): ReplicaExit {
  const signal = code > 128 && code < 128 + 32 ? (SIGNALS[code - 128] ?? null) : null;
  return { code, signal, oomKilled, at };
}

/**
 * Whether the app in the container listens on `port` at an address the engine's port proxy
 * reaches (not loopback), read from the container's own socket table when the engine shares
 * ops's process view (a local engine); null when it does not, and the caller probes instead.
 * The pid is only trusted when /proc says it belongs to that container.
 */
export function containerListens(pid: number, containerId: string, port: number): boolean | null {
  if (!pid) return null;
  try {
    if (!readFileSync(`/proc/${pid}/cgroup`, "utf8").includes(containerId)) return null;
  } catch {
    return null;
  }
  // Loopback only (127.x, ::1, ::ffff:127.0.0.1) is out of the port proxy's reach.
  const loopback = (addr: string) => (addr.length === 8 ? addr.endsWith("7F") : addr === "00000000000000000000000001000000" || addr === "0000000000000000FFFF00000100007F");
  return listeningAddresses(pid, port).some((addr) => !loopback(addr));
}

/**
 * A probe for engines whose containers ops cannot look into (a remote engine, a Swarm's nodes):
 * the engine's port proxy accepts a connection whether or not the app listens, and closes it at
 * once when the app does not; one still open after `holdMs` reached the app.
 */
export async function proxiedPortAnswers(host: string, port: number, holdMs = 300): Promise<boolean> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (ok: boolean, s?: { end(): void }) => {
      if (done) return;
      done = true;
      s?.end();
      resolve(ok);
    };
    Bun.connect({
      hostname: host,
      port,
      socket: {
        open(s) {
          setTimeout(() => finish(true, s), holdMs);
        },
        data() {},
        close() {
          finish(false);
        },
        error() {
          finish(false);
        },
        connectError() {
          finish(false);
        },
      },
    }).catch(() => finish(false));
    // A node that went away answers nothing at all: give up rather than wait on the kernel's connect timeout.
    setTimeout(() => finish(false), holdMs + 2000);
  });
}

/** A container the runtime watches: its replica, its state and where its output and readiness watch are. */
export interface WatchedContainer {
  id: string;
  containerId: string;
  containerPort: number;
  status: ReplicaStatus;
  mask: SecretMasker;
  /** Bumped per run, so a stale readiness watch ends. */
  generation: number;
  /** The engine says its process runs (between a start and a die). */
  up: boolean;
  oom: boolean;
  stopping: boolean;
  logs: AbortController | null;
  /** The timestamp of the last line handed on; a follow after a restart starts there. */
  lastTs: string;
  /** Output before this (unix seconds) is not followed: 0 for a container this ops started, the take-on's time for one it took on. */
  since: number;
  logsDone: Promise<void>;
  queue: Promise<void>;
}

/** A container just started or taken on, `starting` until it listens. */
export function watchedContainer(o: { id: string; containerId: string; containerPort: number; host: string; port: number; mask: SecretMasker; memoryMb: number | null; notEnforced: string[]; labels: Record<string, string> }): WatchedContainer {
  return {
    id: o.id,
    containerId: o.containerId,
    containerPort: o.containerPort,
    mask: o.mask,
    generation: 0,
    up: false,
    oom: false,
    stopping: false,
    logs: null,
    lastTs: "",
    since: 0,
    logsDone: Promise.resolve(),
    queue: Promise.resolve(),
    status: {
      id: o.id,
      state: "starting",
      host: o.host,
      port: o.port,
      netns: null,
      pid: null,
      restarts: 0,
      startedAt: Date.now(),
      lastExit: null,
      nextRestartAt: null,
      memory: { limitMb: o.memoryMb, enforced: true, how: o.memoryMb ? "docker" : null, reason: null },
      notEnforced: o.notEnforced,
      labels: { ...o.labels },
    },
  };
}
