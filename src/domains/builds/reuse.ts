/**
 * One build per set of inputs (docs/decisions/0435): when production and staging both follow
 * `main`, a push queues a build in each, and only one of them runs the build. Each image build's
 * clone step computes its input key (the commit, the service, the build spec as resolved for its
 * environment, the build variables' values as a keyed digest, the builder, and the digest of the
 * base image when it has one: decision 0620), and the transaction that records the step claims it:
 *
 * - a finished build with the same key whose signed image is still in the registry: reused now;
 * - a build with the same key still working (its leader): this one parks in `building` (holding
 *   no builder, see dispatch.ts) until the leader's `sign` step is recorded or the leader ends;
 * - otherwise it leads, and says in its clone log why another build of the commit was not used.
 *
 * A follower runs none of checks, build, scan, push and sign: their timings carry no `ok` and say
 * "reused image <digest> of build #N"; it takes the leader's image ref, digest and size and is
 * deployed to its own environment like any signed build. When the leader ends without a signed
 * image, its followers fail likewise if the inputs decided it (checks, build, memory, scan) and
 * otherwise (cancelled, internal, push, sign, or the image gone) queue again to build themselves.
 */
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { and, asc, desc, eq, inArray, isNull, ne, isNotNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx, type Queryable, type Tx } from "../../core/db/client";
import { builds } from "./tables";
import { buildById, timingsOf, type BuildRow, type StoredTiming } from "./rows";
import { buildVariables, StepFailure, type BuildPlan } from "./plan";
import type { BuildVariable } from "../../adapters/builder/types";
import { dispatchBuilds, enqueueStep } from "./dispatch";
import { afterEnd, closeTiming, endBuildIn, onBuildEnded, workDirOf } from "./lifecycle";
import { releaseBuildDisk } from "./disk";
import { appendLines } from "./log";
import { reportToHost } from "./host";
import { deployDecision } from "./deployer";
import { verifyImageSignature } from "./signing";
import type { FailureKind } from "./model";

/** Variables that name the build rather than what it builds: left out of the key (decision 0435). */
const PER_BUILD_VARIABLES = new Set(["OPS_ENVIRONMENT", "OPS_BUILD_ID"]);

/** A leader's failures that the same inputs would repeat: its followers fail likewise. */
const INPUT_FAILURES: ReadonlySet<string> = new Set<FailureKind>(["checks", "build", "memory", "scan"]);

/** The states of a build that makes its own image, before it is signed. */
const LEADING_STATES = ["cloning", "checks", "building", "scanning", "pushing", "signing"];

export interface InputKey {
  key: string;
  /** `base`, the base image's manifest digest, only for a build on one (keys of builds without one are as before). */
  parts: { spec: string; variables: string; builder: string; base?: string };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** JSON with object keys sorted, so the same value always gives the same text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v ?? null);
}

/** buildah's version (it builds container images), asked once per process; null without buildah. */
async function buildahVersion(core: Core): Promise<string | null> {
  const cached = core.locals.get("builds.buildah-version") as Promise<string | null> | undefined;
  if (cached) return cached;
  const asked = (async () => {
    const bin = Bun.which("buildah");
    if (!bin) return null;
    const p = Bun.spawn([bin, "--version"], { stdout: "pipe", stderr: "ignore" });
    const out = (await new Response(p.stdout).text()).trim();
    return (await p.exited) === 0 ? out : null;
  })().catch(() => null);
  core.locals.set("builds.buildah-version", asked);
  return asked;
}

/**
 * The input key of an image build (see the file comment). Variable values never reach the row:
 * with a secret among them, the variables' part is the secrets store's keyed digest (a leaked
 * database cannot test guesses); without one, a plain digest.
 */
export async function inputKeyOf(core: Core, row: Pick<BuildRow, "projectId" | "service" | "commitSha">, plan: BuildPlan, vars: readonly BuildVariable[]): Promise<InputKey> {
  const varsText = canonical(
    vars
      .filter((v) => !PER_BUILD_VARIABLES.has(v.name))
      .map((v) => [v.name, v.value, v.secret])
      .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0)),
  );
  // The base is in the spec by the name written, and a part of its own by digest: a tag moved to
  // another image is another input, and the log can say that the base is what differed.
  const { base, ...rest } = plan;
  const parts = {
    spec: sha256(canonical(base ? { ...rest, base: base.ref } : rest)),
    variables: vars.some((v) => v.secret) ? `k:${core.secrets.keyedDigest("builds.input-key", varsText)}` : sha256(varsText),
    builder: sha256(canonical({ kind: plan.builder, ops: core.version, buildah: plan.builder === "container" ? await buildahVersion(core) : null })),
    ...(base ? { base: base.digest } : {}),
  };
  return { key: sha256(canonical({ v: 1, project: row.projectId, service: row.service, commit: row.commitSha, ...parts })), parts };
}

