/**
 * The runtime of a Core, chosen by `core.config.runtime` (OPS_RUNTIME): supervised sandboxed
 * processes (default), one Docker Engine or a Docker Swarm (engines.ts). One per server, created on first use; its replicas are
 * stopped (SIGTERM, grace, SIGKILL) when the Core closes. `prepareImage` pulls an image out of the
 * embedded registry and unpacks it for the process runtime.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { readImage } from "../../domains/registries/service";
import { createProcessRuntime } from "./process-runtime";
import { projectIdentity, sandboxNetworkOf } from "../sandbox";
import { defaultIdentity, sandboxDir } from "../sandbox/users";
import { engineRuntime, registryHost } from "./engines";
import { unpackImage, type Refusal } from "./unpack";
import { discardHandover, takeClaimedReplicas } from "./handover";
import type { HandingOverRuntime, Runtime, RuntimeHandover, RuntimeHooks, RuntimeImage } from "./types";

export type * from "./types";
export { RuntimeError } from "./types";
export { probeOnce, waitHealthy, tcpAccepts, type ProbeTarget, type ProbeResult } from "./probe";

/** Where a Core keeps its runtime (`ops serve` puts the data plane's there before the domains install). */
export const RUNTIME_LOCAL = "runtime";
const KEY = RUNTIME_LOCAL;

/**
 * A runtime that lives elsewhere (the data plane's, decision 0600) and is handed to the Core
 * before the domains install: it takes the hooks, an in-process runtime for one-off runs, and how
 * to name a project's sandbox identity when the deployments domain first asks for it.
 */
export interface AttachableRuntime extends Runtime {
  attach(hooks: RuntimeHooks, oneOffs: () => Runtime, identityOf: (labels: Record<string, string>) => { uid: number; gid: number }): void;
}

/** The in-process process runtime with ops's limits (the default runtime, and one-off runs beside a data plane). */
function processRuntime(core: Core, hooks: RuntimeHooks): HandingOverRuntime {
  return createProcessRuntime({
    graceMs: core.config.shutdownGraceMs,
    limits: { memoryMb: core.config.replicaMemoryMb, pids: core.config.sandboxPids, tmpMb: core.config.sandboxTmpMb },
    identityOf: (labels) => (labels.project_id ? projectIdentity(core, labels.project_id) : defaultIdentity()),
    network: sandboxNetworkOf(core),
    ...hooks,
  });
}

/**
 * The Core's runtime. `hooks` apply on the first call only (the deployments domain installs its
 * output and state sinks when it starts).
 */
export function runtimeOf(core: Core, hooks: RuntimeHooks = {}): Runtime {
  let runtime = core.locals.get(KEY) as Runtime | undefined;
  if (runtime) {
    if ("attach" in runtime && (hooks.onLine || hooks.onState)) {
      let oneOffs: Runtime | null = null;
      (runtime as AttachableRuntime).attach(
        hooks,
        () => {
          if (oneOffs) return oneOffs;
          const r = (oneOffs = processRuntime(core, hooks));
          core.onClose.push(() => r.stopAll(core.config.shutdownGraceMs));
          return r;
        },
        (labels) => (labels.project_id ? projectIdentity(core, labels.project_id) : defaultIdentity()),
      );
    }
    return runtime;
  }
  runtime = core.config.runtime === "process" ? processRuntime(core, hooks) : engineRuntime(core, hooks);
  core.locals.set(KEY, runtime);
  const r = runtime;
  // An engine keeps its containers running through a restart of ops (the next image takes them
  // on); a stop of ops stops them. The process runtime's replicas are handed over first on a restart.
  core.onClose.push(() => (r.kind !== "process" && core.state.closing === "restart" ? undefined : r.stopAll(core.config.shutdownGraceMs)));
  return runtime;
}

/**
 * Take on the replicas the previous image of this `ops serve` handed over across `ops restart`
 * (docs/decisions/0390; at start-up, before services are reconciled).
 */
