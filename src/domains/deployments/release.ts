/**
 * Release steps (DESIGN §5 `ops.toml`): `[hooks] pre-deploy = ["migrate"]` fires the declared
 * step `[steps.migrate]` once per rollout of its `service`, in the new image, with the
 * environment the replicas get, before any new replica starts (a failure fails the rollout and
 * the previous digest keeps serving); `post-deploy` steps run once the new replicas serve (a
 * failure is said in the rollout's note, the rollout stays healthy).
 *
 * Which declaration: the repository's `ops.toml` at the commit the image was built from (its
 * `org.opencontainers.image.revision`, or the build's commit), read through the service's source,
 * so a rollback runs the steps of the version it rolls back to. A service without a source, or an
 * image without a commit, has no steps.
 */
import type { Core } from "../../core/core";
import { specOf, type ResourceRow, type ServiceSpec } from "../resources/service";
import { declarationAt, findSourceOfRepo } from "../sources/service";
import { runtimeOf, type RuntimeImage } from "../../adapters/runtime";
import { GroupNotEmptyError } from "../../adapters/sandbox/group-end";
import type { ServiceAddress, ServiceEnv } from "./live";
import { openRing, ringStopped } from "./logs";

export type ReleaseEvent = "pre-deploy" | "post-deploy";

export interface ReleaseStep {
  name: string;
  command: string;
}

/** How long one release step may run. */
export const RELEASE_STEP_TIMEOUT_MS = 15 * 60_000;

/** The steps `event` fires for the service at `commit`, in the hook's order. Throws when ops.toml cannot be read. */
export async function releaseSteps(core: Core, addr: ServiceAddress, service: ResourceRow, commit: string | null, event: ReleaseEvent): Promise<ReleaseStep[]> {
  const repo = specOf<ServiceSpec>(service).source?.repo;
  if (!repo || !commit || !/^[0-9a-f]{40}$/.test(commit)) return [];
  const source = findSourceOfRepo(core, addr.project.id, repo);
  if (!source) return [];
  let decl;
  try {
    decl = await declarationAt(core, source, commit);
  } catch (e) {
    throw new Error(`ops.toml of ${repo} at ${commit.slice(0, 12)} could not be read: ${(e as Error).message}`);
  }
  if (!decl) return [];
  const out: ReleaseStep[] = [];
  for (const name of decl.hooks[event] ?? []) {
    const step = decl.steps.find((s) => s.name === name);
    if (step && step.service === addr.service) out.push({ name, command: step.command });
  }
  return out;
}

/** Run one step in `image`; null when it exited 0, else why it failed. */
export async function runReleaseStep(core: Core, addr: ServiceAddress, service: ResourceRow, deploymentId: number, image: RuntimeImage, env: ServiceEnv, step: ReleaseStep): Promise<string | null> {
  const id = `${addr.project.slug}.${addr.environment}.${addr.service}.${deploymentId}-${step.name}`;
  const labels = { project: addr.project.slug, project_id: addr.project.id, environment: addr.environment, service: addr.service, deployment: String(deploymentId), step: step.name };
  openRing(core, id, labels);
  const res = await runtimeOf(core)
    .run({ id, image, command: step.command, env: env.env, masked: env.masked, memoryMb: specOf<ServiceSpec>(service).limits?.memory_mb ?? null, labels, timeoutMs: RELEASE_STEP_TIMEOUT_MS })
    .finally(() => ringStopped(core, id))
    .catch((e: unknown) => (e instanceof GroupNotEmptyError ? e : Promise.reject(e)));
  // A step whose sandbox could not be emptied has not ended as far as ops can tell (decision 0511).
  if (res instanceof GroupNotEmptyError) return `release step ${step.name} did not end: ${res.message}`;
  if (res.code === 0 && !res.timedOut) return null;
  const how = res.timedOut ? `timed out after ${RELEASE_STEP_TIMEOUT_MS / 60_000} minutes` : res.oomKilled ? "was killed over its memory limit" : res.signal ? `was ended by ${res.signal}` : `exited with code ${res.code}`;
  const last = res.tail.filter((l) => l.trim() !== "").at(-1);
  return `release step ${step.name} ${how}${last ? `: ${last.slice(0, 200)}` : ""}`;
}
