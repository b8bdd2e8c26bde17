/**
 * Rollouts reported to GitHub (OPS_CODE_HOST=github, against the fake GitHub of the contract
 * suite): a push webhook builds the service's branch, the build's rollout becomes a GitHub
 * deployment of the commit to the environment with an `in_progress` status when it starts and a
 * `success` status when the new replicas serve; the deployment row and the build page carry both
 * GitHub ids. A rollback to the first build's image is a deployment of that build's commit.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { FakeGithub } from "./fake-github";
import { FixedClock } from "../src/core/clock";
import { buildsDataDir, drain, SAMPLE_APP } from "./builds-fixtures";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { eq } from "drizzle-orm";
import { deployments } from "../src/domains/deployments/tables";

setDefaultTimeout(120_000);

let clock: FixedClock;
let gh: FakeGithub;
let t: TestApp;
let ctx: ProjectCtx;
let dataDir: string;
let base: string;
let first: string;

beforeAll(async () => {
  clock = new FixedClock();
  gh = FakeGithub.start({ now: () => clock.now() });
  dataDir = buildsDataDir();
  t = await createTestApp({ dataDir, clock, env: { ...gh.env(), OPS_BUILD_MEMORY_MB: "256", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5" } });
  gh.install("acme");
  const repo = gh.createRepo("acme/shop");
  base = gh.repos.commit(repo, { "README.md": "# shop\n" });
  first = gh.repos.commit(repo, SAMPLE_APP, { message: "Sample app on GitHub" });
  ctx = await projectWithOwner(t);
  await expectStatus(await ctx.req("POST", "/sources", { repo: "acme/shop" }), 201);
  await expectStatus(await ctx.req("PUT", "/resources/service/web", { spec: { source: { repo: "acme/shop" }, port: 3000, health_check_path: "/healthz" } }), 201);
});
afterAll(async () => {
  await t?.close();
  gh?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function pushAndBuild(before: string, after: string): Promise<any> {
  await expectStatus(await gh.deliver(`${t.url}/api/v1/host/webhook`, "push", gh.pushPayload("acme/shop", "refs/heads/main", before, after)), 200);
  await drain(t);
  const [b] = await expectStatus<any[]>(await ctx.req("GET", "/builds"), 200);
  expect(b.commit_sha).toBe(after);
  return expectStatus<any>(await ctx.req("GET", `/builds/${b.id}`), 200);
}

function statusesOf(deploymentId: number): string[] {
  return gh.repo("acme/shop").deploymentStatuses.filter((s) => s.deployment_id === deploymentId).map((s) => String(s.state));
}

describe("rollouts on the GitHub App host", () => {
  test("a pushed build's rollout is a GitHub deployment: in progress, then success; both ids on the deployment", async () => {
    const detail = await pushAndBuild(base, first);
    expect(detail.build.status).toBe("healthy");
    const d = detail.deployment;
    expect(d).toMatchObject({ trigger: "build", rollout: "healthy", commit_sha: first });
    const deps = gh.repo("acme/shop").deployments;
    expect(deps).toHaveLength(1);
    expect(deps[0]).toMatchObject({ id: d.host_deployment_id, sha: first, environment: "production" });
    expect(detail.host.deployment_id).toBe(d.host_deployment_id);
    expect(statusesOf(deps[0].id)).toEqual(["in_progress", "success"]);
    const last = gh.repo("acme/shop").deploymentStatuses.at(-1)!;
    expect(last).toMatchObject({ id: d.host_status_id, state: "success", log_url: `${t.core.config.publicUrl}/projects/${ctx.slug}/deployments/web?environment=production` });
    const call = gh.calls.find((c) => c.method === "POST" && c.path === "/repos/acme/shop/deployments");
    expect(call).toBeDefined();
  });

  test("a rollback to the first build's image is a deployment of the first build's commit", async () => {
    clock.advance(60_000);
    const second = gh.repos.commit(gh.repo("acme/shop"), { "README.md": "# shop, again\n" }, { message: "Second" });
    const detail = await pushAndBuild(first, second);
    expect(detail.deployment).toMatchObject({ rollout: "healthy", commit_sha: second });
    const back = await expectStatus<any>(await ctx.req("POST", "/resources/service/web/rollback", {}), 201);
    await drain(t);
    const deps = gh.repo("acme/shop").deployments;
    expect(deps.map((d) => d.sha)).toEqual([first, second, first]);
    expect(statusesOf(deps[2].id)).toEqual(["in_progress", "success"]);
    expect(back.trigger).toBe("rollback");
  });

  test("GitHub refusing the deployment (at the start and again at the end) leaves the ids null and the rollout healthy; the refusal is logged", async () => {
    const before = gh.repo("acme/shop").deployments.length;
    gh.failNext({ status: 409, times: 2, path: /\/repos\/acme\/shop\/deployments$/, body: { message: "Conflict: Commit status checks failed for main." } });
    const back = await expectStatus<any>(await ctx.req("POST", "/resources/service/web/rollback", {}), 201);
    await drain(t);
    const row = t.core.db.select().from(deployments).where(eq(deployments.id, back.id)).get()!;
    expect(row).toMatchObject({ rollout: "healthy", hostDeploymentId: null, hostStatusId: null });
    expect(gh.repo("acme/shop").deployments).toHaveLength(before);
    expect(t.logs.some((l) => l.includes("rollout not reported to the code host") && l.includes(`"deployment":${back.id}`))).toBe(true);
  });
});