/** Whether a build's image was pushed and signed (it went on to deploy, or ended there). */
export function hasSignedImage(row: Pick<BuildRow, "imageDigest" | "status" | "failureKind">): boolean {
  if (!row.imageDigest) return false;
  return ["deploying", "healthy", "rolled_back"].includes(row.status) || (row.status === "failed" && (row.failureKind === "deploy" || row.failureKind === "health"));
}

/** A follower waiting for its leader's image: `building`, a leader named, no step item. */
export function isParked(row: Pick<BuildRow, "status" | "reuseOf" | "stepItem">): boolean {
  return row.status === "building" && row.reuseOf !== null && row.stepItem === null;
}

/**
 * What the clone step found about its inputs, decided in the transaction that records the step
 * (`settleClaimIn`): its key, a finished build whose signed image was verified for reuse, and
 * what to say when another build of the commit has other inputs.
 */
export interface ClaimDraft {
  key: string;
  parts: InputKey["parts"];
  donor: { id: number; environment: string; digest: string } | null;
  /** A working build with the same key when the clone looked (the transaction decides). */
  leader: number | null;
  /** "build #N (staging) of this commit has other inputs (build variables)", or null. */
  other: string | null;
  /** Whether the clone fetched the commit (it does not when another build seemed to serve it). */
  fetched?: boolean;
}

export type ClaimDecision = { follow: number; line: string } | { lead: true; line: string | null };

/** Other image builds with this input key (the key covers the commit: the index on project and commit finds them). */
const sameKey = (row: Pick<BuildRow, "id" | "projectId" | "commitSha">, key: string) =>
  and(eq(builds.projectId, row.projectId), eq(builds.commitSha, row.commitSha), eq(builds.inputKey, key), ne(builds.id, row.id), eq(builds.kind, "image"));

/** What differs between two builds' inputs, in words. */
function differences(a: InputKey["parts"], b: InputKey["parts"]): string {
  const what = [
    a.spec !== b.spec && "build spec (ops.toml and the service's settings as resolved there)",
    a.variables !== b.variables && "build variables",
    a.builder !== b.builder && "builder",
    (a.base ?? null) !== (b.base ?? null) && "base image",
  ].filter(Boolean);
  return what.length > 0 ? what.join(", ") : "inputs";
}

/**
 * The clone step's look at its inputs (reads only; see the file comment). Null when the build
 * variables cannot be read now (a sealed store, a deleted group): the build leads uncompared and
 * the step that needs them fails as before.
 */
export async function prepareClaim(core: Core, row: BuildRow, plan: BuildPlan, log: (level: "info" | "warn", text: string) => void): Promise<ClaimDraft | null> {
  let vars: BuildVariable[];
  try {
    vars = buildVariables(core, row);
  } catch (e) {
    if (!(e instanceof StepFailure)) throw e;
    log("warn", `the build variables cannot be read now (${e.message}): this build's inputs are not compared with other builds'`);
    return null;
  }
  const ik = await inputKeyOf(core, row, plan, vars);
  // The newest signed image of these inputs, named after the build that made it when it is there.
  const signed = core.db.select().from(builds).where(sameKey(row, ik.key)).orderBy(desc(builds.id)).all().filter(hasSignedImage);
  let donor: ClaimDraft["donor"] = null;
  const candidate = signed.find((b) => b.reuseOf === null) ?? signed[0];
  if (candidate) {
    const check = await verifyImageSignature(core, `${candidate.project}/${candidate.service}`, candidate.imageDigest!);
    if (check.ok) donor = { id: candidate.id, environment: candidate.environment, digest: candidate.imageDigest! };
    else log("warn", `build #${candidate.id} had the same inputs, but its image cannot be used (${check.reason}): it is not reused`);
  }
  const other = core.db
    .select()
    .from(builds)
    .where(and(eq(builds.projectId, row.projectId), eq(builds.service, row.service), eq(builds.commitSha, row.commitSha), eq(builds.kind, "image"), ne(builds.id, row.id), isNotNull(builds.inputParts), ne(builds.inputKey, ik.key)))
    .orderBy(desc(builds.id))
    .get();
  const leader = core.db
    .select({ id: builds.id })
    .from(builds)
    .where(and(sameKey(row, ik.key), isNull(builds.reuseOf), inArray(builds.status, LEADING_STATES)))
    .get();
  const otherLine = other ? `build #${other.id} (${other.environment}) of this commit has other inputs (${differences(JSON.parse(other.inputParts!) as InputKey["parts"], ik.parts)}), so its image is not reused` : null;
  return { key: ik.key, parts: ik.parts, donor, leader: leader?.id ?? null, other: otherLine };
}

