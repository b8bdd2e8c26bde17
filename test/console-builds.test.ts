/**
 * The Builds section in a real browser (Debian's chromium through playwright-core), against a
 * server whose scheduler runs: the list (state, commit, author, duration, failure), a healthy
 * build's page with its steps and log, a build started from the form whose log is followed live
 * while its command prints, cancelled with the button, then retried; a retry of the healthy
 * build, which reuses its image (decision 0435): "reused from #N" in the list, "Built by" with a
 * link and the skipped steps' notes on its page; and a publish build (a
 * pushed `v1.0.0` tag of a `modules/` tree): its row, its page cancelled while its layer packs,
 * then retried to `published` with its steps Clone, Plan, Crates, Layers, Locales and its log.
 * Screenshots go to test/artifacts/ (builds-*.png).
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { launchChromium, shot, WallClock } from "./chromium";
import { expectStatus, type TestApp } from "./harness";
import { buildsApp, buildWorld, drain, getBuild, manualBuild, opsToml, SAMPLE_APP, until, type BuildWorld } from "./builds-fixtures";
import { claimModuleNames } from "./support/modules";
import { git } from "./sources-git-helpers";

setDefaultTimeout(120_000);

let t: TestApp;
let w: BuildWorld;
let browser: Browser;

beforeAll(async () => {
  t = await buildsApp({ OPS_SCHEDULER_TICK_MS: "100" }, { clock: new WallClock() });
  w = await buildWorld(t, { envGroup: true });
  const app = { "server.js": SAMPLE_APP["server.js"], "build.js": SAMPLE_APP["build.js"], "check.js": SAMPLE_APP["check.js"] };
  await w.local.commit(SAMPLE_APP, "Hello over HTTP");
  await w.local.commit({ ...app, "ops.toml": opsToml({ check: ["node -e 'console.error(\"expected 200, got 500\"); process.exit(1)'"], build: ["node build.js"] }) }, "Break the checks", "broken");
  await w.local.commit({ ...app, "ops.toml": opsToml({ build: ["for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo tick $i; sleep 1; done", "node build.js"] }) }, "A slow build", "slow");
  await w.local.push("main", "broken", "slow");
  await manualBuild(w, "broken");
  await drain(t);
  await claimModuleNames(t, w.ctx.slug, w.ctx.owner, ["kit"]);
  t.core.scheduler.start();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await t?.core.scheduler.stop(5000);
  w?.local.remove();
  await t?.close();
});

/** A new browser context signed in as the project's owner on the Builds page. */
async function signedIn(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${t.url}/projects/${w.ctx.slug}/builds`);
  await page.getByLabel("Email").fill(w.ctx.owner.email);
  await page.getByLabel("Password").fill(w.ctx.owner.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  return { context, page };
}

describe("Builds in chromium", () => {
  test("the list, a build's steps and log, a live log followed, cancel and retry", async () => {
    const { context, page } = await signedIn();

    await page.getByRole("heading", { name: "Builds" }).waitFor();
    const rows = page.locator("table.builds tbody tr");
    await rows.nth(1).waitFor();
    const failed = rows.filter({ hasText: "Break the checks" });
    expect(await failed.locator(".badge", { hasText: "failed" }).isVisible()).toBe(true);
    expect(await failed.locator(".tag-bad", { hasText: "checks" }).isVisible()).toBe(true);
    const healthy = rows.filter({ hasText: "Hello over HTTP" });
    expect(await healthy.locator(".badge", { hasText: "healthy" }).isVisible()).toBe(true);
    expect(await healthy.getByText("Test Author").isVisible()).toBe(true);
    expect(await healthy.getByText(/\d+ s/).count()).toBe(1);
    await shot(page, "builds-list");

    await healthy.getByRole("link").click();
    await page.getByRole("heading", { name: /Build #\d+ · web/ }).waitFor();
    const steps = page.locator("ol.build-steps li");
    expect(await steps.allInnerTexts()).toEqual([
      expect.stringContaining("Clone"),
      expect.stringContaining("Checks"),
      expect.stringContaining("Build"),
      expect.stringContaining("Secret scan"),
      expect.stringContaining("Push"),
      expect.stringContaining("Sign"),
      expect.stringContaining("not deployed: no deployer is installed in this server"),
    ]);
    await page.locator("pre.log").getByText("deploy token: ***").waitFor();
    expect(await page.locator("pre.log").innerText()).not.toContain("tok-9f8e7d6c5b4a3921");
    expect(await page.getByRole("button", { name: "Cancel" }).count()).toBe(0);
    await shot(page, "builds-healthy");

    // Build the slow branch from the form and follow its log while it runs.
    await page.getByRole("link", { name: "← All builds" }).click();
    await page.getByLabel("Branch").fill("slow");
    await page.getByRole("button", { name: "Build" }).click();
    await page.getByRole("heading", { name: /Build #\d+ · web/ }).waitFor();
    const log = page.locator("pre.log");
    await log.getByText("tick 3", { exact: true }).waitFor({ timeout: 60_000 });
    expect(await page.getByText("Following the build…").isVisible()).toBe(true);
    expect(await page.locator("ol.build-steps li.step-running").innerText()).toContain("Build");
    const seen = (await log.innerText()).split("\n").filter((l) => l.includes("tick")).length;
    await log.getByText("tick 5", { exact: true }).waitFor({ timeout: 30_000 });
    expect((await log.innerText()).split("\n").filter((l) => l.includes("tick")).length).toBeGreaterThan(seen);
    await shot(page, "builds-running");

    await page.getByRole("button", { name: "Cancel" }).click();
    // The notice shows while the step is being stopped; once the build reads cancelled the badge
    // says so instead (a step killed quickly can end before the page's next reload).
    const cancelled = page.locator(".build-head .badge", { hasText: "cancelled" });
    await page.getByText(/Cancelling: the running step's processes were stopped/).or(cancelled).first().waitFor();
    await cancelled.waitFor({ timeout: 30_000 });
    expect(await page.getByRole("button", { name: "Cancel" }).count()).toBe(0);
    expect(await page.locator("ol.build-steps li.step-failed").innerText()).toContain("cancelled");
    await shot(page, "builds-cancelled");

    const before = page.url();
    await page.getByRole("button", { name: "Retry" }).click();
    await page.waitForURL((u) => u.toString() !== before);
    await page.getByRole("heading", { name: /Build #\d+ · web/ }).waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator(".build-head .badge", { hasText: "cancelled" }).waitFor({ timeout: 30_000 });
    await context.close();
  });

  test("a build that reused another's image (a retry of the same inputs) names that build, in the list and on its page", async () => {
    const list = await expectStatus<Array<{ id: number; message: string; status: string }>>(await w.ctx.req("GET", "/builds"), 200);
    const made = list.find((b) => b.message === "Hello over HTTP" && b.status === "healthy")!;
    const retry = await expectStatus<{ id: number }>(await w.ctx.req("POST", `/builds/${made.id}/retry`), 201);
    await until("the retry reused the image", async () => (await getBuild(w, retry.id)).status === "healthy");

    const { context, page } = await signedIn();
    const row = page.locator("table.builds tbody tr", { has: page.getByRole("link", { name: `#${retry.id} web` }) });
    await row.getByText(`reused from #${made.id}`).waitFor();
    await row.getByRole("link").click();
    await page.getByRole("heading", { name: `Build #${retry.id} · web` }).waitFor();
    await page.getByText("Built by").waitFor();
    expect(await page.getByRole("link", { name: `build #${made.id}` }).isVisible()).toBe(true);
    const steps = await page.locator("ol.build-steps li").allInnerTexts();
    expect(steps.slice(1, 6)).toEqual(["Checks", "Build", "Secret scan", "Push", "Sign"].map((s) => expect.stringMatching(new RegExp(`${s}[\\s\\S]*skipped[\\s\\S]*reused image sha256:[0-9a-f]{64} of build #${made.id}`))));
    await shot(page, "builds-reused");
    await page.getByRole("link", { name: `build #${made.id}` }).click();
    await page.getByRole("heading", { name: `Build #${made.id} · web` }).waitFor();
    await context.close();
  });

  test("a publish build: its row, its page cancelled while the layer packs, then retried to published", async () => {
    const kit = {
      "modules/kit/package.json": JSON.stringify({ name: "kit", version: "0.0.0", main: "index.js", license: "MIT", scripts: { prepack: "for i in 1 2 3 4 5 6; do echo packing $i; sleep 1; done" } }),
      "modules/kit/index.js": "exports.hello = () => 'hello';\n",
      "modules/kit/locales/en.json": JSON.stringify({ kit: { hello: "Hello from the kit" } }),
    };
    const sha = await w.local.commit(kit, "A kit module", "release");
    await git(w.local.dir, "tag", "v1.0.0", sha);
    await w.local.push("v1.0.0");

    const { context, page } = await signedIn();
    const row = page.locator("table.builds tbody tr", { hasText: "A kit module" });
    await row.getByRole("link", { name: /#\d+ publish v1\.0\.0/ }).waitFor();
    await shot(page, "builds-publish-list");

    await row.getByRole("link").click();
    await page.getByRole("heading", { name: /Build #\d+ · publish v1\.0\.0/ }).waitFor();
    const log = page.locator("pre.log");
    await log.getByText("packing 2", { exact: true }).waitFor({ timeout: 60_000 });
    expect(await page.locator("ol.build-steps li.step-running").innerText()).toContain("Layers");
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator(".build-head .badge", { hasText: "cancelled" }).waitFor({ timeout: 30_000 });
    expect(await page.locator("ol.build-steps li").allInnerTexts()).toEqual([expect.stringContaining("Clone"), expect.stringContaining("Plan"), expect.stringContaining("Crates"), expect.stringMatching(/Layers[\s\S]*cancelled/)]);

    const before = page.url();
    await page.getByRole("button", { name: "Retry" }).click();
    await page.waitForURL((u) => u.toString() !== before);
    await page.getByRole("heading", { name: /Build #\d+ · publish v1\.0\.0/ }).waitFor();
    await page.locator(".build-head .badge", { hasText: "published" }).waitFor({ timeout: 60_000 });
    const steps = page.locator("ol.build-steps li");
    expect(await steps.allInnerTexts()).toEqual([
      expect.stringContaining("Clone"),
      expect.stringContaining("Plan"),
      expect.stringContaining("0 crate(s) published"),
      expect.stringContaining("1 layer(s) published"),
      expect.stringContaining("1 locale file(s) registered; 1 module(s) recorded"),
    ]);
    expect(await steps.locator("strong").allInnerTexts()).toEqual(["Clone", "Plan", "Crates", "Layers", "Locales"]);
    expect(await page.locator("ol.build-steps li.step-ok").count()).toBe(5);
    await log.getByText("packing 6", { exact: true }).waitFor();
    await page.getByText("Requested").waitFor();
    expect(await page.getByRole("link", { name: "Modules" }).count()).toBeGreaterThan(0);
    await shot(page, "builds-publish");

    await page.getByRole("link", { name: "← All builds" }).click();
    const published = page.locator("table.builds tbody tr", { hasText: "A kit module" }).first();
    await published.locator(".badge", { hasText: "published" }).waitFor();
    await context.close();
  });
});
