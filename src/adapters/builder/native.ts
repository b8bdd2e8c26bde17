/**
 * The native builder: runs a service's `check` and `build` commands with `sh -c`, one after the
 * other, inside the bubblewrap sandbox (src/adapters/sandbox/) as user 1000, one sandbox per step
 * (step-script.ts), with the service's build
 * variables as the whole environment, a memory limit through cgroups (sandbox/cgroups.ts), a time limit per
 * step and the service's dependency cache mounted at the package managers' cache paths
 * (cache.ts). Output goes line by line, masked, to `onLine`; the outcome names the step that
 * failed and why, in the spec's `failure_kind` vocabulary. On success it names the directory to
 * pack into the image.
 *
 * The build context is mounted at /app, the image's working directory, so paths a build bakes in
 * stay valid when the image runs; like a container build context, nothing outside it is visible.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { PathRefused, resolveInsideOrNull } from "../../core/inside";
import path from "node:path";
import { secretMasker, DEFAULT_PATH, type SecretMasker } from "../runtime/process";
import type { MemoryCgroup } from "../sandbox/cgroups";
import type { PidsGroup } from "../sandbox/pids";
import { memoryLimit, pidsLimit, releaseLimit, releasePids, runLimited, sandboxLines } from "./limits";
import { CACHE_MOUNTS, openCache, snapshotCache, cacheUse, type CacheSnapshot, type OpenCache } from "./cache";
import { defaultIdentity, findSandboxTools, handOver, sandboxDir, writePasswd, SANDBOX_HOME } from "../sandbox/users";
import type { Netns } from "../sandbox";
import { hostTrustVariables, sandboxArgv, type Mount } from "../sandbox/bwrap";
import { newStepTag, stepScriptArgv, StepOutput } from "./step-script";
import type { BuildLine, BuildRunOptions, BuilderStep, MemoryEnforcement, NativeBuildOutcome, NativeBuildSpec, StepTiming } from "./types";

/** Where the build context is mounted inside the sandbox: the image's WorkingDir. */
export const SANDBOX_APP = "/app";

/** Logged under a command that failed: where the build recipes that work are. */
export const RECIPES_HINT = "Build recipes that work in the sandbox (Node, Python venv, Go, Rust, static sites): docs/guide/recipes.md";

/** A build's /tmp when the caller names no size (`OPS_SANDBOX_TMP_MB`'s default). */
const DEFAULT_TMP_MB = 256;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The environment a build's commands see: a fixed base, then the service's build variables. */
export function buildEnvironment(spec: Pick<NativeBuildSpec, "variables">): Record<string, string> {
  const env: Record<string, string> = {
    PATH: DEFAULT_PATH,
    HOME: SANDBOX_HOME,
    USER: "build",
    LOGNAME: "build",
    TMPDIR: "/tmp",
    LANG: "C.UTF-8",
    CI: "true",
    ...hostTrustVariables(),
  };
  for (const v of spec.variables) if (ENV_NAME.test(v.name)) env[v.name] = v.value;
  return env;
}

/**
 * The output directory (absolute, real path), or why it is not acceptable. It is resolved inside
 * the build context component by component (src/core/inside.ts): a symlink the build made is
 * followed only while it stays inside the context, so root never packs or scans what it names.
 */
export function resolveOutput(contextDir: string, output: string): string | { error: string } {
  const lexical = outputPathError(output);
  if (lexical) return { error: lexical };
  try {
    const found = resolveInsideOrNull(contextDir, output, { what: "the output directory", tree: "the build context", want: "directory" });
    if (!found) return { error: `the output directory "${output}" does not exist after the build` };
    return found.abs;
  } catch (e) {
    if (e instanceof PathRefused) return { error: e.message };
    throw e;
  }
}

function outputPathError(output: string): string | null {
  if (path.isAbsolute(output) || output.split(/[\\/]/).includes("..")) return `the output directory "${output}" must be a relative path inside the build context`;
  return null;
}

interface Run {
  spec: NativeBuildSpec;
  opts: BuildRunOptions;
  now: () => number;
  mask: SecretMasker;
  timings: StepTiming[];
  cgroup: MemoryCgroup | null;
  pids: PidsGroup | null;
  memory: MemoryEnforcement;
  cacheBefore: CacheSnapshot | null;
  /** The service's caches under their project's cap (cache.ts), closed when the build ends. */
  cache: OpenCache | null;
  netns: Netns | null;
}

function emit(run: Run, step: BuilderStep, stream: BuildLine["stream"], level: BuildLine["level"], line: string): void {
  run.opts.onLine({ step, stream, level, line: run.mask(line) });
}

