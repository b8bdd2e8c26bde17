/**
 * The hand-off to deployments (BUILDS-DEPLOY-CONTRACT.md), with a recording deployer standing in
 * for the deployments domain: a signed build moves to `deploying` and is handed over with every
 * DeployableBuild field; it is not cancellable; the verdicts (healthy, rolled back, failed) end it
 * once; a refused rollout fails it `deploy`; a service with 0 replicas is not deployed; the reads
 * deployments uses; and a restart hands over again a build whose hand-over never completed, or
 * fails it when ops restarts without a deployer.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import { and, eq } from "drizzle-orm";
import { expectStatus, type TestApp } from "./harness";
import { buildsApp, buildsDataDir, buildWorld, drain, getBuild, manualBuild, opsToml, SAMPLE_APP, type BuildWorld } from "./builds-fixtures";
import { OpsError } from "../src/core/errors";
import { buildsModule } from "../src/domains/builds";
import { buildBetweenDeployingAndVerdict, getBuildRow, installBuildDeployer, listBuildsForTimeline, recordBuildVerdict, type DeployableBuild } from "../src/domains/builds/service";
import { builds } from "../src/domains/builds/tables";
import { notices } from "../src/domains/notifications/tables";
import { gitRecords } from "../src/adapters/codehost/builtin/tables";
import { reportToHost } from "../src/domains/builds/host";

const dataDir = buildsDataDir();
let t: TestApp;
let w: BuildWorld;
const handed: DeployableBuild[] = [];
let refuse: string | null = null;

function install(app: TestApp): void {
  installBuildDeployer(app.core, {
    async deployBuild(_core, build) {
      if (refuse) throw new OpsError("conflict", refuse);
      handed.push(build);
    },
    deploymentOf(_core, buildId) {
      const b = handed.find((h) => h.id === buildId);
      if (!b) return null;
      return { author: b.author, build_id: b.id, commit_sha: b.commitSha, created_at: "2026-01-01T00:00:00.000Z", created_by: "system", environment: b.environment, id: 7, image_digest: b.imageDigest, message: b.message, project: b.project, rollout: "probing", service: b.service, trigger: "build", host_deployment_id: 42 };
    },
  });
}

beforeAll(async () => {
  t = await buildsApp({}, { dataDir });
  install(t);
  w = await buildWorld(t);
  await w.local.commit({ ...SAMPLE_APP, "ops.toml": opsToml({ build: ["node build.js"] }) }, "Deployable app");
  await w.local.push("main");
  await drain(t);
}, 120_000);
afterAll(async () => {
  w?.local.remove();
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("hand-off to the deployer", () => {
  test("a signed build of the service's branch moves to deploying and is handed over with every DeployableBuild field", async () => {
    const [first] = await expectStatus<any[]>(await w.ctx.req("GET", "/builds"), 200);
    const b = await getBuild(w, first.id);
    expect(b.status).toBe("deploying");
    expect(b.step_timings.map((s) => s.step)).toEqual(["clone", "checks", "build", "scan", "push", "sign", "deploy"]);
    expect(b.step_timings[6].finished_at ?? null).toBeNull();
    expect(handed).toHaveLength(1);
    expect(handed[0]).toEqual({
      id: b.id,
      project: w.ctx.slug,
      environment: "production",
      service: "web",
      imageDigest: b.image_digest!,
      imageRef: b.image_ref!,
      commitSha: b.commit_sha,
      message: "Deployable app",
      author: "Test Author",
      requestedBy: "host",
      trigger: "push",
      sourceId: w.sourceId,
      repo: w.repo,
    });
    const detail = await expectStatus<any>(await w.ctx.req("GET", `/builds/${b.id}`), 200);
    expect(detail.deployment).toMatchObject({ id: 7, build_id: b.id, rollout: "probing" });
    expect(detail.host.deployment_id).toBe(42);
    await reportToHost(t.core, b.id);
    const check = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, b.host_check_run_id!)).get()!;
    expect(check.state).toBe("in_progress");
  });

  test("while deploying: cancel is 409 (rollout started), and it is the build between deploying and its verdict", async () => {
    const id = handed[0].id;
    const res = await expectStatus<any>(await w.ctx.req("POST", `/builds/${id}/cancel`), 409);
    expect(res.message).toContain("rollout started");
    expect(buildBetweenDeployingAndVerdict(t.core, w.ctx.slug, "production", "web")?.id).toBe(id);
    expect(buildBetweenDeployingAndVerdict(t.core, w.ctx.slug, "staging", "web")).toBeNull();
    expect(getBuildRow(t.core, w.ctx.slug, id)?.status).toBe("deploying");
    expect(getBuildRow(t.core, w.ctx.slug, 999_999)).toBeNull();
    const timeline = listBuildsForTimeline(t.core, w.ctx.slug, "production", "web", 10);
    expect(timeline[0]).toMatchObject({ id, status: "deploying", image_digest: handed[0].imageDigest });
  });

  test("a healthy verdict ends it once: finished, deploy timing ok, check run success", async () => {
    const id = handed[0].id;
    expect(recordBuildVerdict(t.core, id, { status: "healthy" })).toBe(true);
    expect(recordBuildVerdict(t.core, id, { status: "failed", failureKind: "deploy", error: "late" })).toBe(false);
    const b = await getBuild(w, id);
    expect(b).toMatchObject({ status: "healthy" });
    expect(b.finished_at).toBeTruthy();
    expect(b.step_timings.at(-1)).toMatchObject({ step: "deploy", ok: true });
    expect(buildBetweenDeployingAndVerdict(t.core, w.ctx.slug, "production", "web")).toBeNull();
    await reportToHost(t.core, id);
    const check = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, b.host_check_run_id!)).get()!;
    expect(check).toMatchObject({ state: "completed", conclusion: "success" });
  });

  test("a manual build deploys too; a rolled-back verdict ends it rolled_back (health) and notifies", async () => {
    const queued = await manualBuild(w, null);
    await drain(t);
    expect((await getBuild(w, queued.id)).status).toBe("deploying");
    expect(handed.at(-1)).toMatchObject({ id: queued.id, trigger: "manual", requestedBy: w.ctx.owner.email });
    expect(recordBuildVerdict(t.core, queued.id, { status: "rolled_back", failureKind: "health", error: "/healthz answered 500 for 60 s" })).toBe(true);
    const b = await getBuild(w, queued.id);
    expect(b).toMatchObject({ status: "rolled_back", failure_kind: "health", error: "/healthz answered 500 for 60 s" });
    expect(b.step_timings.at(-1)).toMatchObject({ step: "deploy", ok: false, note: "health" });
    const mine = t.core.db.select().from(notices).where(and(eq(notices.operatorId, w.ctx.owner.operator.id), eq(notices.kind, "build.failed"))).all();
    expect(mine.map((n) => JSON.parse(n.params))).toContainEqual(expect.objectContaining({ build: queued.id, failure_kind: "health" }));
  });

  test("a refused rollout fails the build with deploy and the deployer's message", async () => {
    refuse = "a rollout of web is already in flight";
    try {
      const queued = await manualBuild(w, null);
      await drain(t);
      expect(await getBuild(w, queued.id)).toMatchObject({ status: "failed", failure_kind: "deploy", error: "a rollout of web is already in flight" });
    } finally {
      refuse = null;
    }
  });

  test("a service with 0 replicas is not deployed: healthy after signing, with the note", async () => {
    await expectStatus(await w.ctx.req("PUT", "/resources/service/web", { spec: { source: { repo: w.repo }, port: 3000, replicas: 0 } }), 200);
    try {
      const queued = await manualBuild(w, null);
      await drain(t);
      const b = await getBuild(w, queued.id);
      expect(b.status).toBe("healthy");
      expect(b.step_timings.at(-1)).toMatchObject({ step: "deploy", note: "not deployed: the service runs 0 replicas" });
    } finally {
      await expectStatus(await w.ctx.req("PUT", "/resources/service/web", { spec: { source: { repo: w.repo }, port: 3000 } }), 200);
    }
  });
});

describe("deploying across a restart", () => {
  test("a build whose hand-over never completed is handed over again at start-up", async () => {
    const queued = await manualBuild(w, null);
    await drain(t);
    expect((await getBuild(w, queued.id)).status).toBe("deploying");
    // As if ops died inside deployBuild: no hand-over recorded.
    t.core.db.update(builds).set({ deployHandedAt: null }).where(eq(builds.id, queued.id)).run();
    await buildsModule.onServe!(t.core);
    await drain(t);
    expect(handed.filter((h) => h.id === queued.id)).toHaveLength(2);
    expect(t.core.db.select().from(builds).where(eq(builds.id, queued.id)).get()!.deployHandedAt).not.toBeNull();
    // Handed over: a further start-up leaves it to the deployer's own recovery.
    await buildsModule.onServe!(t.core);
    await drain(t);
    expect(handed.filter((h) => h.id === queued.id)).toHaveLength(2);
    expect(recordBuildVerdict(t.core, queued.id, { status: "healthy" })).toBe(true);
  });

  test("ops restarted without a deployer: a build left deploying fails with deploy, never stays running", async () => {
    const queued = await manualBuild(w, null);
    await drain(t);
    expect((await getBuild(w, queued.id)).status).toBe("deploying");
    await t.close();
    t = await buildsApp({}, { dataDir });
    await buildsModule.onServe!(t.core);
    const row = getBuildRow(t.core, w.ctx.slug, queued.id)!;
    expect(row).toMatchObject({ status: "failed", failureKind: "deploy" });
    expect(row.error).toContain("without a deployer");
  });
});
