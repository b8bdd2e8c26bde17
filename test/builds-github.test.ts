/**
 * Builds on the GitHub App code host (OPS_CODE_HOST=github) against the fake GitHub of the
 * contract suite: a signed push webhook queues a build of the service's branch, the commit comes
 * through the tarball download, and the build's check run and commit statuses land on GitHub
 * (created queued, updated in progress, concluded success), with the console's build page as the
 * details URL. A push to another branch builds nothing. A release tag on a commit with a
 * `modules/` tree publishes it, as on the built-in host.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { expectStatus, type TestApp } from "./harness";
import { FakeGithub } from "./fake-github";
import { FixedClock } from "../src/core/clock";
import { buildsApp, drain, SAMPLE_APP } from "./builds-fixtures";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";

setDefaultTimeout(120_000);

let clock: FixedClock;
let gh: FakeGithub;
let t: TestApp;
let ctx: ProjectCtx;
let base: string;
let head: string;

beforeAll(async () => {
  clock = new FixedClock();
  gh = FakeGithub.start({ now: () => clock.now() });
  t = await buildsApp(gh.env(), { clock });
  gh.install("acme");
  const repo = gh.createRepo("acme/shop");
  base = gh.repos.commit(repo, { "README.md": "# shop\n" });
  head = gh.repos.commit(repo, SAMPLE_APP, { message: "Sample app on GitHub" });
  ctx = await projectWithOwner(t);
  await expectStatus(await ctx.req("POST", "/sources", { repo: "acme/shop" }), 201);
  await expectStatus(await ctx.req("PUT", "/resources/service/web", { spec: { source: { repo: "acme/shop" }, port: 3000 } }), 201);
});
afterAll(async () => {
  await t?.close();
  gh?.stop();
});

describe("builds with the GitHub App host", () => {
  test("a push webhook builds the branch into a signed image; the check run and statuses land on GitHub", async () => {
    await expectStatus(await gh.deliver(`${t.url}/api/v1/host/webhook`, "push", gh.pushPayload("acme/shop", "refs/heads/feature", base, head)), 200);
    expect(await expectStatus<unknown[]>(await ctx.req("GET", "/builds"), 200)).toEqual([]);
    await expectStatus(await gh.deliver(`${t.url}/api/v1/host/webhook`, "push", gh.pushPayload("acme/shop", "refs/heads/main", base, head, "octo-dev")), 200);
    const [queued] = await expectStatus<any[]>(await ctx.req("GET", "/builds"), 200);
    expect(queued).toMatchObject({ trigger: "push", requested_by: "host", commit_sha: head, message: "Sample app on GitHub", branch: "main", repo: "acme/shop" });
    await drain(t);
    const { build } = await expectStatus<any>(await ctx.req("GET", `/builds/${queued.id}`), 200);
    expect(build.status).toBe("healthy");
    expect(build.image_digest).toMatch(/^sha256:/);
    const runs = gh.repo("acme/shop").checkRuns;
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ id: build.host_check_run_id, name: "ops/production/web", head_sha: head, status: "completed", conclusion: "success", details_url: `${t.url}/projects/${ctx.slug}/builds/${build.id}` });
    expect((runs[0].output as { summary: string }).summary).toContain("✓ sign");
    const statuses = gh.repo("acme/shop").statuses.filter((s) => s.sha === head);
    expect(statuses[0]).toMatchObject({ state: "pending", context: "ops/production/web" });
    expect(statuses.at(-1)).toMatchObject({ state: "success", context: "ops/production/web" });
    const calls = gh.calls.map((c) => `${c.method} ${c.path}`);
    expect(calls.some((c) => c.startsWith("GET /repos/acme/shop/tarball/"))).toBe(true);
    expect(calls.filter((c) => c.startsWith("PATCH /repos/acme/shop/check-runs/")).length).toBeGreaterThanOrEqual(6);
  });
  test("a release tag pushed on GitHub runs a publish build: the module's layer reaches the npm registry", async () => {
    const repo = gh.repo("acme/shop");
    const tagged = gh.repos.commit(repo, {
      ...SAMPLE_APP,
      "modules/kit/package.json": JSON.stringify({ name: "kit", version: "0.0.0", main: "index.js", license: "MIT" }),
      "modules/kit/index.js": "exports.kit = true;\n",
      "modules/kit/locales/en.json": JSON.stringify({ kit: { hello: "Hello from kit" } }),
      "modules/kit/CHANGELOG.md": "## 2.0.0\n\nThe kit.\n",
    }, { message: "The kit module" });
    await expectStatus(await ctx.req("PUT", `/packages/npm/${encodeURIComponent("@ops/kit")}`), 201);
    const before = (await expectStatus<any[]>(await ctx.req("GET", "/builds"), 200)).length;
    await expectStatus(await gh.deliver(`${t.url}/api/v1/host/webhook`, "push", gh.pushPayload("acme/shop", "refs/tags/v2.0.0", "0".repeat(40), tagged, "octo-dev")), 200);
    const list = await expectStatus<any[]>(await ctx.req("GET", "/builds"), 200);
    expect(list.length).toBe(before + 1);
    const publish = list.find((b) => b.kind === "publish")!;
    expect(publish).toMatchObject({ trigger: "push", requested_by: "host", commit_sha: tagged, branch: "v2.0.0" });
    await drain(t);
    const { build } = await expectStatus<any>(await ctx.req("GET", `/builds/${publish.id}`), 200);
    expect([build.status, build.error ?? null]).toEqual(["published", null]);
    expect(build.step_timings.map((x: { step: string }) => x.step)).toEqual(["clone", "plan", "crates", "layers", "locales"]);
    const doc = await (await fetch(`${t.url}/npm/${encodeURIComponent("@ops/kit")}`, { headers: { authorization: `Bearer ${ctx.owner.session}` } })).json();
    expect(Object.keys(doc.versions)).toEqual(["2.0.0"]);
    const modules = await expectStatus<any>(await ctx.req("GET", "/modules"), 200);
    expect(JSON.stringify(modules)).toContain("kit");
  });
});