/**
 * Whether another image build of this commit and service may serve this one (its key recorded;
 * signed, or still making its image): the clone then reads `ops.toml` and claims before it
 * fetches, and fetches only if it leads.
 */
export function mayBeServed(q: Queryable, row: Pick<BuildRow, "id" | "projectId" | "service" | "commitSha">): boolean {
  return q
    .select()
    .from(builds)
    .where(and(eq(builds.projectId, row.projectId), eq(builds.commitSha, row.commitSha), eq(builds.service, row.service), eq(builds.kind, "image"), ne(builds.id, row.id), isNotNull(builds.inputKey)))
    .all()
    .some((b) => hasSignedImage(b) || (b.reuseOf === null && LEADING_STATES.includes(b.status)));
}

/**
 * The claim's outcome in the clone step's record (inside `t`): a follower is parked here (the
 * caller returns); a build that leads without having fetched the commit (the build it expected to
 * follow ended meanwhile) clones again; otherwise a line for the log, or null.
 */
export function settleClaimIn(core: Core, t: Tx, row: BuildRow, draft: ClaimDraft, set: Partial<typeof builds.$inferInsert>): { kind: "parked" | "reclone" | "lead"; leader: number | null; line: string | null } {
  const decided = decideClaimIn(t, row, draft);
  if ("follow" in decided) {
    parkIn(t, row.id, decided.follow, closeTiming(core, timingsOf(row), "clone", { ok: true, note: `same inputs as build #${decided.follow}` }), core.clock.now(), set);
    return { kind: "parked", leader: decided.follow, line: decided.line };
  }
  if (draft.fetched === false) return { kind: "reclone", leader: null, line: "the build whose image this one was to take ended before it: cloning again to build here" };
  return { kind: "lead", leader: null, line: decided.line };
}

/**
 * The claim, inside the transaction that records the clone step: follow the verified donor, else
 * a build with the same key that makes its own image and still works, else lead. Records the key
 * on the row. Transactions are serialized, so of two builds that claim at once one leads.
 */
function decideClaimIn(t: Tx, row: Pick<BuildRow, "id" | "projectId" | "commitSha">, draft: ClaimDraft): ClaimDecision {
  const buildId = row.id;
  const set = (reuseOf: number | null) => t.update(builds).set({ inputKey: draft.key, inputParts: JSON.stringify(draft.parts), reuseOf }).where(eq(builds.id, buildId)).run();
  if (draft.donor) {
    set(draft.donor.id);
    return { follow: draft.donor.id, line: `same inputs as build #${draft.donor.id} (${draft.donor.environment || "no environment"}), whose signed image ${draft.donor.digest} is reused: nothing is built here` };
  }
  const leader = t
    .select()
    .from(builds)
    .where(and(sameKey(row, draft.key), isNull(builds.reuseOf), inArray(builds.status, LEADING_STATES)))
    .orderBy(asc(builds.id))
    .get();
  set(leader?.id ?? null);
  if (leader) return { follow: leader.id, line: `same inputs as build #${leader.id} (${leader.environment}), which is building them: this build waits for its signed image instead of building` };
  return { lead: true, line: draft.other ? `building here: ${draft.other}` : null };
}

/**
 * The build step's input key, from the variables it really read: when they changed since the
 * clone, the row gets the key its image is built from (returned as fields to set), and builds
 * that waited on the earlier key build their own.
 */
