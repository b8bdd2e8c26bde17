/**
 * A viewer's console offers no action the API would refuse: a viewer opens every project page and
 * the estate pages they can reach on a 360 px wide screen, and presses every button the page
 * offers as usable (confirmations included); no request is refused with 403. Each page fits the
 * narrow screen without scrolling sideways, and does not jump when its data arrives.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { cargoMetadata, cargoPublishBody, crateArchive } from "./support/registries";
import { launchChromium, layoutShift, pressEverything, problemsOf, shot, signIn, sidewaysOverflow, watchedContext, WallClock } from "./chromium";

setDefaultTimeout(300_000);

const SLUG = "corner-cafe";
let t: TestApp;
let browser: Browser;
let vera: Person;

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, SLUG);
  const owner = await makePerson(t, [{ role: "owner", project: SLUG }]);
  vera = await makePerson(t, [{ role: "viewer", project: SLUG }], { email: "vera@ops.test", password: "correct-horse-battery" });
  const base = `/api/v1/projects/${SLUG}`;
  const put = async (path: string, body: unknown, status = 201) => expectStatus(await t.request("POST", `${base}${path}`, { token: owner.session, body }), status);
  await put("/resources/secret-group", { name: "web-env", spec: { variables: [{ name: "API_KEY", kind: "secret" }] } });
  await expectStatus(await t.request("PUT", `${base}/resources/secret-group/web-env/variables/API_KEY`, { token: owner.session, body: { value: "viewer-never-sees-this" } }), 200);
  await put("/resources/service", { name: "web", spec: { image: `${SLUG}/web:1`, env_group: "web-env", replicas: 0 } });
  await put("/resources/job", { name: "cleanup", spec: { command: "true" } });
  await expectStatus(await t.request("PUT", `${base}/secrets/web/TOKEN`, { token: owner.session, body: { value: "unit-value" } }), 204);
  // A crate with a version: its page offers yank, release and claim controls to those allowed.
  await expectStatus(await t.request("PUT", `${base}/packages/cargo/cafe-menu`, { token: owner.session }), 201);
  await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: { authorization: owner.session }, raw: cargoPublishBody(cargoMetadata("cafe-menu", "1.0.0"), await crateArchive("cafe-menu", "1.0.0")) }), 200);
  await expectStatus(await t.request("PUT", `${base}/packages/npm/${encodeURIComponent("@ops/empty")}`, { token: owner.session }), 201);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("a viewer's console in chromium at 360 px", () => {
  test("every page: pressing every offered button draws no 403; nothing scrolls sideways; no layout jump", async () => {
    const context = await watchedContext(browser, { width: 360, height: 780 });
    const page = await context.newPage();
    const problems = problemsOf(page);
    const refused: string[] = [];
    page.on("response", (r) => {
      if (r.status() === 403) refused.push(`${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await signIn(page, vera);
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();

    const pages = [
      `/projects/${SLUG}`,
      `/projects/${SLUG}/resources`,
      `/projects/${SLUG}/resources/job/cleanup?environment=production`,
      `/projects/${SLUG}/resources/service/web?environment=production`,
      `/projects/${SLUG}/secrets`,
      `/projects/${SLUG}/secrets/services`,
      `/projects/${SLUG}/packages`,
      `/projects/${SLUG}/packages/cargo/cafe-menu`,
      `/projects/${SLUG}/packages/npm/${encodeURIComponent("@ops/empty")}`,
      `/projects/${SLUG}/packages/images/web`,
      `/projects/${SLUG}/builds`,
      `/projects/${SLUG}/deployments`,
      `/projects/${SLUG}/deployments/web?environment=production`,
      `/projects/${SLUG}/sources`,
      `/projects/${SLUG}/translations`,
      `/projects/${SLUG}/access`,
      `/projects/${SLUG}/access/roles`,
      `/projects/${SLUG}/settings`,
      "/notifications",
      "/cli",
    ];
    const report: string[] = [];
    for (const path of pages) {
      await page.goto(`${t.url}${path}`);
      await page.locator("main h1, main h2").first().waitFor();
      await page.locator("[aria-busy='true']").first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
      await page.waitForTimeout(300);
      const shift = await layoutShift(page);
      const overflow = await sidewaysOverflow(page);
      const wide = overflow > 0 ? await page.evaluate(() => [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5).map((e) => `${e.tagName}.${e.className}`).join(" ")) : "";
      report.push(`${path}: shift ${shift.toFixed(3)}, overflow ${overflow}px ${wide}`);
      if (overflow > 0) console.log(report.at(-1));
      expect([path, overflow <= 0]).toEqual([path, true]);
      expect([path, shift < 0.1]).toEqual([path, true]);
      await pressEverything(page);
    }
    await page.goto(`${t.url}/projects/${SLUG}/secrets`);
    await page.getByRole("heading", { name: "Variables of web-env" }).waitFor();
    await shot(page, "viewer-360-secrets");
    await page.goto(`${t.url}/projects/${SLUG}/resources`);
    await page.locator("table.resources").waitFor();
    await shot(page, "viewer-360-resources");
    expect(refused).toEqual([]);
    expect(problems).toEqual([]);
    expect(await page.content()).not.toContain("viewer-never-sees-this");
    console.log(report.join("\n"));
    await context.close();
  });

  test("an estate-wide viewer is not offered creating a project, and is told why", async () => {
    const eve = await makePerson(t, [{ role: "viewer", project: null }], { email: "eve@ops.test", password: "correct-horse-battery" });
    const context = await watchedContext(browser, { width: 360, height: 780 });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects`);
    await signIn(page, eve);
    await page.getByText(/^Creating projects: Needs “Manage the estate” \(estate\.manage\)/).waitFor();
    expect(await page.getByRole("button", { name: "Create project" }).count()).toBe(0);
    await context.close();
  });
});
