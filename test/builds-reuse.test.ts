/**
 * One build per commit (decision 0435), with the real deployments domain and real `git` pushes:
 * production and staging both follow `main`, so a push queues a build in each; one builds, the
 * other reuses its signed image (its steps say so) and both environments roll out the same
 * digest. Different build variables per environment give two real builds and say why; a leader
 * that fails its checks fails its follower (no hang); a cancelled leader leaves its follower to
 * build itself; a parked follower cancels at once; a retry of a reused build reuses the image
 * again (the build that made it named); the input key holds no build variable value.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { buildsDataDir, buildWorld, ENV_GROUP, getBuild, logText, opsToml, SAMPLE_APP, until, type BuildWorld } from "./builds-fixtures";
import { defaultHostOf, listenIngress, viaIngress } from "./deploy-fixtures";
import { builds } from "../src/domains/builds/tables";
import { settleClaimIn } from "../src/domains/builds/reuse";
import { tx } from "../src/core/db/client";
import type { BuildResponse } from "../src/domains/builds/model";

let t: TestApp;
let w: BuildWorld;
let base: string;

async function drain(): Promise<void> {
  for (let i = 0; i < 50; i++) if ((await t.core.scheduler.runDue()) === 0) return;
  throw new Error("the scheduler did not settle");
}

/** The newest build of each environment. */
async function newest(): Promise<{ production: BuildResponse; staging: BuildResponse }> {
  const of = async (env: string) => (await expectStatus<BuildResponse[]>(await w.ctx.req("GET", `/builds?environment=${env}&limit=1`), 200))[0]!;
  return { production: await of("production"), staging: await of("staging") };
}

const stepOf = (b: BuildResponse, step: string) => b.step_timings.filter((s) => s.step === step).at(-1)!;
/** Of two builds, the one whose build step ran, then the other. */
function leaderFirst(a: BuildResponse, b: BuildResponse): [BuildResponse, BuildResponse] {
  return stepOf(a, "build").ok === true ? [a, b] : [b, a];
}
const rowOf = (id: number) => t.core.db.select().from(builds).where(eq(builds.id, id)).get()!;
const parked = (b: BuildResponse) => b.status === "building" && stepOf(b, "build")?.finished_at == null && (stepOf(b, "build")?.note ?? "").startsWith("waiting for the image of build #");

/** Once the push of `message` has one environment's build in checks and the other's parked on it: [leader, follower]. */
function parkedPair(message: string): Promise<readonly [BuildResponse, BuildResponse]> {
  return until("one build parked on the other in checks", async () => {
    const { production, staging } = await newest();
    if (production.message !== message || staging.message !== message) return null;
    if (parked(staging) && production.status === "checks") return [production, staging] as const;
    if (parked(production) && staging.status === "checks") return [staging, production] as const;
    return null;
  });
}

