/**
 * The Deployments pages in a real browser (Debian's chromium through playwright-core): the
 * project overview lists the service with its health; the service page shows the digest it runs
 * and its replicas; a developer deploys the newest pushed image and then rolls back, each after
 * a confirmation, and watches the timeline follow. Screenshots go to test/artifacts/.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { listenIngress, pushApp } from "./deploy-fixtures";
import { launchChromium, runUntil as runSchedulerUntil, shot, WallClock } from "./chromium";

setDefaultTimeout(120_000);

let t: TestApp;
let browser: Browser;
let person: Person;
let project: string;
const digests: Record<string, string> = {};
let ingressUrl: string;

const runUntil = (done: () => Promise<boolean>) => runSchedulerUntil(t, done);

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock(), env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "10" } });
  project = makeProject(t, "tea-house").slug;
  ingressUrl = listenIngress(t);
  person = await makePerson(t, [{ role: "developer", project }], { email: "rui@ops.test", displayName: "Rui", password: "correct-horse-battery" });
  digests.v1 = await pushApp(t, project, "web", { version: "v1" });
  await expectStatus(await t.request("POST", `/api/v1/projects/${project}/resources/service`, { token: person.session, body: { name: "web", spec: { image: `${project}/web`, health_check_path: "/healthz", replicas: 2, limits: { memory_mb: 256 } } } }), 201);
  await expectStatus(await t.request("POST", `/api/v1/projects/${project}/resources/service/web/deploy`, { token: person.session, body: { digest: digests.v1 } }), 201);
  await t.core.scheduler.runDue();
  digests.v2 = await pushApp(t, project, "web", { version: "v2" });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("Deployments in chromium", () => {
  test("the overview's services, the service page, deploy and rollback with confirmation", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${project}`);
    await page.getByLabel("Email").fill(person.email);
    await page.getByLabel("Password").fill(person.password);
    await page.getByRole("button", { name: "Sign in" }).click();

    await page.getByRole("heading", { name: "Services" }).waitFor();
    const row = page.locator("table.services tbody tr").first();
    await row.getByText("web").waitFor();
    expect(await row.locator(".badge").innerText()).toBe("ready");
    expect(await row.getByText("2 / 2").isVisible()).toBe(true);
    expect(await row.locator("code").innerText()).toBe(digests.v1.slice(0, 19));
    await shot(page, "deployments-overview");

    await row.getByRole("link", { name: "web" }).click();
    await page.getByRole("heading", { name: /Deployments \/ web/ }).waitFor();
    // The heading comes from the address; the service's digest and replicas arrive with its status.
    await page.getByText(digests.v1, { exact: true }).waitFor();
    expect(await page.locator("table.replicas tbody tr").count()).toBe(2);
    expect(await page.locator("table.replicas tbody tr").first().getByText("running").isVisible()).toBe(true);
    expect(await page.locator("table.replicas").getByText("256 MiB").first().isVisible()).toBe(true);
    await shot(page, "deployments-service");

    // The service's address through ops's ingress: Chromium resolves *.localhost to loopback.
    const port = new URL(ingressUrl).port;
    const open = page.getByRole("link", { name: `http://web.production.tea-house.localhost:${port}/` });
    expect(await open.getAttribute("href")).toBe(`http://web.production.tea-house.localhost:${port}/`);
    const visit = await context.newPage();
    const answer = await visit.goto(`http://web.production.tea-house.localhost:${port}/version`);
    expect(answer?.status()).toBe(200);
    expect(await visit.locator("body").innerText()).toBe("v1");
    await visit.close();

    // Deploy the newest pushed image (v2): a confirmation first.
    const pick = page.getByLabel("Build or image");
    expect(await pick.locator("option").first().innerText()).toContain(`Newest pushed image ${digests.v2.slice(0, 19)}`);
    await page.getByRole("button", { name: "Deploy…" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Deploy?" });
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain(`Deploy the image ${digests.v2.slice(0, 19)} to web in production?`);
    await shot(page, "deployments-confirm");
    await dialog.getByRole("button", { name: "Yes, deploy" }).click();
    await page.getByText(/Deployment \d+ of sha256:[0-9a-f]{12} is recorded; the timeline follows its rollout\./).waitFor();
    await runUntil(async () => (await page.getByText(digests.v2, { exact: true }).count()) > 0);
    await page.locator("table.timeline tbody tr").first().locator(".badge", { hasText: "healthy" }).waitFor();
    await shot(page, "deployments-deployed");

    // Roll back to v1, also behind a confirmation.
    await page.getByRole("button", { name: "Roll back…" }).click();
    const back = page.getByRole("alertdialog", { name: "Roll back?" });
    expect(await back.innerText()).toContain(`back to ${digests.v1.slice(0, 19)}`);
    await back.getByRole("button", { name: "Yes, roll back" }).click();
    await runUntil(async () => (await page.getByText(digests.v1, { exact: true }).count()) > 0);
    const first = page.locator("table.timeline tbody tr").first();
    await first.locator(".badge", { hasText: "healthy" }).waitFor();
    expect(await first.innerText()).toContain("Roll back to sha256:");
    await shot(page, "deployments-rolled-back");

    await page.getByRole("link", { name: "Deployments" }).first().click();
    await page.getByRole("heading", { name: "Timeline" }).waitFor();
    expect(await page.locator("table.timeline tbody tr").count()).toBe(3);
    await shot(page, "deployments-list");
    await context.close();
  });
});
