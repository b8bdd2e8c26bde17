/**
 * The steps of an image build, one function per working state: clone the commit and decide the
 * plan, run the checks, build (native builder or container builder), scan the image's files for
 * secrets, pack and push the image, sign it. Each reads what earlier steps left in the build's
 * work dir and on its row, so a step can run in another scheduler item (or after a restart) than
 * the one before it. A failure is a `StepFailure` in the spec's vocabulary; a killed process tree
 * answers `cancelled`.
 *
 * Work dir layout (`run/builds/<id>/`): `src/` the commit, `work/` the builder's scratch (home,
 * tmp, buildah's layout), `image/` the packed layer, `scan/` a container image unpacked for the
 * scan.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { SYSTEM_ACTOR } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { PathRefused, resolveInsideOrNull } from "../../core/inside";
import { runNativeBuild, resolveOutput } from "../../adapters/builder/native";
import { projectCache } from "../../adapters/builder/cache";
import { runContainerBuild, readLayout, type ContainerImage } from "../../adapters/builder/container";
import type { BuildLine, BuildOutcome, BuildVariable } from "../../adapters/builder/types";
import { unpackImage } from "../../adapters/runtime/unpack";
import { specOf, type ServiceSpec } from "../resources/service";
import { declarationAt, fetchCommit, sourceById, OpsTomlError, type SourceRow } from "../sources/service";
import { pushImage, registryService, type PushBlob } from "../registries/service";
import { recordConsumers, resolutionsIn } from "../modules/service";
import { signImage } from "./signing";
import { scanImageFiles, describeHits } from "./secret-scan";
import { buildVariables, declaredBase, parsePlan, resolvePlan, serviceOf, StepFailure, type BuildPlan } from "./plan";
import { packNative, refuseOversized, resolveBase } from "./image-push";
import { reachableDir } from "./lifecycle";
import { mayBeServed, prepareClaim, rekeyInputs, type ClaimDraft } from "./reuse";
import { attachBuildDisk, diskFullNote, releaseBuildDisk } from "./disk";
import { projectIdentity, sandboxNetworkOf } from "../../adapters/sandbox";
import type { BuildLog } from "./log";
import type { BuildRow, StepName } from "./rows";
import type { BuildState, FailureKind } from "./model";

export interface StepContext {
  core: Core;
  row: BuildRow;
  step: StepName;
  log: BuildLog;
  signal: AbortSignal;
  workDir: string;
}

/** What a step that did not fail reports: a note for its timing and fields for the row. */
export interface StepDone {
  cancelled?: boolean;
  note?: string;
  /** The step did not run (no timing `ok`; the note says why). */
  skipped?: boolean;
  /** The clone's look at its inputs, claimed when the step is recorded (reuse.ts). */
  claim?: ClaimDraft;
  set?: Partial<Pick<BuildRow, "plan" | "cacheHit" | "imageRef" | "imageDigest" | "imageSizeBytes" | "inputKey" | "inputParts">>;
}

export const dirs = (workDir: string) => ({ src: path.join(workDir, "src"), work: path.join(workDir, "work"), image: path.join(workDir, "image"), scan: path.join(workDir, "scan") });

function planOf(ctx: StepContext): BuildPlan {
  const plan = parsePlan(ctx.row.plan);
  if (!plan) throw new StepFailure("internal", "the build's plan is missing (the clone step did not record it)");
  return plan;
}

/**
 * The build context's real path, resolved inside the checkout (src/core/inside.ts): every step
 * reads, binds, hands over and packs this path, never `src/<context>` as text, so a symlink in
 * the commit (`lnk -> <data dir>`, `lnk/x`, `-> /proc`) is refused naming it (`build`).
 */
function contextDir(ctx: StepContext, plan: BuildPlan): string {
  const found = inCommit(() => resolveInsideOrNull(dirs(ctx.workDir).src, plan.context, { what: "the build context", want: "directory" }));
  if (!found) throw new StepFailure("build", `the build context "${plan.context}" does not exist in the commit`);
  return found.abs;
}

