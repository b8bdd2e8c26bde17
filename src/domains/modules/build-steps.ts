/**
 * What a `publish` build runs, for the builds domain to call without knowing modules: whether a
 * push is a publish trigger (`publishTagOf`), and the steps after `clone` (`plan`, `crates`,
 * `layers`, `locales`) as one function over a plain context. The plan travels between steps as
 * JSON (the build row's `plan`); a step that fails throws PublishStepFailure, whose message is the
 * build's `error` with `failure_kind: publish` (or `cancelled` when the step was cancelled).
 */
import type { Core } from "../../core/core";
import { SYSTEM_ACTOR } from "../../core/audit";
import { requireHost, repoRefOf, type SourceRow } from "../sources/service";
import { planModules, PlanRefused, tagVersion, MODULES_DIR, type ModulePlan } from "./plan";
import { publishCrates, publishLayers, publishLocales, type PublishContext } from "./publish";
import { PackFailure, type LogLine } from "./pack";

export type PublishStepName = "plan" | "crates" | "layers" | "locales";
export const PUBLISH_STEPS: readonly PublishStepName[] = ["plan", "crates", "layers", "locales"];

export interface PublishStepInput {
  core: Core;
  projectId: string;
  /** The pushed tag (`refs/tags/v1.2.0` or `v1.2.0`). */
  tag: string;
  commit: string;
  /** The checked-out commit. */
  treeDir: string;
  /** Scratch space of the build (reachable by the sandbox user). */
  workDir: string;
  /** The plan JSON the `plan` step returned; null for the `plan` step itself. */
  plan: string | null;
  /** Shown as the versions' publisher: who pushed the tag. */
  pusher: string;
  buildId: number;
  log: LogLine;
  signal?: AbortSignal;
}

export interface PublishStepResult {
  note: string;
  /** The `plan` step's plan, to store with the build. */
  plan?: string;
}

export class PublishStepFailure extends Error {
  constructor(
    message: string,
    readonly cancelled = false,
  ) {
    super(message);
    this.name = "PublishStepFailure";
  }
}

/**
 * What a push publishes, or null: a tag `v<semver>` that was created or moved (not deleted) on a
 * commit whose tree has a `modules/` directory. `commit` is the tagged commit (an annotated tag's
 * push names the tag object; the host peels it), the one a publish build checks out.
 */
export async function publishTagOf(core: Core, source: Pick<SourceRow, "repo" | "installationId">, push: { ref: string; after: string }): Promise<{ tag: string; commit: string } | null> {
  if (!push.ref.startsWith("refs/tags/") || !tagVersion(push.ref) || /^0+$/.test(push.after)) return null;
  const host = requireHost(core);
  const repo = repoRefOf(source);
  const commit = (await host.resolveRef(repo, push.after)) ?? (await host.resolveRef(repo, push.ref));
  if (!commit) return null;
  const at = await host.readFile(repo, commit, MODULES_DIR, { maxBytes: 0 });
  return at.kind === "directory" ? { tag: push.ref.slice("refs/tags/".length), commit } : null;
}

function planOf(json: string | null): ModulePlan {
  if (!json) throw new PublishStepFailure("the build has no plan (the plan step did not record one)");
  return JSON.parse(json) as ModulePlan;
}

/** Run one step of a publish build (see the file comment). */
export async function runPublishStep(step: PublishStepName, input: PublishStepInput): Promise<PublishStepResult> {
  const { core } = input;
  const project = core.access.findProjectById(input.projectId);
  if (!project) throw new PublishStepFailure("the project no longer exists");
  try {
    if (step === "plan") {
      const plan = planModules(core, { project, treeDir: input.treeDir, tag: input.tag, commit: input.commit });
      for (const line of plan.log) input.log("info", line);
      for (const m of plan.modules) {
        const halves = [m.crate && `crate ${m.crate.name}${m.crate.skip ? " (published)" : ""}`, m.layer && `layer ${m.layer.name}${m.layer.skip ? " (published)" : ""}`].filter(Boolean).join(", ");
        input.log("info", `${m.name}: ${halves}${m.requires.length ? `; requires ${m.requires.join(", ")}` : ""}${m.locales.length ? `; locales ${m.locales.map((l) => l.locale).join(", ")}` : ""}`);
      }
      return { note: `${plan.modules.length} module(s) at ${plan.version}: ${plan.modules.map((m) => m.name).join(", ")}`, plan: JSON.stringify(plan) };
    }
    const ctx: PublishContext = {
      core,
      treeDir: input.treeDir,
      workDir: input.workDir,
      log: input.log,
      signal: input.signal,
      project,
      plan: planOf(input.plan),
      by: { publisher: { name: input.pusher, operatorId: null }, actor: { ...SYSTEM_ACTOR, context: { build: input.buildId, pusher: input.pusher } } },
      buildId: input.buildId,
    };
    const report = step === "crates" ? await publishCrates(ctx) : step === "layers" ? await publishLayers(ctx) : await publishLocales(ctx);
    return { note: report.note };
  } catch (e) {
    if (e instanceof PlanRefused) {
      for (const p of e.problems) input.log("error", p);
      throw new PublishStepFailure(`the publish plan was refused: ${e.message}`);
    }
    if (e instanceof PackFailure) throw new PublishStepFailure(e.message, e.cancelled);
    throw e;
  }
}