export async function rekeyInputs(core: Core, row: BuildRow, plan: BuildPlan, vars: readonly BuildVariable[], warn: (text: string) => void): Promise<Partial<Pick<BuildRow, "inputKey" | "inputParts">>> {
  if (row.inputKey === null || row.reuseOf !== null) return {};
  const now = await inputKeyOf(core, row, plan, vars);
  if (now.key === row.inputKey) return {};
  warn("the build variables changed since the clone: builds that waited for this image with the earlier ones build their own");
  return { inputKey: now.key, inputParts: JSON.stringify(now.parts) };
}

/**
 * Park a follower after its clone step (inside the transaction that records that step): `building`
 * with the `build` timing open, no step item; `timings` has the clone closed.
 */
export function parkIn(t: Tx, buildId: number, leader: number, timings: StoredTiming[], now: number, set: Partial<typeof builds.$inferInsert>): void {
  const waiting: StoredTiming = { step: "build", startedAt: now, note: `waiting for the image of build #${leader}` };
  t.update(builds)
    .set({ ...set, status: "building", stepItem: null, stepTimings: JSON.stringify([...timings, waiting]) })
    .where(eq(builds.id, buildId))
    .run();
}

/** Builds parked on `leader`. */
function parkedOn(q: Queryable, leader: number): BuildRow[] {
  return q.select().from(builds).where(and(eq(builds.reuseOf, leader), eq(builds.status, "building"), isNull(builds.stepItem))).all();
}

/** `fn` on the follower inside a transaction, if it is still parked on `leader`. */
function whileParked<T>(core: Core, followerId: number, leader: number, fn: (t: Tx, row: BuildRow) => T): T | null {
  return tx(core.db, (t) => {
    const row = buildById(t, followerId);
    if (!row || !isParked(row) || row.reuseOf !== leader) return null;
    return fn(t, row);
  });
}

/** The follower's timings with its open `build` timing replaced by the five steps it did not run. */
function reusedTimings(row: BuildRow, note: string, now: number): StoredTiming[] {
  const timings = timingsOf(row);
  const i = timings.findLastIndex((s) => s.step === "build" && s.finishedAt === undefined);
  const startedAt = i >= 0 ? timings[i]!.startedAt : now;
  const kept = i >= 0 ? timings.slice(0, i) : timings;
  return [...kept, ...(["checks", "build", "scan", "push", "sign"] as const).map((step) => ({ step, startedAt, finishedAt: now, note }))];
}

/** The follower takes the leader's signed image and moves on to its own rollout. */
async function reuseImage(core: Core, followerId: number, leader: BuildRow): Promise<void> {
  const note = `reused image ${leader.imageDigest} of build #${leader.id}`;
  const out = whileParked(core, followerId, leader.id, (t, row) => {
    const now = core.clock.now();
    const timings = reusedTimings(row, note, now);
    const image = { imageRef: leader.imageRef, imageDigest: leader.imageDigest, imageSizeBytes: leader.imageSizeBytes, cacheHit: null };
    const decision = deployDecision(core, row);
    if (decision.deploy) {
      const opened = [...timings, { step: "deploy" as const, startedAt: now }];
      return { item: enqueueStep(core, t, row.id, "deploying", { startNow: true, opened: true, set: { ...image, status: "deploying", stepTimings: JSON.stringify(opened) } }) };
    }
    t.update(builds).set({ ...image, stepTimings: JSON.stringify(timings) }).where(eq(builds.id, row.id)).run();
    return { ended: endBuildIn(core, t, row.id, ["building"], { status: "healthy", more: [{ step: "deploy", startedAt: now, finishedAt: now, note: decision.why }] }), why: decision.why };
  });
  if (!out) return;
  appendLines(core, followerId, "build", [["info", `${note} (${leader.environment}): checks, build, scan, push and sign ran there, with the same inputs`]]);
  if ("item" in out && out.item) {
    core.scheduler.startNow(out.item);
    void reportToHost(core, followerId);
    return;
  }
  appendLines(core, followerId, "deploy", [["info", out.why ?? ""]]);
  if (out.ended) await afterEnd(core, out.ended);
}