/** A repository path's refusal as the build's failure (`build`, the message naming the path). */
function inCommit<T>(resolve: () => T): T {
  try {
    return resolve();
  } catch (e) {
    if (e instanceof PathRefused) throw new StepFailure("build", e.message);
    throw e;
  }
}

/** The Dockerfile of a container build, checked inside the context at clone time (the builder checks it again). */
function dockerfileIn(ctx: StepContext, plan: BuildPlan): void {
  const found = inCommit(() => resolveInsideOrNull(contextDir(ctx, plan), plan.dockerfile!, { what: "the Dockerfile", tree: "the build context", want: "file" }));
  if (!found) throw new StepFailure("build", `the Dockerfile "${path.posix.join(plan.context, plan.dockerfile!)}" does not exist in the commit`);
}

/** The build's repository, or a StepFailure (`kind`) when it is no longer connected to the project. */
export function connectedSource(ctx: StepContext, kind: FailureKind): SourceRow {
  const source = ctx.row.sourceId ? sourceById(ctx.core, ctx.row.sourceId) : null;
  if (!source) throw new StepFailure(kind, `the repository ${ctx.row.repo} is no longer connected to the project`);
  return source;
}

/** The commit into a fresh work dir's `src/` (a clone starts over); returns that dir. */
export async function fetchIntoWorkDir(ctx: StepContext, source: SourceRow): Promise<string> {
  const { core, row } = ctx;
  await releaseBuildDisk(core, row.id);
  rmSync(ctx.workDir, { recursive: true, force: true });
  await attachBuildDisk(core, row.id, (level, text) => ctx.log.add("clone", level, text));
  const src = reachableDir(core.config.dataDir, "run", "builds", String(row.id), "src");
  ctx.log.add("clone", "info", `fetching ${row.repo} at ${row.commitSha}${row.branch ? ` (${row.branch})` : ""}`);
  try {
    await fetchCommit(core, source, row.commitSha, src);
  } catch (e) {
    throw new StepFailure("internal", `the commit could not be fetched from the code host: ${(e as Error).message}`);
  }
  return src;
}

/** `cloning`: the commit into `src/`, its ops.toml read, the plan recorded. */
async function clone(ctx: StepContext): Promise<StepDone> {
  const { core, row, log } = ctx;
  const source = connectedSource(ctx, "build");
  const service = serviceOf(core, row);
  if (!service) throw new StepFailure("build", `the service "${row.service}" no longer exists in ${row.environment}`);
  // ops.toml is read from the host while the commit is written out: neither waits for the other,
  // unless another build of the commit may serve this one (reuse.ts): it fetches only if it leads.
  const declaration = declarationAt(core, source, row.commitSha).then(
    (decl) => ({ decl }),
    (e: unknown) => ({ failed: e }),
  );
  let fetched = !mayBeServed(core.db, row);
  if (fetched) await fetchIntoWorkDir(ctx, source);
  const read = await declaration;
  if ("failed" in read) {
    const e = read.failed;
    if (e instanceof OpsTomlError) throw new StepFailure("build", e.message);
    throw new StepFailure("internal", `ops.toml could not be read: ${(e as Error).message}`);
  }
  const spec = specOf<ServiceSpec>(service);
  const plan = resolvePlan(row, spec, read.decl);
  const baseRef = declaredBase(row, spec, read.decl, plan);
  if (baseRef) plan.base = await resolveBase(core, row.project, baseRef, (text) => log.add("clone", "info", text));
  const claim = await prepareClaim(core, row, plan, (level, text) => log.add("clone", level, text));
  if (!fetched && !claim?.donor && !claim?.leader) fetched = !!(await fetchIntoWorkDir(ctx, source));
  // The repository's paths are checked now, before any command runs (a build that takes another's
  // image runs nothing: that build checked the same paths).
  if (fetched) contextDir(ctx, plan);
  if (fetched && plan.builder === "container") dockerfileIn(ctx, plan);
  if (plan.builder === "native") {
    const on = plan.base ? `, on ${plan.base.repository}@${plan.base.digest}` : ", no base (it runs on the host's toolchains)";
    log.add("clone", "info", `native build from ${plan.from}: context ${plan.context}, ${plan.checks.length} check and ${plan.build.length} build command(s), output ${plan.output}, start "${plan.start}", port ${plan.port}${on}`);
  } else {
    log.add("clone", "info", `container build of ${path.posix.join(plan.context, plan.dockerfile!)} (context ${plan.context}, port ${plan.port})`);
  }
  return { set: { plan: JSON.stringify(plan) }, ...(claim ? { claim: { ...claim, fetched } } : {}) };
}

