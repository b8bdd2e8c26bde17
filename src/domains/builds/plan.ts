/**
 * What a build does, decided at clone time from the commit's `ops.toml` and the service resource,
 * and the service's build-time variables, read inside the step that runs commands.
 *
 * Build keys: a key the commit's `[services.<name>]` sets wins (the commit says how it is built);
 * otherwise the service's spec (`source.context`, `source.dockerfile`, `source.base`, `port`),
 * otherwise the defaults of DESIGN §5. A `dockerfile` (file or spec) chooses the container builder; `ops.toml`
 * paths are repository-relative, so the Dockerfile is made relative to the context for buildah.
 *
 * Build variables: every variable of the service's env group (the secret-group resource of the
 * same environment its spec names), decrypted only for the step that needs them and never stored
 * (the clone step reads them for the build's input key, which keeps only a keyed digest:
 * decision 0435); secret ones are masked in the log. Then ops's own `OPS_*` (project, environment, service,
 * commit, branch, build id), which the group cannot override. A service without an env group
 * builds with ops's variables only.
 */
import path from "node:path";
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { findResource, secretValues, specOf, type ResourceRow, type ServiceSpec } from "../resources/service";
import type { OpsDeclaration } from "../sources/service";
import type { BuildVariable } from "../../adapters/builder/types";
import type { FailureKind } from "./model";
import type { BuildRow } from "./rows";

/** A step's failure in the spec's vocabulary (`failure_kind`) with the build's error sentence. */
export class StepFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
  ) {
    super(message);
    this.name = "StepFailure";
  }
}

export interface BuildPlan {
  builder: "native" | "container";
  checks: string[];
  build: string[];
  /** The image's command (native builds). */
  start: string | null;
  port: number;
  /** Build context, repository-relative. */
  context: string;
  /** Output directory, relative to the context (native builds). */
  output: string;
  /** Dockerfile relative to the context (container builds). */
  dockerfile: string | null;
  /** Where the keys came from, for the log. */
  from: "ops.toml" | "service";
  /** Native builds on a base image: the reference and the digest the clone resolved it to (image-base.ts). */
  base?: { ref: string; repository: string; digest: string } | null;
}

/**
 * The first gate, on the text: not absolute, no `..`. The filesystem check comes when the commit
 * is checked out: steps.ts resolves the context and the Dockerfile inside it component by
 * component (src/core/inside.ts), so a symlink that leads out of the checkout is refused there.
 */
function relInside(p: string): boolean {
  return !path.isAbsolute(p) && !p.split(/[\\/]/).includes("..");
}

/** The service resource a build is for, or null when it no longer exists. */
export function serviceOf(core: Core, row: Pick<BuildRow, "projectId" | "environment" | "service">): ResourceRow | null {
  const project = core.access.findProjectById(row.projectId);
  if (!project) return null;
  return findResource(core.db, { project, environment: row.environment }, "service", row.service);
}

/** The plan of a build (see the file comment); a StepFailure (`build`) when there is nothing to build. */
export function resolvePlan(row: Pick<BuildRow, "service" | "commitSha">, spec: ServiceSpec, decl: OpsDeclaration | null): BuildPlan {
  const short = row.commitSha.slice(0, 12);
  const declared = decl?.services.find((s) => s.name === row.service) ?? null;
  const set = (key: string) => declared !== null && declared.keys.includes(key);
  const context = set("context") ? declared!.context : spec.source?.context || ".";
  const repoDockerfile = set("dockerfile") ? declared!.dockerfile : declared?.start ? null : (spec.source?.dockerfile ?? null);
  if (!relInside(context)) throw new StepFailure("build", `the build context "${context}" must be a relative path inside the repository`);
  const port = set("port") ? declared!.port : (spec.port ?? 8080);
  if (repoDockerfile) {
    const dockerfile = path.posix.relative(path.posix.normalize(context), path.posix.normalize(repoDockerfile));
    if (!relInside(dockerfile) || dockerfile === "") throw new StepFailure("build", `the Dockerfile "${repoDockerfile}" is not inside the build context "${context}"`);
    return { builder: "container", checks: declared?.check ?? [], build: [], start: null, port, context, output: ".", dockerfile, from: declared ? "ops.toml" : "service" };
  }
  if (!declared) {
    const why = decl === null ? `the repository has no ops.toml at ${short}` : `ops.toml at ${short} does not declare [services.${row.service}]`;
    throw new StepFailure("build", `${why}, and the service names no dockerfile: nothing says how to build it`);
  }
  return { builder: "native", checks: declared.check, build: declared.build, start: declared.start, port, context, output: declared.output, dockerfile: null, from: "ops.toml" };
}

/**
 * The base image a native build names (`base` in ops.toml, else the spec's `source.base`), or
 * null; a StepFailure (`build`) for a base beside a Dockerfile, whose FROM names its base.
 */
export function declaredBase(row: Pick<BuildRow, "service">, spec: ServiceSpec, decl: OpsDeclaration | null, plan: BuildPlan): string | null {
  const declared = decl?.services.find((s) => s.name === row.service) ?? null;
  const base = declared?.keys.includes("base") ? declared.base : (spec.source?.base ?? null);
  if (base && plan.builder === "container") throw new StepFailure("build", `the service names the base image "${base}" and builds a Dockerfile, whose FROM names its base: give one or the other`);
  return base;
}

export function parsePlan(text: string | null): BuildPlan | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as BuildPlan;
  } catch {
    return null;
  }
}

/**
 * The service's build variables (see the file comment). A StepFailure when the env group cannot
 * be read: `internal` while the secrets store is sealed, `build` when the group is gone.
 */
export function buildVariables(core: Core, row: BuildRow): BuildVariable[] {
  const service = serviceOf(core, row);
  if (!service) throw new StepFailure("build", `the service "${row.service}" no longer exists in ${row.environment}`);
  const spec = specOf<ServiceSpec>(service);
  const vars: BuildVariable[] = [];
  if (spec.env_group) {
    const project = core.access.findProjectById(row.projectId)!;
    const group = findResource(core.db, { project, environment: row.environment }, "secret-group", spec.env_group);
    if (!group) throw new StepFailure("build", `the env group "${spec.env_group}" of the service does not exist in ${row.environment}`);
    let values: { env: Record<string, string>; secrets: string[] };
    try {
      values = secretValues(core).groupEnv(core, core.db, group.id);
    } catch (e) {
      if (e instanceof OpsError && e.code === "sealed") throw new StepFailure("internal", `the secrets store is sealed: the env group "${spec.env_group}" cannot be read for the build (unseal it and retry)`);
      throw new StepFailure("internal", `the env group "${spec.env_group}" could not be read`);
    }
    const secret = new Set(values.secrets);
    for (const [name, value] of Object.entries(values.env)) vars.push({ name, value, secret: secret.has(value) });
  }
  const own: Record<string, string> = {
    OPS_PROJECT: row.project,
    OPS_ENVIRONMENT: row.environment,
    OPS_SERVICE: row.service,
    OPS_COMMIT_SHA: row.commitSha,
    OPS_BRANCH: row.branch ?? "",
    OPS_BUILD_ID: String(row.id),
  };
  return [...vars.filter((v) => !(v.name in own)), ...Object.entries(own).map(([name, value]) => ({ name, value, secret: false }))];
}
