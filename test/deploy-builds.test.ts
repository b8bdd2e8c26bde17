/**
 * The builds side of deployments, in-process: a push to the service's branch builds a signed
 * image and deploys it by itself (the build waits in `deploying` for the rollout's verdict and
 * ends `healthy`; the timeline folds the two into one row), a deploy by `build_id` (201; 404 for
 * an unknown build; 422 for a build without an image), and the 409 while a build of the service
 * is between `deploying` and its verdict.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { buildsDataDir, LocalRepo, opsToml, SAMPLE_APP } from "./builds-fixtures";
import { cloneUrl } from "./sources-git-helpers";
import { defaultHostOf, listenIngress, viaIngress } from "./deploy-fixtures";
import { builds } from "../src/domains/builds/tables";

let t: TestApp;
let ctx: ProjectCtx;
let local: LocalRepo;
let base: string;

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

  test("deploy by build_id: 201; 404 an unknown build; 422 a build without an image", async () => {
    const [row] = await timeline();
    const d = await expectStatus(await ctx.req("POST", "/resources/service/web/deploy", { build_id: row.build.id }), 201);
    expect(d).toMatchObject({ build_id: row.build.id, image_digest: row.build.image_digest, trigger: "manual", message: "First version" });
    await drain();
    const [again] = await timeline();
    expect(again).toMatchObject({ state: "healthy", deployment: { id: d.id, trigger: "manual" }, build: { id: row.build.id } });
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
