/**
 * The settings of the runtime that runs services (config.ts's part for engines): which runtime,
 * and where the Docker Engine or the Swarm manager answers (a unix socket, or tcp:// with TLS
 * client certificates), and the ports the Swarm runtime publishes replicas on. Kept apart from
 * config.ts so that file stays one idea (the 400-line rule); its fields are part of `Config`.
 */
import path from "node:path";
import { ConfigError, oneOf, str, type Env } from "./config-values";

export interface EngineConfig {
  /** Which runtime runs services: supervised processes, one Docker Engine, or a Docker Swarm (decision 0615). */
  readonly runtime: "process" | "docker" | "swarm";
  /** Docker Engine socket for `runtime: docker` (also OPS_DOCKER_HOST's default). */
  readonly dockerSocket: string;
  /** The Engine API ops talks to for `docker` and `swarm`: `unix:///path` or `tcp://host:port`. */
  readonly dockerHost: string;
  /** TLS client certificates for a `tcp://` OPS_DOCKER_HOST (all three, or none). */
  readonly dockerTls: { readonly ca: string; readonly cert: string; readonly key: string } | null;
  /** Ports the Swarm runtime publishes replicas on (host mode, one per replica), inclusive. */
  readonly swarmPorts: { readonly first: number; readonly last: number };
  /** Marks this ops's services, containers, networks and secrets on a shared engine. */
  readonly engineInstance: string;
}

/** The variables `engineConfig` reads, in the order of CONFIG_VARIABLES. */
export const ENGINE_VARIABLES: ReadonlyArray<{ name: string; default: string; description: string }> = [
  { name: "OPS_RUNTIME", default: "process", description: "Service runtime: process (supervised, sandboxed), docker (one Docker Engine) or swarm (a Docker Swarm manager: replicas as Swarm services over its nodes)" },
  { name: "OPS_DOCKER_SOCKET", default: "/var/run/docker.sock", description: "Docker Engine socket for OPS_RUNTIME=docker" },
  { name: "OPS_DOCKER_HOST", default: "unix://<OPS_DOCKER_SOCKET>", description: "Engine API of the Docker Engine or Swarm manager: unix:///path or tcp://host:port (tcp:// wants OPS_DOCKER_TLS_*). The nodes pull from ops's registry at OPS_PUBLIC_URL's host: reachable from them, and in their insecure-registries when plain HTTP" },
  { name: "OPS_DOCKER_TLS_CA", default: "(unset)", description: "PEM file of the CA that signed the Engine's certificate (tcp:// OPS_DOCKER_HOST)" },
  { name: "OPS_DOCKER_TLS_CERT", default: "(unset)", description: "PEM file of ops's client certificate for the Engine API" },
  { name: "OPS_DOCKER_TLS_KEY", default: "(unset)", description: "PEM file of that client certificate's key" },
  { name: "OPS_ENGINE_INSTANCE", default: "ops", description: "Name that marks this ops's services, containers, networks and secrets on the engine (two estates sharing one engine or swarm set different ones; each takes on only its own after a restart)" },
  { name: "OPS_SWARM_PORTS", default: "30000-32767", description: "Ports the Swarm runtime publishes replicas on, in host mode on their node, one per replica (first-last)" },
];

/** Parse the engine settings out of `e`; relative paths are anchored at `cwd`. */
export function engineConfig(e: Env, cwd: string): EngineConfig {
  const dockerSocket = path.resolve(cwd, str(e, "OPS_DOCKER_SOCKET") ?? "/var/run/docker.sock");
  const dockerHost = str(e, "OPS_DOCKER_HOST") ?? `unix://${dockerSocket}`;
  if (!/^unix:\/\/\/\S+$/.test(dockerHost) && !/^tcp:\/\/[A-Za-z0-9.-]+:\d{1,5}$|^tcp:\/\/\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(dockerHost)) {
    throw new ConfigError("OPS_DOCKER_HOST", `expected unix:///path/to/docker.sock or tcp://host:port, got "${dockerHost}"`);
  }
  const files = (["OPS_DOCKER_TLS_CA", "OPS_DOCKER_TLS_CERT", "OPS_DOCKER_TLS_KEY"] as const).map((n) => str(e, n));
  const given = files.filter((f) => f !== null).length;
  if (given !== 0 && given !== 3) throw new ConfigError("OPS_DOCKER_TLS_CA", "OPS_DOCKER_TLS_CA, OPS_DOCKER_TLS_CERT and OPS_DOCKER_TLS_KEY go together: set all three or none");
  if (given === 3 && !dockerHost.startsWith("tcp://")) throw new ConfigError("OPS_DOCKER_TLS_CA", "TLS client certificates are for a tcp:// OPS_DOCKER_HOST");
  const [ca, cert, key] = files.map((f) => (f === null ? "" : path.resolve(cwd, f)));
  const ports = str(e, "OPS_SWARM_PORTS") ?? "30000-32767";
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(ports);
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  if (!m || first < 1024 || last > 65535 || first > last) throw new ConfigError("OPS_SWARM_PORTS", `expected a range like 30000-32767 within 1024-65535, got "${ports}"`);
  const instance = str(e, "OPS_ENGINE_INSTANCE") ?? "ops";
  if (!/^[a-z0-9][a-z0-9-]{0,30}$/.test(instance)) throw new ConfigError("OPS_ENGINE_INSTANCE", `expected lowercase letters, digits and dashes (at most 31), got "${instance}"`);
  return {
    runtime: oneOf(e, "OPS_RUNTIME", ["process", "docker", "swarm"] as const, "process"),
    dockerSocket,
    dockerHost,
    dockerTls: given === 3 ? { ca, cert, key } : null,
    swarmPorts: { first, last },
    engineInstance: instance,
  };
}