function lineSink(ctx: StepContext): (l: BuildLine) => void {
  return (l) => ctx.log.add(ctx.step, l.level, l.line);
}

/** A builder's failed or cancelled outcome as the step's answer (naming a full build dir: disk.ts). */
function outcomeOf(res: BuildOutcome, ctx?: StepContext): StepDone | null {
  if (res.status === "cancelled") return { cancelled: true };
  if (res.status === "failed") {
    const full = ctx ? diskFullNote(ctx.core, ctx.row.id) : null;
    if (full) ctx!.log.add(ctx!.step, "error", full);
    throw new StepFailure(res.failureKind ?? "internal", [res.error ?? "the build failed", full].filter(Boolean).join("; "));
  }
  return null;
}

function variables(ctx: StepContext): BuildVariable[] {
  const vars = buildVariables(ctx.core, ctx.row);
  ctx.log.maskValues(vars.filter((v) => v.secret).map((v) => v.value));
  const shown = vars.filter((v) => !v.name.startsWith("OPS_")).map((v) => `${v.name}${v.secret ? " (secret)" : ""}`);
  ctx.log.add(ctx.step, "info", shown.length > 0 ? `build variables: ${shown.join(", ")}` : "build variables: none beyond OPS_*");
  return vars;
}

function nativeBase(ctx: StepContext, plan: BuildPlan, vars: BuildVariable[]) {
  const { core, row } = ctx;
  return {
    contextDir: contextDir(ctx, plan),
    workDir: dirs(ctx.workDir).work,
    ...projectCache(core.config.dataDir, row.projectId, row.environment, row.service, core.config.cacheMaxMb),
    variables: vars,
    memoryMb: core.config.buildMemoryMb,
    stepTimeoutSecs: core.config.buildStepTimeoutSecs,
    pids: core.config.sandboxPids,
    tmpMb: core.config.sandboxTmpMb,
    hide: [core.config.dataDir],
    identity: projectIdentity(core, ctx.row.projectId),
    network: sandboxNetworkOf(core),
  };
}

export const NO_CHECKS = "no check commands declared";

/** `checks`: the check commands in the sandbox (also for container builds: they need no image). */
async function checks(ctx: StepContext): Promise<StepDone> {
  const plan = planOf(ctx);
  if (plan.checks.length === 0) return { skipped: true, note: NO_CHECKS };
  const vars = variables(ctx);
  const res = await runNativeBuild({ ...nativeBase(ctx, plan, vars), checks: plan.checks, build: [], output: "." }, { onLine: lineSink(ctx), signal: ctx.signal, now: () => ctx.core.clock.now() });
  return outcomeOf(res, ctx) ?? { note: `${plan.checks.length} command(s) passed` };
}

function layoutDir(ctx: StepContext): string {
  return path.join(dirs(ctx.workDir).work, "layout");
}