beforeAll(async () => {
  // Three builders: both environments' builds start at once, so one parks on the other.
  t = await createTestApp({ dataDir: buildsDataDir(), env: { OPS_BUILD_MEMORY_MB: "256", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5", OPS_BUILD_CONCURRENCY: "3" } });
  base = listenIngress(t);
  w = await buildWorld(t, { environments: ["production", "staging"], envGroup: true, spec: { health_check_path: "/healthz" } });
}, 60_000);

afterAll(async () => {
  w?.local.remove();
  await t?.close();
});

describe("one build per commit", () => {
  test("one push: one build runs, the other environment's build reuses its signed image and both roll out the same digest", async () => {
    await w.local.commit(SAMPLE_APP, "First version");
    await w.local.push("main");
    await drain();
    const { production, staging } = await newest();
    expect(production.commit_sha).toBe(staging.commit_sha);
    expect([production.status, staging.status]).toEqual(["healthy", "healthy"]);
    expect(production.image_digest).toBeString();
    expect(staging.image_digest).toBe(production.image_digest);
    expect(staging.image_ref).toBe(production.image_ref);
    const [leader, follower] = leaderFirst(production, staging);
    // The builder ran once: the leader's steps ran, the follower's say whose image it took.
    expect(leader.step_timings.map((s) => [s.step, s.ok])).toEqual(["clone", "checks", "build", "scan", "push", "sign", "deploy"].map((s) => [s, true]));
    const note = `reused image ${leader.image_digest} of build #${leader.id}`;
    expect(follower.step_timings.map((s) => s.step)).toEqual(["clone", "checks", "build", "scan", "push", "sign", "deploy"]);
    expect(follower.step_timings[0]).toMatchObject({ ok: true, note: `same inputs as build #${leader.id}` });
    for (const s of follower.step_timings.slice(1, 6)) {
      expect(s.ok).toBeUndefined();
      expect(s.note).toBe(note);
    }
    expect(follower.step_timings[6]!.ok).toBe(true);
    expect(follower.cache_hit ?? null).toBeNull();
    const [leaderLog, followerLog] = [await logText(w, leader.id), await logText(w, follower.id)];
    expect(leaderLog).toContain("built dist/ for web");
    expect(followerLog).not.toContain("built dist/ for web");
    expect(followerLog).toContain(`waits for its signed image instead of building`);
    expect(followerLog).toContain(`${note} (${leader.environment})`);
    // Each environment's rollout is of that digest, and each answers.
    for (const env of ["production", "staging"]) {
      const [row] = await expectStatus<any[]>(await w.ctx.req("GET", `/deployments?service=web&environment=${env}`), 200);
      expect(row.deployment).toMatchObject({ image_digest: production.image_digest, rollout: "healthy", trigger: "build" });
      expect(await (await viaIngress(base, defaultHostOf(w.ctx.slug, "web", env))).text()).toBe("hello from the build\n");
    }
  }, 180_000);

  test("the input key holds neither a build variable's value nor its plain digest", async () => {
    const { production, staging } = await newest();
    for (const b of [production, staging]) {
      const row = rowOf(b.id);
      expect(row.inputKey).toMatch(/^[0-9a-f]{64}$/);
      const stored = JSON.stringify(row);
      for (const value of Object.values(ENV_GROUP)) {
        expect(stored).not.toContain(value);
        expect(stored).not.toContain(createHash("sha256").update(value).digest("hex"));
      }
      expect(JSON.parse(row.inputParts!).variables).toStartWith("k:");
    }
    expect(rowOf(production.id).inputKey).toBe(rowOf(staging.id).inputKey);
  });

  test("a retry of the reused build reuses the image again, naming the build that made it", async () => {
    const { production, staging } = await newest();
    const [leader, follower] = leaderFirst(production, staging);
    const retry = await expectStatus<BuildResponse>(await w.ctx.req("POST", `/builds/${follower.id}/retry`), 201);
    await drain();
    const again = await getBuild(w, retry.id);
    expect(again).toMatchObject({ status: "healthy", trigger: "retry", image_digest: leader.image_digest, environment: follower.environment });
    expect(stepOf(again, "build")).toMatchObject({ note: `reused image ${leader.image_digest} of build #${leader.id}` });
    expect(stepOf(again, "build").ok).toBeUndefined();
    const log = await logText(w, retry.id);
    expect(log).not.toContain("built dist/ for web");
    // A signed image of its inputs was there before it cloned: the commit was not even fetched.
    expect(log).not.toContain("fetching ");
    expect(log).toContain(`same inputs as build #${leader.id}`);
  }, 120_000);

  test("a build that expected to follow but finds no build to follow when it claims clones again (it fetched nothing)", async () => {
    const b = await expectStatus<BuildResponse>(await w.ctx.req("POST", "/builds?environment=staging", { service: "web", ref: null }), 201);
    const row = rowOf(b.id);
    const draft = { key: "0".repeat(64), parts: { spec: "s", variables: "v", builder: "b" }, donor: null, leader: 999_999, other: null };
    const settle = (fetched: boolean) => tx(t.core.db, (tt) => settleClaimIn(t.core, tt, row, { ...draft, fetched }, {}));
    expect(settle(false)).toMatchObject({ kind: "reclone", leader: null });
    expect(settle(true)).toMatchObject({ kind: "lead", leader: null, line: null });
    expect(rowOf(b.id)).toMatchObject({ inputKey: draft.key, reuseOf: null });
    await expectStatus(await w.ctx.req("POST", `/builds/${b.id}/cancel`), 202);
    await drain();
    expect((await getBuild(w, b.id)).status).toBe("cancelled");
  });

  test("other build variables in staging: two real builds, two digests, and the log says why", async () => {
    await expectStatus(await w.ctx.req("PUT", `/resources/secret-group/web-env/variables/GREETING?environment=staging`, { value: "staging", kind: "text" }), 200);
    t.clock.advance(60_000);
    await w.local.commit({ "README.md": "# app\n" }, "Second version");
    await w.local.push("main");
    await drain();
    const { production, staging } = await newest();
    expect(production.message).toBe("Second version");
    expect([production.status, staging.status]).toEqual(["healthy", "healthy"]);
    expect(stepOf(production, "build").ok).toBe(true);
    expect(stepOf(staging, "build").ok).toBe(true);
    expect(staging.image_digest).not.toBe(production.image_digest);
    const logs = [await logText(w, production.id), await logText(w, staging.id)];
    for (const log of logs) expect(log).toContain("built dist/ for web");
    expect(logs.filter((l) => /of this commit has other inputs \(build variables\), so its image is not reused/.test(l))).toHaveLength(1);
    expect(await (await viaIngress(base, defaultHostOf(w.ctx.slug, "web", "staging"))).text()).toBe("hello from staging\n");
    expect(await (await viaIngress(base, defaultHostOf(w.ctx.slug, "web", "production"))).text()).toBe("hello from the build\n");
    await expectStatus(await w.ctx.req("PUT", `/resources/secret-group/web-env/variables/GREETING?environment=staging`, { value: ENV_GROUP.GREETING, kind: "text" }), 200);
  }, 180_000);

  test("a leader that fails its checks fails the build waiting for it, with its reason", async () => {
    t.clock.advance(60_000);
    await w.local.commit({ "ops.toml": opsToml({ build: ["node build.js"], check: ["exit 3"] }) }, "A failing check");
    await w.local.push("main");
    await drain();
    const { production, staging } = await newest();
    expect(production.message).toBe("A failing check");
    expect([production.status, staging.status]).toEqual(["failed", "failed"]);
    const [leader, follower] = stepOf(production, "checks")?.ok === false ? [production, staging] : [staging, production];
    expect(leader.failure_kind).toBe("checks");
    expect(follower.failure_kind).toBe("checks");
    expect(follower.error).toStartWith(`build #${leader.id} of the same inputs failed (checks): `);
    expect(stepOf(follower, "build")).toMatchObject({ ok: false, note: "checks" });
    expect(follower.step_timings.map((s) => s.step)).toEqual(["clone", "build"]);
  }, 120_000);

  test("a cancelled leader: the build waiting for it builds its image itself; a parked build cancels at once", async () => {
    t.clock.advance(60_000);
    await w.local.commit({ "ops.toml": opsToml({ build: ["node build.js"], check: ["sleep 30"] }) }, "Slow checks");
    await w.local.push("main");
    const running = drain();
    try {
      const [leader, follower] = await parkedPair("Slow checks");
      expect(rowOf(follower.id).reuseOf).toBe(leader.id);
      expect((await expectStatus<BuildResponse>(await w.ctx.req("POST", `/builds/${leader.id}/cancel`), 202)).status).toBe("checks");
      // The follower goes back to the queue and builds: its own clone, then its own checks.
      const rebuilding = await until("the follower in its own checks", async () => {
        const b = await getBuild(w, follower.id);
        return b.status === "checks" ? b : null;
      });
      expect(rebuilding.step_timings.map((s) => s.step)).toEqual(["clone", "build", "clone", "checks"]);
      expect(rebuilding.step_timings[1]).toMatchObject({ note: `build #${leader.id} was cancelled` });
      expect(rebuilding.step_timings[1]!.ok).toBeUndefined();
      expect(rowOf(follower.id).reuseOf).toBeNull();
      expect(await logText(w, follower.id)).toContain(`build #${leader.id} was cancelled: queued again to build the image here`);
      expect((await getBuild(w, leader.id)).status).toBe("cancelled");
      await expectStatus(await w.ctx.req("POST", `/builds/${follower.id}/cancel`), 202);
    } finally {
      await running;
    }
    // A build parked on a working leader ends at once when cancelled (nothing of its own runs).
    t.clock.advance(60_000);
    await w.local.commit({ "README.md": "# slow again\n" }, "Slow checks again");
    await w.local.push("main");
    const again = drain();
    try {
      const [leader, follower] = await parkedPair("Slow checks again");
      const cancelled = await expectStatus<BuildResponse>(await w.ctx.req("POST", `/builds/${follower.id}/cancel`), 202);
      expect(cancelled.status).toBe("cancelled");
      expect(stepOf(cancelled, "build")).toMatchObject({ ok: false, note: "cancelled" });
      await expectStatus(await w.ctx.req("POST", `/builds/${leader.id}/cancel`), 202);
    } finally {
      await again;
    }
  }, 180_000);
});
