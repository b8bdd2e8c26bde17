/**
 * The modules domain's surface for other domains. A publish build runs, over a checked-out tag:
 *
 *   const plan = planModules(core, { project, treeDir, tag, commit });   // PlanRefused: every problem
 *   await publishCrates(ctx); await publishLayers(ctx); await publishLocales(ctx);  // PackFailure
 *
 * with `ctx` a PublishContext (the plan, the tree, a scratch dir, a log sink, the publisher and the
 * system actor). Image builds report what their lockfiles resolved from ops's registries with
 * `resolutionsIn` + `recordConsumers`. The builds domain needs only `publishTagOf` (is this push
 * a publish trigger, and which commit) and `runPublishStep` (steps plan, crates, layers, locales
 * over a plain context; PublishStepFailure = `failure_kind: publish`).
 */
export { planModules, tagVersion, hasModulesTree, PlanRefused, MODULES_DIR, type ModulePlan, type PlannedModule, type PlanInput } from "./plan";
export { publishCrates, publishLayers, publishLocales, publishModules, PackFailure, type PublishContext, type StepReport } from "./publish";
export { recordConsumers, type Resolution } from "./store";
export { resolutionsIn } from "./lockfiles";
export { publishTagOf, runPublishStep, PublishStepFailure, PUBLISH_STEPS, type PublishStepName, type PublishStepInput, type PublishStepResult } from "./build-steps";
