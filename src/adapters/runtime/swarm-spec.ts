/**
 * What the Swarm runtime asks the manager for, as plain data (swarm.ts sends it): a service's name,
 * labels and spec for one replica or one-off run, the Swarm secret that carries its secret values,
 * and the names of a project's overlay network. Decision 0615 says why it is shaped this way.
 *
 * Secret values never enter the service's visible spec: the variables whose value is one of the
 * spec's `masked` values are written, shell-quoted, into one Swarm secret per replica, mounted at
 * /run/secrets/ops-env, and exported by a one-line /bin/sh wrapper that then execs the real command.
 * `docker service inspect` shows the wrapper, the clear variables and the secret's name; the values
 * live only in Swarm's encrypted store and the task's in-memory secret mount.
 */
import { createHash, randomBytes } from "node:crypto";
import { RuntimeError, type OneOffSpec, type ReplicaSpec } from "./types";
import type { SandboxLimits } from "./replica-env";

/** Labels every object the runtime makes carries; `dev.ops.label.<k>` are the replica's own labels. */
export const L = {
  instance: "dev.ops.instance",
  kind: "dev.ops.kind",
  replica: "dev.ops.replica",
  port: "dev.ops.port",
  network: "dev.ops.network",
  label: "dev.ops.label.",
  memory: "dev.ops.memory-mb",
  digest: "dev.ops.digest",
} as const;

/** Where the secret file is mounted, and the wrapper that exports it before the command runs. */
export const SECRET_FILE = "ops-env";
const WRAPPER = `. /run/secrets/${SECRET_FILE} && exec "$@"`;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const hash = (s: string, n: number) => createHash("sha256").update(s).digest("hex").slice(0, n);

/** A Swarm service name for a replica id (a DNS label: letters, digits, dashes; 63 at most). */
export function serviceNameOf(id: string, kind: "replica" | "run"): string {
  const slug = id.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40).replace(/-+$/, "");
  return `ops-${kind === "run" ? "run-" : ""}${slug}-${hash(id, 10)}`;
}

/** The network of a project's environment: its label (the key looked up) and the name it is created with. */
export function networkOf(labels: Record<string, string>, instance: string): { key: string; name: string; fallback: string } {
  const project = labels.project_id ?? labels.project ?? "none";
  const environment = labels.environment ?? "none";
  const key = `${project}/${environment}`;
  // A DNS label: letters, digits and dashes.
  const clean = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 24) || "x";
  const name = `ops-${clean(labels.project ?? project)}-${clean(environment)}`;
  // Taken by another project's environment (`a-b`/`c` and `a`/`b-c`) or another ops's: a name of its own.
  return { key, name, fallback: `${name}-${hash(`${instance}\n${key}`, 10)}` };
}

export interface SplitEnv {
  /** `KEY=value` of the variables whose values are not secret, PORT last. */
  clear: string[];
  /** The secret file's text (`export KEY='value'` lines), or null when nothing is secret. */
  secretFile: string | null;
}

/**
 * The replica's variables in order, later winning, then PORT; those whose final value is one of
 * `masked` go to the secret file. A name a shell could not export is refused rather than written.
 */