function outcome(run: Run, fields: Partial<NativeBuildOutcome> & Pick<NativeBuildOutcome, "status">): NativeBuildOutcome {
  let cacheHit: number | null = null;
  if (run.cacheBefore && run.spec.cacheDir) cacheHit = cacheUse(run.cacheBefore, snapshotCache(run.spec.cacheDir)).hit;
  return {
    failureKind: null,
    error: null,
    failedStep: null,
    failedCommand: null,
    timedOut: false,
    outputDir: null,
    ...fields,
    timings: run.timings,
    cacheHit,
    memory: run.memory,
  };
}

/** Set up the work dir, sandbox mounts, network and memory limit; a string is why the build cannot start. */
async function prepare(run: Run): Promise<StepSetup | string> {
  const { spec } = run;
  const tools = findSandboxTools(spec.toolPath);
  if (typeof tools === "string") return tools;
  const ids = spec.identity ?? defaultIdentity();
  if (spec.network?.refusal) return spec.network.refusal;
  if (!existsSync(spec.contextDir) || !statSync(spec.contextDir).isDirectory()) return `the build context ${spec.contextDir} is not a directory`;
  mkdirSync(spec.workDir, { recursive: true, mode: 0o711 });
  if (spec.cacheDir) {
    run.cache = await openCache(spec.cacheDir, spec.cacheCap ?? null);
    sandboxDir(spec.cacheDir, ids);
    handOver(spec.cacheDir, ids);
    for (const m of CACHE_MOUNTS) handOver(path.join(spec.cacheDir, m.name), ids);
  }
  // No reachability check: a root ops binds every folder through its wrapper (sandbox/bwrap.ts,
  // decision 0204), so the sandbox user never walks through the data dir.
  const home = sandboxDir(path.join(spec.workDir, "home"), ids);
  const tmp = sandboxDir(path.join(spec.workDir, "tmp"), ids);
  const passwd = writePasswd(path.join(spec.workDir, "etc"));
  handOver(spec.contextDir, ids, { force: true });
  const mounts: Mount[] = [
    { host: spec.contextDir, inside: SANDBOX_APP },
    { host: home, inside: SANDBOX_HOME },
  ];
  if (spec.cacheDir) {
    for (const m of CACHE_MOUNTS) mounts.push({ host: path.join(spec.cacheDir, m.name), inside: path.posix.join(SANDBOX_HOME, m.inside) });
    run.cacheBefore = snapshotCache(spec.cacheDir);
  }
  const first: BuilderStep = spec.checks.length > 0 ? "checks" : "building";
  const limit = memoryLimit(spec.memoryMb, `ops-build-${path.basename(spec.workDir)}-${process.pid}-${Date.now().toString(36)}`);
  run.cgroup = limit.cgroup;
  run.memory = limit.memory;
  emit(run, first, "ops", limit.line.level, limit.line.text);
  const pids = pidsLimit(spec.pids ?? 0, `ops-build-${path.basename(spec.workDir)}-${process.pid}-${Date.now().toString(36)}`, limit.cgroup);
  run.pids = pids.group;
  emit(run, first, "ops", pids.line.level, pids.line.text);
  if (run.cache?.line) emit(run, first, "ops", run.cache.line.level, run.cache.line.text);
  for (const l of sandboxLines(spec.tmpMb ?? DEFAULT_TMP_MB)) emit(run, first, "ops", l.level, l.text);
  for (const v of spec.variables) if (!ENV_NAME.test(v.name)) emit(run, first, "ops", "warn", `build variable "${v.name}" is not a valid environment variable name; left out`);
  const env = buildEnvironment(spec);
  // /tmp is a sized tmpfs per step, not carried from one step to the next (decision 0227).
  if (spec.network?.note) emit(run, first, "ops", "warn", spec.network.note);
  run.netns = spec.network ? await spec.network.open(false) : null;
  const netns = run.netns;
  const network = netns ? { enter: netns.enterArgv(), ...spec.network!.etc("ops-build") } : null;
  const sandboxOpts = { mounts, tmpfs: ["/tmp"], tmpSizeMb: spec.tmpMb ?? DEFAULT_TMP_MB, chdir: SANDBOX_APP, hide: spec.hide, passwd, hostname: "ops-build", user: "namespaced" as const, hostUser: ids, network };
  return {
    env,
    argvFor: (tag, commands) => sandboxArgv(tools, sandboxOpts, stepScriptArgv(tag, commands)),
  };
}

interface StepSetup {
  /** The sandbox argv that runs a step's commands in order (step-script.ts). */
  argvFor(tag: string, commands: readonly string[]): string[];
  env: Record<string, string>;
}

/**
 * Run one step's commands, one after another in one sandbox (step-script.ts); null when they all
 * succeeded, else the failed outcome naming the command that failed or was running.
 */
