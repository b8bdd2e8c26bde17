/**
 * Deploying by picking a build, in a real browser: two versions of the sample app pushed with the
 * real git CLI are built, signed and rolled out by themselves (the newer one runs); on the
 * service page a developer picks the older build in "Build or image", confirms, and the service
 * runs that build's image again, answering with its version through the ingress. The Packages
 * page then lists the service's two digests, each signed by the build that pushed it, and which
 * one runs. Screenshots go to test/artifacts/.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { buildsDataDir, buildWorld, SAMPLE_APP, type BuildWorld } from "./builds-fixtures";
import { defaultHostOf, listenIngress, viaIngress } from "./deploy-fixtures";
import { launchChromium, shot, WallClock } from "./chromium";
import { recordIngressMetrics } from "../src/domains/deployments/ingress-metrics";
import { existingWriter } from "../src/domains/observability/writer";

setDefaultTimeout(180_000);

let t: TestApp;
let w: BuildWorld;
let browser: Browser;
let ingress: string;
const dataDir = buildsDataDir();
const builds: Record<string, { id: number; image_digest: string }> = {};

const version = (v: string) => ({ ...SAMPLE_APP, "server.js": SAMPLE_APP["server.js"].replace('res.end("hello from "', `res.end("${v} hello from "`) });
const answer = async () => (await viaIngress(ingress, defaultHostOf(w.ctx.slug, "web"), "/")).text();

async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 90_000;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`${what} did not happen within 90 s`);
    await Bun.sleep(200);
  }
}

async function pushAndBuild(v: string): Promise<void> {
  const sha = await w.local.commit(version(v), `The ${v} version`);
  await w.local.push("main");
  await until(`the ${v} build`, async () => {
    const list = await expectStatus<any[]>(await w.ctx.req("GET", "/builds"), 200);
    const b = list.find((x) => x.commit_sha === sha);
    if (b && ["failed", "cancelled", "rolled_back"].includes(b.status)) throw new Error(`build ${b.id} ended ${b.status}: ${b.error}`);
    if (b?.status === "healthy") builds[v] = b;
    return b?.status === "healthy";
  });
}

beforeAll(async () => {
  t = await createTestApp({ dataDir, clock: new WallClock(), env: { OPS_SCHEDULER_TICK_MS: "100", OPS_BUILD_MEMORY_MB: "192", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "20" } });
  ingress = listenIngress(t);
  w = await buildWorld(t);
  t.core.scheduler.start();
  await pushAndBuild("v1");
  await pushAndBuild("v2");
  await until("v2 answering", async () => (await answer()).startsWith("v2 "));
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await t?.core.scheduler.stop(5000);
  w?.local.remove();
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("deploy a build from the console", () => {
  test("pick the older build, confirm, and the service runs its image again", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${w.ctx.slug}`);
    await page.getByLabel("Email").fill(w.ctx.owner.email);
    await page.getByLabel("Password").fill(w.ctx.owner.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("table.services tbody tr").first().getByRole("link", { name: "web" }).click();
    await page.getByText(builds.v2.image_digest, { exact: true }).waitFor();

    const pick = page.getByLabel("Build or image");
    // The builds fill the picker after the service page shows: wait for the one to pick.
    await pick.locator("option", { hasText: `Build ${builds.v1.id}: The v1 version` }).waitFor({ state: "attached" });
    const label = (await pick.locator("option").allInnerTexts()).find((o) => o.startsWith(`Build ${builds.v1.id}: The v1 version`));
    expect(label).toBeDefined();
    await pick.selectOption({ label: label! });
    await page.getByRole("button", { name: "Deploy…" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Deploy?" });
    expect(await dialog.innerText()).toContain(`build ${builds.v1.id}`);
    await shot(page, "deployments-pick-build");
    await dialog.getByRole("button", { name: "Yes, deploy" }).click();

    await page.getByText(builds.v1.image_digest, { exact: true }).waitFor({ timeout: 60_000 });
    await page.locator("table.timeline tbody tr").first().locator(".badge", { hasText: "healthy" }).waitFor({ timeout: 60_000 });
    expect(await answer()).toStartWith("v1 ");
    const timeline = await expectStatus<any[]>(await w.ctx.req("GET", "/deployments?service=web"), 200);
    expect(timeline[0].deployment).toMatchObject({ image_digest: builds.v1.image_digest, trigger: "manual" });
    await shot(page, "deployments-build-deployed");

    // The picker starts at what runs, not at the newest build (issue 27: after a rollback it offered the broken one).
    await page.reload();
    await page.waitForFunction(() => (document.querySelector("#deploy-pick option:checked")?.textContent ?? "").includes("running"));
    const selected = await page.locator("#deploy-pick option:checked").innerText();
    expect(selected).toStartWith(`Build ${builds.v1.id}: The v1 version`);
    expect(selected).toEndWith("— running");
    await context.close();
  });

  test("Packages: the service's digests, each signed by its build, and the one that runs", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${w.ctx.slug}/packages`);
    await page.getByLabel("Email").fill(w.ctx.owner.email);
    await page.getByLabel("Password").fill(w.ctx.owner.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("table.images").getByRole("link", { name: `${w.ctx.slug}/web` }).click();
    const row = (v: string) => page.locator("table.digests tbody tr", { has: page.locator(`code[title="${builds[v]!.image_digest}"]`) });
    await row("v1").waitFor();
    expect(await page.locator("table.digests tbody tr").count()).toBe(2);
    const v1 = await row("v1").innerText();
    const v2 = await row("v2").innerText();
    expect(v1).toContain(`signed with the estate key by build ${builds.v1!.id}`);
    expect(v2).toContain(`signed with the estate key by build ${builds.v2!.id}`);
    expect(v1).toContain("production");
    expect(v2).toContain("not running");
    await shot(page, "packages-image-digests");
    await context.close();
  });

  test("a version that crashes at start rolls back; its build page and the service page show the Error line it printed", async () => {
    const crashing = { ...SAMPLE_APP, "server.js": `console.log("starting v3");\nthrow new Error("DATABASE_URL is not set");\n` };
    const sha = await w.local.commit(crashing, "The v3 version");
    await w.local.push("main");
    let build: { id: number; status: string } | undefined;
    await until("the v3 build to roll back", async () => {
      const list = await expectStatus<any[]>(await w.ctx.req("GET", "/builds"), 200);
      build = list.find((x) => x.commit_sha === sha);
      return build?.status === "rolled_back";
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${w.ctx.slug}/builds/${build!.id}`);
    await page.getByLabel("Email").fill(w.ctx.owner.email);
    await page.getByLabel("Password").fill(w.ctx.owner.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    const printed = page.locator(".failure-output pre").first();
    await printed.waitFor();
    const text = await printed.innerText();
    expect(text).toContain("starting v3");
    expect(text).toContain("Error: DATABASE_URL is not set");
    expect(text.indexOf("starting v3")).toBeLessThan(text.indexOf("Error: DATABASE_URL is not set"));
    await shot(page, "build-failure-output");
    await page.getByRole("link", { name: "All its lines in Logs" }).waitFor();
    // The service page says it too, above its facts; v1 keeps serving. Its Traffic line reads the
    // ingress's request metrics (written every 10 s under ops serve; read once here).
    const served = 7;
    for (let i = 0; i < served; i++) await answer();
    await recordIngressMetrics(t.core);
    await existingWriter(t.core)?.flush();
    await page.goto(`${t.url}/projects/${w.ctx.slug}/deployments/web?environment=production`);
    await page.locator("#last-failure").waitFor();
    const traffic = page.locator(".traffic");
    await traffic.waitFor();
    const [, count] = /^(\d+) requests? in the last hour, 0 answered 5xx; p95 \d+ ms/.exec(await traffic.innerText()) ?? [];
    expect(Number(count)).toBeGreaterThanOrEqual(served);
    expect(await page.locator(".failure-output pre").first().innerText()).toContain("Error: DATABASE_URL is not set");
    expect(await answer()).toStartWith("v1 ");
    await context.close();
  });
});
