/**
 * The `publish` kind: a pushed tag `v<semver>` on a commit with a `modules/` tree publishes the
 * project's modules (DESIGN §5). States `queued → cloning → publishing → published` (or `failed`,
 * `cancelled`); steps `clone`, then `plan`, `crates`, `layers`, `locales`, all four in
 * `publishing`, each its own scheduler item like an image build's steps (the pipeline runs them).
 * What each publish step does is the modules domain's (`runPublishStep`); this file decides which
 * step a build is at and hands the step what it needs: the tag (kept in `branch`), the tagged
 * commit, the checked-out tree, the plan JSON the `plan` step left on the row and the pusher.
 *
 * The step a `publishing` build runs is the first of the four without a successful timing, so an
 * item enqueued again after a restart runs the step that was interrupted. A publish retry is a
 * new build of the same commit and tag: the ledger (by commit) makes its steps skip what the
 * first published.
 */
import type { Core } from "../../core/core";
import { PUBLISH_STEPS, PublishStepFailure, publishTagOf, runPublishStep, type PublishStepName } from "../modules/service";
import type { PushEvent, SourceRow } from "../sources/service";
import { StepFailure } from "./plan";
import { reachableDir } from "./lifecycle";
import { timingsOf, type BuildRow } from "./rows";
import { connectedSource, dirs, fetchIntoWorkDir, type StepContext, type StepDef, type StepDone } from "./steps";
import type { BuildState } from "./model";

/** `cloning` of a publish build: the tagged commit into `src/`. */
async function clonePublish(ctx: StepContext): Promise<StepDone> {
  const source = connectedSource(ctx, "publish");
  await fetchIntoWorkDir(ctx, source);
  return { note: `tag ${ctx.row.branch}` };
}

/** One of the four publish steps, through the modules domain. */
async function publishStep(ctx: StepContext): Promise<StepDone> {
  const { core, row } = ctx;
  if (!row.branch) throw new StepFailure("internal", "the publish build does not name its tag");
  const step = ctx.step as PublishStepName;
  try {
    const res = await runPublishStep(step, {
      core,
      projectId: row.projectId,
      tag: row.branch,
      commit: row.commitSha,
      treeDir: dirs(ctx.workDir).src,
      workDir: reachableDir(core.config.dataDir, "run", "builds", String(row.id), "work"),
      plan: row.plan,
      pusher: row.pushedBy ?? row.requestedBy,
      buildId: row.id,
      log: (level, line) => ctx.log.add(step, level, line),
      signal: ctx.signal,
    });
    return { note: res.note, ...(res.plan ? { set: { plan: res.plan } } : {}) };
  } catch (e) {
    if (!(e instanceof PublishStepFailure)) throw e;
    if (e.cancelled) return { cancelled: true };
    throw new StepFailure("publish", e.message);
  }
}

/**
 * A publish build's steps. `plan`, `crates` and `locales` run again after a stop (the ledger
 * skips what a step already put into the registries; `cargo package` runs no code of the
 * repository); `layers` runs the layers' `prepack` scripts in the sandbox, so like an image
 * build's commands it is not repeated behind the user's back: the build fails `internal` and a
 * retry resumes.
 */
const PUBLISH_STEP_DEFS: readonly StepDef[] = [
  { state: "cloning", step: "clone", run: clonePublish, killsProcesses: false, repeatable: true },
  { state: "publishing", step: "plan", run: publishStep, killsProcesses: false, repeatable: true },
  { state: "publishing", step: "crates", run: publishStep, killsProcesses: true, repeatable: true },
  { state: "publishing", step: "layers", run: publishStep, killsProcesses: true, repeatable: false },
  { state: "publishing", step: "locales", run: publishStep, killsProcesses: false, repeatable: true },
];

/** The step a publish build in `row.status` runs now, or null in any other state. */
export function publishStepOf(row: Pick<BuildRow, "status" | "stepTimings">): StepDef | null {
  if (row.status === "cloning") return PUBLISH_STEP_DEFS[0]!;
  if (row.status !== "publishing") return null;
  const done = new Set(timingsOf(row).filter((s) => s.ok === true).map((s) => s.step));
  const step = PUBLISH_STEPS.find((s) => !done.has(s));
  return PUBLISH_STEP_DEFS.find((d) => d.step === step) ?? null;
}

/** The state after a publish step succeeded; undefined after the last (the build is `published`). */
export function publishStateAfter(step: string): BuildState | undefined {
  return step === PUBLISH_STEPS.at(-1) ? undefined : "publishing";
}

/**
 * Whether a push is a publish trigger (a `v<semver>` tag on a commit with `modules/`), and the
 * tagged commit. Null for branches and every other push, and when the host cannot be read.
 */
export async function publishTriggerOf(core: Core, source: SourceRow, ev: PushEvent): Promise<{ tag: string; commit: string } | null> {
  try {
    return await publishTagOf(core, source, ev);
  } catch (e) {
    core.log.error("pushed tag could not be read: no publish build queued", { repo: ev.repo, ref: ev.ref, err: (e as Error).message });
    return null;
  }
}