async function runStep(run: Run, step: BuilderStep, commands: readonly string[], setup: StepSetup): Promise<NativeBuildOutcome | null> {
  const { spec, opts } = run;
  opts.onStep?.(step);
  const startedAt = run.now();
  const deadline = Date.now() + spec.stepTimeoutSecs * 1000;
  const finish = (ok: boolean, note?: string) => run.timings.push({ step, startedAt, finishedAt: run.now(), ok, ...(note ? { note } : {}) });
  const kind = step === "checks" ? "checks" : "build";
  if (commands.length === 0) {
    finish(true);
    return null;
  }
  if (opts.signal?.aborted) {
    finish(false, "cancelled");
    return outcome(run, { status: "cancelled", failedStep: step, error: "the build was cancelled" });
  }
  const tag = newStepTag();
  const output = new StepOutput(
    tag,
    commands.length,
    (stream, line) => emit(run, step, stream, stream === "stdout" ? "info" : "warn", line),
    (i) => emit(run, step, "ops", "info", `$ ${commands[i]}`),
  );
  emit(run, step, "ops", "info", `$ ${commands[0]}`);
  const verdict = await runLimited({
    argv: setup.argvFor(tag, commands),
    env: setup.env,
    cwd: spec.workDir,
    deadline,
    cgroup: run.cgroup,
    pids: run.pids,
    signal: opts.signal,
    onLine: (stream, line) => output.line(stream, line),
    mask: run.mask,
  });
  output.end();
  if (verdict.kind === "ok") {
    finish(true);
    return null;
  }
  const shown = run.mask(commands[output.running]!);
  if (verdict.kind === "cancelled") {
    emit(run, step, "ops", "error", verdict.why);
    finish(false, "cancelled");
    return outcome(run, { status: "cancelled", failedStep: step, failedCommand: shown, error: "the build was cancelled" });
  }
  const error =
    verdict.kind === "memory"
      ? `"${shown}" ran out of memory (limit ${spec.memoryMb} MiB)`
      : verdict.kind === "pids"
        ? `"${shown}" ${verdict.why}`
        : verdict.kind === "timeout"
        ? `the ${step === "checks" ? "checks" : "build"} step timed out after ${spec.stepTimeoutSecs}s (in "${shown}")`
          : `"${shown}" ${verdict.why}`;
  emit(run, step, "ops", "error", error);
  if (verdict.kind === "exit") emit(run, step, "ops", "info", RECIPES_HINT);
  finish(false, verdict.kind === "exit" ? verdict.why : verdict.kind);
  return outcome(run, { status: "failed", failureKind: verdict.kind === "memory" ? "memory" : kind, failedStep: step, failedCommand: shown, timedOut: verdict.kind === "timeout", error });
}

/**
 * Run a native build (see the file comment). Never throws for a failing build: the outcome says
 * what happened; `internal` means the sandbox could not run at all. It rejects only when a
 * sandbox could not be emptied (decision 0511), which the pipeline records as `internal` too.
 */
export async function runNativeBuild(spec: NativeBuildSpec, opts: BuildRunOptions): Promise<NativeBuildOutcome> {
  const run: Run = {
    spec,
    opts,
    now: opts.now ?? Date.now,
    mask: secretMasker(spec.variables.filter((v) => v.secret).map((v) => v.value)),
    timings: [],
    cgroup: null,
    pids: null,
    memory: "none",
    cacheBefore: null,
    cache: null,
    netns: null,
  };
  const first: BuilderStep = spec.checks.length > 0 ? "checks" : "building";
  try {
    if (opts.signal?.aborted) return outcome(run, { status: "cancelled", failedStep: first, error: "the build was cancelled" });
    const badOutput = outputPathError(spec.output || ".");
    if (badOutput) {
      emit(run, first, "ops", "error", badOutput);
      return outcome(run, { status: "failed", failureKind: "build", failedStep: first, error: badOutput });
    }
    let setup;
    try {
      setup = await prepare(run);
    } catch (e) {
      setup = `the build sandbox could not be prepared: ${(e as Error).message}`;
    }
    if (typeof setup === "string") {
      emit(run, first, "ops", "error", setup);
      return outcome(run, { status: "failed", failureKind: "internal", failedStep: first, error: setup });
    }
    if (spec.checks.length > 0) {
      const failed = await runStep(run, "checks", spec.checks, setup);
      if (failed) return failed;
    }
    const failed = await runStep(run, "building", spec.build, setup);
    if (failed) return failed;
    const out = resolveOutput(spec.contextDir, spec.output || ".");
    if (typeof out !== "string") {
      emit(run, "building", "ops", "error", out.error);
      return outcome(run, { status: "failed", failureKind: "build", failedStep: "building", error: out.error });
    }
    return outcome(run, { status: "succeeded", outputDir: out });
  } finally {
    await releaseLimit(run.cgroup);
    await releasePids(run.pids);
    await run.netns?.close();
    await run.cache?.close();
  }
}
