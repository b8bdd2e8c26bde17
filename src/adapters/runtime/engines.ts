/**
 * The engine runtimes of a Core (OPS_RUNTIME=docker or swarm, decision 0615), made from its
 * settings: the Engine API at OPS_DOCKER_HOST (TLS client certificates for tcp://), the sandbox
 * limits every runtime applies, each project's uid, and the credentials the engine's nodes pull
 * with: a pull-only token of the one repository of the image they are asked to run, issued by ops's
 * registry (the engine is asked to run only images ops has verified). A Swarm keeps that token with
 * the service and pulls again with it whenever it places the task on a node without the image (a
 * node lost days later), so it lives `PULL_TTL_SECONDS`; a single engine pulls at once.
 * `OPS_DOCKER_HOST` may name a socket other than OPS_DOCKER_SOCKET's default: it wins.
 */
import type { Core } from "../../core/core";
import { issueRuntimePullToken } from "../../domains/registries/service";
import { projectIdentity } from "../sandbox";
import { createDockerRuntime, type DockerRuntime } from "./docker";
import type { RegistryCredentials } from "./docker-oneoff";
import { createSwarmRuntime, type SwarmRuntime } from "./swarm";
import type { RuntimeHooks } from "./types";

/** How long a Swarm service's pull credentials hold (7 days); a deploy or rollback issues new ones. */
export const PULL_TTL_SECONDS = 7 * 24 * 3600;
/** A single engine pulls while ops waits. */
const DOCKER_PULL_TTL_SECONDS = 300;

/** Where a replica's secret values come from when a new ops takes on its Swarm service (set by the deployments domain). */
export const MASKED_OF_LOCAL = "runtime.maskedOf";
export type MaskedOf = (labels: Record<string, string>) => readonly string[] | null;

/** The host (and port) the nodes reach ops's registry at: OPS_PUBLIC_URL's. */
export function registryHost(core: Core): string {
  return new URL(core.config.publicUrl).host;
}

/** Pull credentials for `ref` (`<registry host>/<project>/<service>@sha256:…`): only images of ops's own registry get any. */
function pullCredentials(core: Core, ttl: number): (ref: string) => Promise<RegistryCredentials> {
  return async (ref) => {
    const host = registryHost(core);
    const at = ref.indexOf("@");
    if (!ref.startsWith(`${host}/`) || at < 0) throw new Error(`ops gives registry credentials only for images of its own registry (${host}), not ${ref}`);
    return { registrytoken: await issueRuntimePullToken(core, ref.slice(host.length + 1, at), ttl), serveraddress: host };
  };
}

export function engineRuntime(core: Core, hooks: RuntimeHooks): DockerRuntime | SwarmRuntime {
  const c = core.config;
  const limits = { memoryMb: c.replicaMemoryMb, pids: c.sandboxPids, tmpMb: c.sandboxTmpMb };
  const engine = { host: c.dockerHost, tls: c.dockerTls };
  if (c.runtime === "swarm") {
    return createSwarmRuntime({
      host: c.dockerHost,
      tls: c.dockerTls,
      registryAuth: pullCredentials(core, PULL_TTL_SECONDS),
      graceMs: c.shutdownGraceMs,
      ports: c.swarmPorts,
      limits,
      identityOf: (labels) => (labels.project_id ? projectIdentity(core, labels.project_id) : null),
      maskedOf: (labels) => (core.locals.get(MASKED_OF_LOCAL) as MaskedOf | undefined)?.(labels) ?? null,
      instance: c.engineInstance,
      ...hooks,
    });
  }
  return createDockerRuntime({ engine, registryAuth: pullCredentials(core, DOCKER_PULL_TTL_SECONDS), graceMs: c.shutdownGraceMs, limits, owner: c.engineInstance, ...hooks });
}
