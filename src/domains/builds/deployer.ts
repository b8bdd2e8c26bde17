/**
 * The hand-off to deployments. Builds never imports the deployments
 * domain: deployments installs a `BuildDeployer` here from its module's `install`, and builds calls
 * it once a signed image build enters `deploying`. Without one, a build ends `healthy` after
 * signing with a note saying it was not deployed.
 */
import type { Core } from "../../core/core";
import { specOf, type ServiceSpec } from "../resources/service";
import { serviceOf } from "./plan";
import type { BuildRow } from "./rows";
import type { DeploymentOfBuild } from "./model";

/** What a deployer receives for a signed build. */
export interface DeployableBuild {
  id: number;
  /** The project's slug. */
  project: string;
  environment: string;
  service: string;
  imageDigest: string;
  imageRef: string;
  commitSha: string;
  message: string;
  author: string;
  requestedBy: string;
  trigger: string;
  sourceId: string | null;
  repo: string;
}

export interface BuildDeployer {
  /**
   * Start the rollout of the build's image; resolve once the rollout is recorded (not finished).
   * Throw an OpsError to refuse it (the build fails with `failure_kind: deploy` and the message).
   * Called again for the same build only when ops stopped before an earlier call resolved: the
   * deployer then answers from the rollout it already recorded for that build, if any.
   */
  deployBuild(core: Core, build: DeployableBuild): Promise<void>;
  /** The rollout recorded for a build (BuildDetailResponse.deployment); null when none. */
  deploymentOf?(core: Core, buildId: number): DeploymentOfBuild | null;
}

const DEPLOYER = "builds.deployer";

/** Install the deployer (the deployments module's `install` calls this). */
export function installBuildDeployer(core: Core, deployer: BuildDeployer): void {
  core.locals.set(DEPLOYER, deployer);
}

/** The installed deployer, or null. */
export function buildDeployer(core: Core): BuildDeployer | null {
  return (core.locals.get(DEPLOYER) as BuildDeployer | undefined) ?? null;
}

/** Whether a signed build deploys, or why not (DESIGN §5 "Push to deploy"). */
export function deployDecision(core: Core, row: BuildRow): { deploy: true } | { deploy: false; why: string } {
  if (row.kind !== "image") return { deploy: false, why: "not deployed: not an image build" };
  if (!buildDeployer(core)) return { deploy: false, why: "not deployed: no deployer is installed in this server" };
  const service = serviceOf(core, row);
  if (!service) return { deploy: false, why: "not deployed: the service no longer exists" };
  const spec = specOf<ServiceSpec>(service);
  if (spec.source?.repo !== row.repo) return { deploy: false, why: `not deployed: the service no longer builds from ${row.repo}` };
  if (spec.replicas === 0) return { deploy: false, why: "not deployed: the service runs 0 replicas" };
  return { deploy: true };
}
