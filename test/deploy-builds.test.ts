/**
 * The builds side of deployments, in-process: a push to the service's branch builds a signed
 * image and deploys it by itself (the build waits in `deploying` for the rollout's verdict and
 * ends `healthy`; the timeline folds the two into one row), a deploy by `build_id` (201; 404 for
 * an unknown build; 422 for a build without an image), and the 409 while a build of the service
 * is between `deploying` and its verdict. Each rollout of a commit is reported to the built-in code
 * host as a deployment with a status when it starts and one when it ends (success, or failure
 * for a rollback), and the deployment carries both ids.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { buildsDataDir, LocalRepo, opsToml, SAMPLE_APP } from "./builds-fixtures";
import { cloneUrl } from "./sources-git-helpers";
import { defaultHostOf, listenIngress, viaIngress } from "./deploy-fixtures";
import { builds } from "../src/domains/builds/tables";
import { gitRecords } from "../src/adapters/codehost/builtin/tables";

let t: TestApp;
let ctx: ProjectCtx;
let local: LocalRepo;
let base: string;

/** The built-in host's deployment record `id` and its statuses, oldest first. */
function hostDeployment(id: number) {
  const dep = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, id)).get()!;
  const statuses = t.core.db.select().from(gitRecords).where(eq(gitRecords.parentId, id)).all().filter((r) => r.kind === "deployment_status").sort((a, b) => a.id - b.id);
  return { dep, statuses };
}

async function drain(): Promise<void> {
  for (let i = 0; i < 50; i++) if ((await t.core.scheduler.runDue()) === 0) return;
  throw new Error("the scheduler did not settle");
}

const timeline = async () => expectStatus<any[]>(await ctx.req("GET", "/deployments?service=web"), 200);