/** `building`: the build commands (native) or buildah (container). */
async function build(ctx: StepContext): Promise<StepDone> {
  const plan = planOf(ctx);
  const vars = variables(ctx);
  const { core, row } = ctx;
  if (plan.builder === "container") {
    const res = await runContainerBuild(
      {
        contextDir: contextDir(ctx, plan),
        dockerfile: plan.dockerfile!,
        workDir: dirs(ctx.workDir).work,
        ...projectCache(core.config.dataDir, row.projectId, row.environment, row.service, core.config.cacheMaxMb),
        variables: vars,
        memoryMb: core.config.buildMemoryMb,
        stepTimeoutSecs: core.config.buildStepTimeoutSecs,
        pids: core.config.sandboxPids,
        commit: row.commitSha,
        commitTime: row.commitTime,
        source: row.repo,
        identity: projectIdentity(core, row.projectId),
        network: sandboxNetworkOf(core),
      },
      { onLine: lineSink(ctx), signal: ctx.signal, now: () => core.clock.now() },
    );
    const failed = outcomeOf(res, ctx);
    if (failed) return failed;
    recordResolutions(ctx, plan);
    return { note: "buildah", set: { cacheHit: res.cacheHit, ...(await rekeyInputs(core, row, plan, vars, (text) => ctx.log.add("build", "warn", text))) } };
  }
  const res = await runNativeBuild({ ...nativeBase(ctx, plan, vars), checks: [], build: plan.build, output: plan.output }, { onLine: lineSink(ctx), signal: ctx.signal, now: () => core.clock.now() });
  const failed = outcomeOf(res, ctx);
  if (failed) return failed;
  recordResolutions(ctx, plan);
  const hit = res.cacheHit === null ? "no dependency cache used" : `dependency cache ${res.cacheHit === 1 ? "reused" : "filled"}`;
  return { note: `${plan.build.length} command(s); ${hit}`, set: { cacheHit: res.cacheHit, ...(await rekeyInputs(core, row, plan, vars, (text) => ctx.log.add("build", "warn", text))) } };
}

/**
 * After a build of the source's default branch: what the context's lockfiles resolved from ops's
 * registries becomes the project's consumers of the modules (`GET /modules` `consumers`). Other
 * branches record nothing. Best effort: a failure to record is logged and never fails the build.
 */
function recordResolutions(ctx: StepContext, plan: BuildPlan): void {
  const { core, row } = ctx;
  const source = row.sourceId ? sourceById(core, row.sourceId) : null;
  if (!source || row.branch !== source.defaultBranch) return;
  try {
    const resolved = resolutionsIn(contextDir(ctx, plan), core.config.publicUrl);
    recordConsumers(core, row.projectId, row.id, resolved);
    if (resolved.length > 0) ctx.log.add("build", "info", `${resolved.length} package(s) resolved from ops's registries recorded: ${resolved.map((r) => `${r.name}@${r.version}`).join(", ")}`);
  } catch (e) {
    core.log.warn("build's lockfile resolutions not recorded", { build: row.id, err: (e as Error).message });
  }
}

function nativeOutput(ctx: StepContext, plan: BuildPlan): string {
  const out = resolveOutput(contextDir(ctx, plan), plan.output);
  if (typeof out !== "string") throw new StepFailure("build", out.error);
  return out;
}

function containerImage(ctx: StepContext): ContainerImage {
  try {
    return readLayout(layoutDir(ctx));
  } catch (e) {
    throw new StepFailure("internal", `the container image is missing from the build's work dir: ${(e as Error).message}`);
  }
}

/** `scanning`: the image's files (the output dir, or every layer of a container image unpacked). */
async function scan(ctx: StepContext): Promise<StepDone> {
  const plan = planOf(ctx);
  let root: string;
  if (plan.builder === "native") {
    root = nativeOutput(ctx, plan);
  } else {
    const image = containerImage(ctx);
    const doc = JSON.parse(new TextDecoder().decode(image.manifest.bytes)) as { layers: Array<{ digest: string; mediaType: string }> };
    const files = new Map(image.blobs.map((b) => [b.digest, b.file]));
    const scanDir = dirs(ctx.workDir).scan;
    rmSync(scanDir, { recursive: true, force: true });
    const unpacked = await unpackImage(
      scanDir,
      image.manifest.digest,
      doc.layers.map((l) => ({ digest: l.digest, mediaType: l.mediaType, open: () => Bun.file(files.get(l.digest)!) })),
    );
    root = unpacked.root;
  }
  const res = await scanImageFiles(root);
  for (const p of res.partial) ctx.log.add("scan", "warn", `${p}: only its first 32 MiB were scanned`);
  if (res.hits.length > 0) {
    for (const h of res.hits) ctx.log.add("scan", "error", `${h.path}:${h.line}: ${h.what}`);
    throw new StepFailure("scan", describeHits(res.hits));
  }
  ctx.log.add("scan", "info", `${res.files} file(s), ${res.bytes} bytes scanned: no secrets`);
  return { note: `${res.files} file(s) scanned` };
}