export function splitEnv(env: ReadonlyArray<readonly [string, string]>, masked: readonly string[], port: number | null, imageEnv: readonly string[]): SplitEnv {
  const final = new Map<string, string>();
  if (!imageEnv.some((e) => e.startsWith("HOME="))) final.set("HOME", "/tmp");
  for (const [k, v] of env) {
    if (!ENV_NAME.test(k)) throw new RuntimeError(`the variable name ${JSON.stringify(k.slice(0, 80))} is not one a process environment can hold (letters, digits and _, not starting with a digit)`);
    if (v.includes("\0")) throw new RuntimeError(`the value of ${k} holds a NUL byte`);
    final.delete(k);
    final.set(k, v);
  }
  if (port !== null) {
    final.delete("PORT");
    final.set("PORT", String(port));
  }
  const secret = new Set(masked.filter((m) => m !== ""));
  const clear: string[] = [];
  const lines: string[] = [];
  for (const [k, v] of final) {
    if (k !== "PORT" && secret.has(v)) lines.push(`export ${k}='${v.replaceAll("'", `'\\''`)}'`);
    else clear.push(`${k}=${v}`);
  }
  return { clear, secretFile: lines.length > 0 ? `${lines.join("\n")}\n` : null };
}

/** A fresh name for a replica's secret (names are unique in a swarm and a secret cannot change). */
export function secretNameOf(id: string): string {
  return `ops-env-${hash(id, 16)}-${randomBytes(4).toString("hex")}`;
}

export interface ServiceInputs {
  kind: "replica" | "run";
  instance: string;
  spec: Pick<ReplicaSpec, "id" | "image" | "command" | "labels" | "memoryMb" | "cpus"> & { env?: ReplicaSpec["env"]; masked?: readonly string[] };
  networkId: string;
  /** Published port (replicas only), and the port the app listens on in its container. */
  port: { published: number; target: number } | null;
  env: SplitEnv;
  secret: { id: string; name: string } | null;
  constraints: readonly string[];
  limits: SandboxLimits;
  graceMs: number;
  restartDelayMs: number;
  user: string | null;
}

/** The argv the task runs: the override through /bin/sh -c, else the image's; wrapped when a secret file must be read first. */
function argvOf(inputs: ServiceInputs): string[] | null {
  const { image, command } = inputs.spec;
  const argv = command ? ["/bin/sh", "-c", command] : null;
  if (!inputs.secret) return argv;
  const real = argv ?? [...image.config.entrypoint, ...image.config.cmd];
  if (real.length === 0) throw new RuntimeError(`image ${image.digest} names no command (Entrypoint or Cmd) and the service sets none`);
  return ["/bin/sh", "-c", WRAPPER, SECRET_FILE, ...real];
}

/** The service spec (`POST /services/create` body) of a replica or a one-off run. */
export function serviceSpecOf(inputs: ServiceInputs): Record<string, unknown> {
  const { spec, limits } = inputs;
  const ref = spec.image.reference;
  if (!ref) throw new RuntimeError(`image ${spec.image.digest} has no registry reference for the swarm's nodes to pull`);
  const memoryMb = spec.memoryMb ?? (limits.memoryMb || null);
  const argv = argvOf(inputs);
  const tmpBytes = (limits.tmpMb ?? 256) * 1024 * 1024;
  const labels: Record<string, string> = { [L.instance]: inputs.instance, [L.kind]: inputs.kind, [L.replica]: spec.id, [L.digest]: spec.image.digest };
  for (const [k, v] of Object.entries(spec.labels ?? {})) labels[`${L.label}${k}`] = v;
  if (inputs.port) labels[L.port] = String(inputs.port.published);
  if (memoryMb) labels[L.memory] = String(memoryMb);
  return {
    Name: serviceNameOf(spec.id, inputs.kind),
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: ref,
        Labels: { [L.replica]: spec.id },
        ...(argv ? { Command: argv, Args: [] } : {}),
        Env: inputs.env.clear,
        ...(inputs.user ? { User: inputs.user } : {}),
        // As the process runtime: the image read-only, a sized /tmp and /dev/shm, an init that passes signals on.
        ReadOnly: true,
        Init: true,
        Mounts: ["/tmp", "/dev/shm"].map((Target) => ({ Type: "tmpfs", Target, TmpfsOptions: { SizeBytes: tmpBytes, Mode: 0o1777 } })),
        StopGracePeriod: inputs.graceMs * 1_000_000,
        ...(inputs.secret ? { Secrets: [{ File: { Name: SECRET_FILE, UID: "0", GID: "0", Mode: 0o444 }, SecretID: inputs.secret.id, SecretName: inputs.secret.name }] } : {}),
      },
      Resources: {
        Limits: {
          ...(memoryMb ? { MemoryBytes: memoryMb * 1024 * 1024 } : {}),
          ...(limits.pids ? { Pids: limits.pids } : {}),
          ...(spec.cpus ? { NanoCPUs: Math.round(spec.cpus * 1e9) } : {}),
        },
      },
      RestartPolicy: inputs.kind === "run" ? { Condition: "none" } : { Condition: "any", Delay: inputs.restartDelayMs * 1_000_000, MaxAttempts: 0 },
      Placement: { Constraints: [...inputs.constraints] },
      Networks: [{ Target: inputs.networkId }],
    },
    Mode: { Replicated: { Replicas: 1 } },
    EndpointSpec: inputs.port
      ? { Mode: "dnsrr", Ports: [{ Protocol: "tcp", TargetPort: inputs.port.target, PublishedPort: inputs.port.published, PublishMode: "host" }] }
      : { Mode: "dnsrr" },
  };
}

/** The labels a replica was started with, read back off its service's labels (adoption). */
export function labelsOf(serviceLabels: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(serviceLabels)) if (k.startsWith(L.label)) out[k.slice(L.label.length)] = v;
  return out;
}

/** `OneOffSpec` as the spec builder takes it. */
export function oneOffInputs(spec: OneOffSpec): ServiceInputs["spec"] {
  return { id: spec.id, image: spec.image, command: spec.command, labels: spec.labels, memoryMb: spec.memoryMb, cpus: null, env: spec.env, masked: spec.masked };
}

/** What Swarm cannot do that the process runtime does (DESIGN §6, Limits): said in each status and limits line. */
export const SWARM_NOT_ENFORCED = [
  "outbound network is not filtered: a task reaches what its node reaches (private ranges, link-local, the nodes' addresses and the ports replicas publish there, other projects' too); only other projects' overlay networks are out of its reach (decision 0615: a firewall on the nodes closes the rest)",
  "no_new_privs is not set: a Swarm service spec of Engine 20.10 has no such field (Docker's default seccomp profile and capabilities apply)",
];

/** The `limits:` line a replica's output starts with, as the process runtime's (decision 0505). */
export function limitsLineOf(spec: Pick<ReplicaSpec, "memoryMb" | "cpus">, limits: SandboxLimits, uid: number | null): string {
  const mem = spec.memoryMb ?? (limits.memoryMb || null);
  const parts = [
    mem ? `memory ${mem} MiB (docker)` : "no memory limit",
    limits.pids ? `processes ${limits.pids} (docker)` : "no process limit",
    spec.cpus ? `cpus ${spec.cpus}` : "no CPU limit",
    `/tmp and /dev/shm ${limits.tmpMb ?? 256} MiB tmpfs each, the image read-only`,
    "Docker's seccomp profile",
    "its project's overlay network",
    uid === null ? "the image's user" : `uid ${uid}`,
  ];
  return `limits: ${parts.join("; ")}; NOT enforced: ${SWARM_NOT_ENFORCED.join("; ")}`;
}