beforeAll(async () => {
  t = await createTestApp({ dataDir: buildsDataDir(), env: { OPS_BUILD_MEMORY_MB: "256", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5" } });
  base = listenIngress(t);
  ctx = await projectWithOwner(t);
  const source = await expectStatus(await ctx.req("POST", "/sources", { repo: `${ctx.slug}/app` }), 201);
  await expectStatus(await ctx.req("PUT", "/resources/service/web", { spec: { source: { repo: source.repo }, port: 3000, health_check_path: "/healthz" } }), 201);
  local = await LocalRepo.create(cloneUrl(t.url, source.repo, ctx.owner.session));
  await local.commit(SAMPLE_APP, "First version");
  await local.push("main");
  await drain();
}, 120_000);

afterAll(async () => {
  await t.close();
  local.remove();
});

describe("a build's rollout", () => {
  test("a push deploys itself: the build ends healthy after its rollout; one timeline row for both", async () => {
    const [row] = await timeline();
    expect(row).toMatchObject({ state: "healthy", message: "First version", build: { status: "healthy", trigger: "push", kind: "image" }, deployment: { trigger: "build", rollout: "healthy" } });
    expect(row.deployment.image_digest).toBe(row.build.image_digest);
    expect(await (await viaIngress(base, defaultHostOf(ctx.slug, "web"))).text()).toBe("hello from ops\n");
    const detail = await expectStatus(await ctx.req("GET", `/builds/${row.build.id}`), 200);
    expect(detail.deployment).toMatchObject({ id: row.deployment.id, build_id: row.build.id, rollout: "healthy", trigger: "build" });
  }, 60_000);

  test("the rollout is reported to the code host: a deployment of the commit, in progress, then success; both ids on the deployment", async () => {
    const [row] = await timeline();
    const detail = await expectStatus(await ctx.req("GET", `/builds/${row.build.id}`), 200);
    const d = detail.deployment;
    expect(d.host_deployment_id).toBeNumber();
    expect(d.host_status_id).toBeNumber();
    expect(detail.host.deployment_id).toBe(d.host_deployment_id);
    const { dep, statuses } = hostDeployment(d.host_deployment_id);
    expect(dep).toMatchObject({ repo: `${ctx.slug}/app`, kind: "deployment", sha: row.build.commit_sha ?? row.commit, name: "production", state: "success" });
    expect(statuses.map((s) => s.state)).toEqual(["in_progress", "success"]);
    expect(statuses.at(-1)!.id).toBe(d.host_status_id);
    expect(JSON.parse(statuses[0].detail).log_url).toBe(`${t.core.config.publicUrl}/projects/${ctx.slug}/deployments/web?environment=production`);
  }, 60_000);

  test("deploy by build_id: 201; 404 an unknown build; 422 a build without an image", async () => {
    const [row] = await timeline();
    const d = await expectStatus(await ctx.req("POST", "/resources/service/web/deploy", { build_id: row.build.id }), 201);
    expect(d).toMatchObject({ build_id: row.build.id, image_digest: row.build.image_digest, trigger: "manual", message: "First version" });
    await drain();
    const [again] = await timeline();
    expect(again).toMatchObject({ state: "healthy", deployment: { id: d.id, trigger: "manual" }, build: { id: row.build.id } });
    // A second rollout of the same commit is a second deployment on the host.
    const onHost = t.core.db.select().from(gitRecords).where(eq(gitRecords.sha, row.commit)).all().filter((r) => r.kind === "deployment");
    expect(onHost.map((r) => r.state)).toEqual(["success", "success"]);
    await expectStatus(await ctx.req("POST", "/resources/service/web/deploy", { build_id: 99_999 }), 404);
    t.clock.advance(60_000);
    await local.commit({ "ops.toml": opsToml({ build: ["node build.js"], check: ["exit 3"] }) }, "A failing check");
    await local.push("main");
    await drain();
    const [failed] = await timeline();
    expect(failed).toMatchObject({ state: "failed", failure_kind: "checks", deployment: null, message: "A failing check" });
    expect(failed.state_text).toStartWith("Failed (checks)");
    const body = await expectStatus(await ctx.req("POST", "/resources/service/web/deploy", { build_id: failed.build.id }), 422);
    expect(body.message).toContain("has no image");
  }, 120_000);

  test("a rollout whose replicas never turn healthy is reported as a failure once rolled back", async () => {
    t.clock.advance(60_000);
    await local.commit({ ...SAMPLE_APP, "server.js": SAMPLE_APP["server.js"].replace('return res.end("ok")', "return res.writeHead(500).end()") }, "Health never answers");
    await local.push("main");
    await drain();
    const [row] = await timeline();
    expect(row).toMatchObject({ message: "Health never answers", state: "rolled_back", deployment: { rollout: "rolled_back" } });
    const detail = await expectStatus(await ctx.req("GET", `/builds/${row.build.id}`), 200);
    const { dep, statuses } = hostDeployment(detail.deployment.host_deployment_id);
    expect(dep).toMatchObject({ sha: row.commit, name: "production", state: "failure" });
    expect(statuses.map((s) => s.state)).toEqual(["in_progress", "failure"]);
    expect(JSON.parse(statuses[1].detail).description).toContain("not healthy");
    expect(detail.deployment.host_status_id).toBe(statuses[1].id);
  }, 120_000);

  test("409 while a build of the service is between deploying and its verdict", async () => {
    const ok = (await timeline()).find((r) => r.build?.trigger === "push" && r.build.status === "healthy");
    t.core.db.update(builds).set({ status: "deploying" }).where(eq(builds.id, ok.build.id)).run();
    try {
      const body = await expectStatus(await ctx.req("POST", "/resources/service/web/rollback", {}), 409);
      expect(body.message).toContain(`Build ${ok.build.id} of web is deploying`);
      await expectStatus(await ctx.req("POST", "/resources/service/web/deploy", { build_id: ok.build.id }), 409);
    } finally {
      t.core.db.update(builds).set({ status: "healthy" }).where(eq(builds.id, ok.build.id)).run();
    }
  });
});