function repositoryOf(row: BuildRow): string {
  return `${row.project}/${row.service}`;
}

/** `pushing`: pack the native image (on its base, image-push.ts) or take buildah's, and push it as `<project>/<service>:<commit>`. */
async function push(ctx: StepContext): Promise<StepDone> {
  const { core, row } = ctx;
  const plan = planOf(ctx);
  const repository = repositoryOf(row);
  let blobs: PushBlob[];
  let manifest: { bytes: Uint8Array; mediaType: string };
  if (plan.builder === "native") {
    ({ blobs, manifest } = await packNative(core, row, plan, nativeOutput(ctx, plan), dirs(ctx.workDir).image, (text) => ctx.log.add("push", "info", text)));
  } else {
    const image = containerImage(ctx);
    blobs = image.blobs.map((b) => ({ digest: b.digest, size: b.size, source: { file: b.file } }));
    manifest = image.manifest;
  }
  refuseOversized(core, blobs);
  let pushed;
  try {
    pushed = await pushImage(core, {
      repository,
      blobs,
      manifest: manifest.bytes,
      mediaType: manifest.mediaType,
      tag: row.commitSha,
      pusher: { subject: "ops", audit: SYSTEM_ACTOR, context: { build: row.id, requested_by: row.requestedBy } },
    });
  } catch (e) {
    throw new StepFailure("push", `the image could not be pushed to ${repository}: ${e instanceof OpsError ? e.message : (e as Error).message}`);
  }
  const imageRef = `${registryService(core)}/${repository}:${row.commitSha}`;
  ctx.log.add("push", "info", `pushed ${imageRef} (${pushed.digest}, ${pushed.sizeBytes} bytes)`);
  return { note: pushed.digest, set: { imageRef, imageDigest: pushed.digest, imageSizeBytes: pushed.sizeBytes } };
}

/** `signing`: the estate key's cosign-style signature of the pushed digest. */
async function sign(ctx: StepContext): Promise<StepDone> {
  const { core, row } = ctx;
  if (!row.imageDigest) throw new StepFailure("internal", "the build has no pushed image to sign");
  try {
    const signed = await signImage(core, repositoryOf(row), row.imageDigest, { subject: "ops", audit: SYSTEM_ACTOR, context: { build: row.id } });
    ctx.log.add("sign", "info", `signed ${row.imageDigest} with the estate key (sha256:${signed.fingerprint.slice(0, 16)}…) as ${signed.tag}`);
    return { note: `key sha256:${signed.fingerprint.slice(0, 16)}` };
  } catch (e) {
    throw new StepFailure("sign", `the image could not be signed: ${(e as Error).message}`);
  }
}

/** One step: the state it runs in, what it runs, and how it behaves across a stop. */
export interface StepDef {
  state: BuildState;
  step: StepName;
  run(ctx: StepContext): Promise<StepDone>;
  /** It runs processes: a cancel or a shutdown kills them, and they bound their own time. */
  killsProcesses: boolean;
  /** Safe to run again after ops stopped during it; otherwise the build fails `internal`. */
  repeatable: boolean;
}

/** An image build's working states in order, with the step each runs. */
export const STEPS: readonly StepDef[] = [
  { state: "cloning", step: "clone", run: clone, killsProcesses: false, repeatable: true },
  { state: "checks", step: "checks", run: checks, killsProcesses: true, repeatable: false },
  { state: "building", step: "build", run: build, killsProcesses: true, repeatable: false },
  { state: "scanning", step: "scan", run: scan, killsProcesses: false, repeatable: true },
  { state: "pushing", step: "push", run: push, killsProcesses: false, repeatable: true },
  { state: "signing", step: "sign", run: sign, killsProcesses: false, repeatable: true },
];
