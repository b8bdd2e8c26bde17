/**
 * Deploy and rollback by hand: which digest, whether ops will run it (signed by the estate key,
 * verified here against the signature in the registry, never a flag), and the recorded rollout.
 *
 * 404 no such project, environment, service or build, or nothing to roll back to; 409 a rollout
 * in flight, a build of the service between `deploying` and its verdict, an external registry
 * (`OPS_REGISTRY`: the runtime pulls from the embedded one), an archived project; 422 no digest,
 * a digest that is not `sha256:<hex>`, a build without an image, a digest the estate key did
 * not sign, or a native image without a base on an engine runtime (runnable.ts; both recorded as
 * `refused`, with a notice).
 */
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { OpsError } from "../../core/errors";
import { assertNotArchived } from "../access/service";
import { getResourceRow, placeFor } from "../resources/service";
import { verifyImageSignature } from "../builds/service";
import { readImage } from "../registries/service";
import { recordRefusal, recordRollout, assertNoRolloutInFlight, type RolloutRequest } from "./record";
import { healthyDigests, newestOfDigest, repositoryOf, serviceRun, shortDigest, toDeploymentResponse } from "./rows";
import type { ServiceAddress } from "./live";
import type { DeployRequest, DeploymentResponse, RollbackRequest } from "./model";
import { buildForDeploy, assertNoBuildAwaitingVerdict } from "./builds";
import { assertRunnableHere } from "./runnable";

const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** Messages ops writes itself (not a commit's): a rollback does not repeat them. */
const GENERATED = /^(Deploy sha256:[0-9a-f]+ by hand|Roll back to |Restart: )/;

function invalid(path: string, message: string): OpsError {
  return new OpsError("validation_failed", message, { fields: [{ path, message }] });
}

/** The service (404) and the checks every hand rollout shares (409). */
function prepare(core: Core, project: ProjectRef, environment: string | undefined, name: string): ServiceAddress {
  const place = placeFor(project, "service", environment);
  getResourceRow(core.db, place, "service", name);
  const addr: ServiceAddress = { project, environment: place.environment as string, service: name };
  assertNotArchived(project);
  if (core.config.registry !== null) {
    throw new OpsError("conflict", `The registry is not configured for deploys: OPS_REGISTRY names ${core.config.registry}, and ops runs images from its embedded registry only.`, { registry: core.config.registry });
  }
  assertNoRolloutInFlight(core.db, addr);
  assertNoBuildAwaitingVerdict(core, addr, null);
  return addr;
}

/** The commit an image says it was built from (`org.opencontainers.image.revision`), or null. */
async function imageCommit(core: Core, repository: string, digest: string): Promise<string | null> {
  try {
    return (await readImage(core, repository, digest)).config.labels["org.opencontainers.image.revision"] ?? null;
  } catch {
    return null;
  }
}

/** Verify the signature; a digest the estate key did not sign is recorded as refused and is a 422. */
async function assertSigned(core: Core, req: RolloutRequest): Promise<void> {
  const check = await verifyImageSignature(core, repositoryOf(req.addr), req.digest);
  if (check.ok) return;
  const reason = `not signed by the ops key: ${check.reason}`;
  const row = recordRefusal(core, req, reason);
  throw new OpsError("refused", `Refused to deploy ${shortDigest(req.digest)}: ${check.reason}.`, { digest: req.digest, deployment: row.id });
}

/** POST …/resources/service/{name}/deploy. */
export async function deployService(core: Core, project: ProjectRef, environment: string | undefined, name: string, body: DeployRequest, auth: AuthContext): Promise<DeploymentResponse> {
  const addr = prepare(core, project, environment, name);
  const hasDigest = body.digest !== undefined && body.digest !== null && body.digest !== "";
  const hasBuild = body.build_id !== undefined && body.build_id !== null;
  if (!hasDigest && !hasBuild) throw invalid("digest", "Give the digest to deploy, or the build_id whose image to deploy.");
  if (hasDigest && hasBuild) throw invalid("digest", "Give a digest or a build_id, not both.");
  const actor = actorOf(auth.principal, auth.meta);
  const who = auth.principal.email ?? auth.principal.name;
  let req: RolloutRequest;
  if (hasBuild) {
    const build = buildForDeploy(core, addr, body.build_id as number);
    req = { addr, digest: build.digest, trigger: "manual", buildId: build.id, commitSha: build.commitSha, message: build.message, author: build.author, actor, createdBy: who };
  } else {
    const digest = body.digest as string;
    if (!DIGEST.test(digest)) throw invalid("digest", `"${digest.slice(0, 80)}" is not a manifest digest (sha256:<64 hex>).`);
    const commit = await imageCommit(core, repositoryOf(addr), digest);
    const earlier = newestOfDigest(core.db, project.id, addr.environment, name, digest);
    req = { addr, digest, trigger: "manual", commitSha: commit ?? earlier?.commitSha ?? null, message: earlier?.message ?? `Deploy ${shortDigest(digest)} by hand`, author: who, actor, createdBy: who };
  }
  await assertSigned(core, req);
  await assertRunnableHere(core, req);
  return toDeploymentResponse(recordRollout(core, req), project.slug);
}

/** POST …/resources/service/{name}/rollback: to the given digest, or the newest healthy one that is not current. */
export async function rollbackService(core: Core, project: ProjectRef, environment: string | undefined, name: string, body: RollbackRequest | undefined, auth: AuthContext): Promise<DeploymentResponse> {
  const addr = prepare(core, project, environment, name);
  const current = serviceRun(core.db, project.id, addr.environment, name)?.currentDigest ?? null;
  let digest = body?.digest ?? null;
  if (digest !== null && digest !== "") {
    if (!DIGEST.test(digest)) throw invalid("digest", `"${digest.slice(0, 80)}" is not a manifest digest (sha256:<64 hex>).`);
  } else {
    digest = healthyDigests(core.db, project.id, addr.environment, name).find((d) => d !== current) ?? null;
    if (!digest) throw new OpsError("not_found", `Nothing to roll back to: ${name} has no healthy digest other than the current one in ${addr.environment}.`);
  }
  const actor = actorOf(auth.principal, auth.meta);
  const who = auth.principal.email ?? auth.principal.name;
  const earlier = newestOfDigest(core.db, project.id, addr.environment, name, digest);
  const commit = earlier?.commitSha ?? (await imageCommit(core, repositoryOf(addr), digest));
  const req: RolloutRequest = {
    addr,
    digest,
    trigger: "rollback",
    commitSha: commit,
    message: `Roll back to ${shortDigest(digest)}${earlier && !GENERATED.test(earlier.message) ? `: ${earlier.message}` : ""}`.slice(0, 500),
    author: who,
    actor,
    createdBy: who,
  };
  await assertSigned(core, req);
  await assertRunnableHere(core, req);
  return toDeploymentResponse(recordRollout(core, req), project.slug);
}