/** The follower builds its image itself after all: queued again, its claim forgotten. */
async function buildItself(core: Core, followerId: number, leader: number, why: string): Promise<void> {
  const done = whileParked(core, followerId, leader, (t, row) => {
    const now = core.clock.now();
    const timings = timingsOf(row).map((s) => (s.step === "build" && s.finishedAt === undefined ? { ...s, finishedAt: now, note: why } : s));
    t.update(builds).set({ status: "queued", reuseOf: null, inputKey: null, inputParts: null, stepTimings: JSON.stringify(timings) }).where(eq(builds.id, row.id)).run();
    return true;
  });
  if (!done) return;
  appendLines(core, followerId, "build", [["warn", `${why}: queued again to build the image here`]]);
  dispatchBuilds(core);
  await reportToHost(core, followerId);
}

/** The follower fails as its leader did (the same inputs would fail the same way). */
async function failLikewise(core: Core, followerId: number, leader: BuildRow): Promise<void> {
  const kind = (leader.failureKind ?? "internal") as FailureKind;
  const error = `build #${leader.id} of the same inputs failed (${kind}): ${leader.error ?? "no error recorded"}`;
  const ended = whileParked(core, followerId, leader.id, (t) => endBuildIn(core, t, followerId, ["building"], { status: "failed", failureKind: kind, error, step: "build", ok: false, note: kind }));
  if (!ended) return;
  appendLines(core, followerId, "build", [["error", error]]);
  await afterEnd(core, ended);
}

/**
 * Move on the builds parked on `leaderId` once it has a signed image or has ended (see the file
 * comment); nothing while it still works. Safe to call any number of times, outside a transaction.
 */
export async function releaseFollowers(core: Core, leaderId: number): Promise<void> {
  const parked = parkedOn(core.db, leaderId);
  if (parked.length === 0) return;
  const leader = buildById(core.db, leaderId);
  if (!leader) {
    for (const f of parked) await buildItself(core, f.id, leaderId, `build #${leaderId} is gone`);
    return;
  }
  if (hasSignedImage(leader)) {
    const check = await verifyImageSignature(core, `${leader.project}/${leader.service}`, leader.imageDigest!);
    for (const f of parked) {
      if (!check.ok) await buildItself(core, f.id, leaderId, `the image of build #${leaderId} cannot be used (${check.reason})`);
      else if (f.inputKey !== leader.inputKey) await buildItself(core, f.id, leaderId, `build #${leaderId} built with other inputs than it claimed (its build variables changed meanwhile)`);
      else await reuseImage(core, f.id, leader);
    }
    return;
  }
  if (!["failed", "cancelled", "rolled_back", "healthy", "published"].includes(leader.status)) return;
  for (const f of parked) {
    if (leader.status === "failed" && INPUT_FAILURES.has(leader.failureKind ?? "")) await failLikewise(core, f.id, leader);
    else await buildItself(core, f.id, leaderId, `build #${leaderId} ${leader.status === "cancelled" ? "was cancelled" : `ended ${leader.status}${leader.failureKind ? ` (${leader.failureKind})` : ""} without a signed image`}`);
  }
}

/** At start-up: parked builds whose leader moved on while ops was down move on too. */
export async function releaseParked(core: Core): Promise<void> {
  const leaders = new Set(
    core.db
      .select({ leader: builds.reuseOf })
      .from(builds)
      .where(and(eq(builds.status, "building"), isNotNull(builds.reuseOf), isNull(builds.stepItem)))
      .all()
      .map((r) => r.leader!),
  );
  for (const id of leaders) await releaseFollowers(core, id);
}

/** Install the wake-up of followers at every build's end. */
export function installReuse(core: Core): void {
  onBuildEnded(core, (c, row) => (row.kind === "image" ? releaseFollowers(c, row.id) : Promise.resolve()));
}

/**
 * After a follower parked: the work dir its clone fetched goes, its builder slot serves the queue,
 * and it moves on at once when its leader is already done (or finished while it parked).
 */
export async function afterPark(core: Core, followerId: number, leader: number): Promise<void> {
  try {
    await releaseBuildDisk(core, followerId);
    rmSync(workDirOf(core, followerId), { recursive: true, force: true });
  } catch (e) {
    core.log.warn("build work dir not removed", { build: followerId, err: (e as Error).message });
  }
  dispatchBuilds(core);
  void reportToHost(core, followerId);
  await releaseFollowers(core, leader);
}