export function adoptHandedOver(core: Core): void {
  const runtime = runtimeOf(core);
  const claimed = takeClaimedReplicas(core.config.dataDir);
  if (claimed.length === 0) return;
  if (!("adopt" in runtime)) {
    core.log.warn("the runtime cannot take on replicas; they are stopped and start again", { replicas: claimed.length });
    for (const h of claimed) void discardHandover(h, null);
    return;
  }
  const results = (runtime as HandingOverRuntime).adopt(claimed);
  for (const res of results) if (!res.adopted) core.log.warn("a replica did not survive the restart; its service starts again", { replica: res.id, reason: res.reason });
  core.log.info("replicas kept running across the restart", { adopted: results.filter((x) => x.adopted).map((x) => x.id) });
}

/**
 * At start-up, on an engine runtime: watch again the replicas a previous ops left running on the
 * engine (they outlive ops: a crash, a restart). Returns how many; 0 on the process runtime.
 */
export async function takeOnEngineReplicas(core: Core): Promise<number> {
  const runtime = runtimeOf(core);
  if (!("takeOn" in runtime)) return 0;
  try {
    return (await (runtime as Runtime & { takeOn(): Promise<unknown[]> }).takeOn()).length;
  } catch (e) {
    core.log.error("could not list the replicas kept on the engine; its services start again beside them", { err: (e as Error).message, setting: "OPS_DOCKER_HOST" });
    return 0;
  }
}

/**
 * `ops restart`: stop watching the replicas and describe them for the next image (null when the
 * runtime cannot hand over: Docker's containers are stopped as before). They leave the runtime,
 * so the close hooks no longer stop them.
 */
export function handOverReplicas(core: Core): RuntimeHandover | null {
  const runtime = core.locals.get(KEY) as Runtime | undefined;
  if (!runtime || !("handOver" in runtime)) return null;
  return (runtime as HandingOverRuntime).handOver();
}

/** Where the process runtime unpacks image roots: `run/images/` in the data dir. */
export function imagesDir(core: Core): string {
  return path.join(core.config.dataDir, "run", "images");
}

/**
 * A project's own folder of unpacked images, `run/images/<project id>/`: 0700 and owned by the
 * project's sandbox uid when ops is root (DESIGN §6 "Identity", decision 0202), so no other
 * project's sandbox user can enter it. Replicas reach their image through the root wrapper's
 * private mount (sandbox/bwrap.ts), never through this path.
 */
function projectImagesDir(core: Core, projectId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(projectId)) throw new Error(`not a project id: ${JSON.stringify(projectId)}`);
  const base = imagesDir(core);
  mkdirSync(base, { recursive: true, mode: 0o755 });
  return sandboxDir(path.join(base, projectId), projectIdentity(core, projectId));
}

/**
 * Read `<repository>:<reference>` from the embedded registry and, for the process runtime, unpack
 * it (once per digest, per project when `projectId` is given). Entries the unpacker refused are
 * logged and returned.
 */
export async function prepareImage(core: Core, repository: string, reference: string, projectId?: string): Promise<{ image: RuntimeImage; refused: Refusal[] }> {
  const pulled = await readImage(core, repository, reference);
  const image: RuntimeImage = { digest: pulled.digest, config: pulled.config };
  // The engine pulls from ops's registry itself (a plain-HTTP registry must be in its insecure-registries).
  if (core.config.runtime !== "process") return { image: { ...image, reference: `${registryHost(core)}/${repository}@${pulled.digest}` }, refused: [] };
  const unpacked = await unpackImage(projectId ? projectImagesDir(core, projectId) : imagesDir(core), pulled.digest, pulled.layers);
  if (unpacked.refused.length > 0) core.log.warn("image entries refused while unpacking", { repository, digest: pulled.digest, refused: unpacked.refused.slice(0, 20), count: unpacked.refused.length });
  return { image: { ...image, root: unpacked.root }, refused: unpacked.refused };
}
