/**
 * The Alerts pages in headless Chromium: a maintainer adds a Slack channel (the URL is not shown
 * again, only its host) and a rule sending there; a viewer sees the rules and deliveries but gets
 * no forms. The rule fires on a metric point, and the delivery shows on the Deliveries tab.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { type Browser } from "playwright-core";
import { launchChromium, shot, WallClock } from "./chromium";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, type Person } from "./fixtures";
import { EVALUATE_TASK } from "../src/domains/alerts/service";
import { appendPlatformLogs } from "../src/domains/observability/service";

let t: TestApp;
let browser: Browser;
let maintainer: Person;
let viewer: Person;
let receiver: ReturnType<typeof Bun.serve>;
const bodies: string[] = [];
const SECRET = "T111/B222/console-secret-path";

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, "shop");
  maintainer = await makePerson(t, [{ role: "maintainer", project: "shop" }]);
  viewer = await makePerson(t, [{ role: "viewer", project: "shop" }]);
  const owner = await makeOwner(t);
  await expectStatus(await t.request("PUT", "/api/v1/estate/alert-settings", { token: owner.session, body: { allow_private_targets: ["127.0.0.0/8"] } }), 200);
  receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => (bodies.push(await req.text()), new Response("ok")) });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  receiver?.stop(true);
  await t.close();
});

async function pageAs(p: Person) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([{ name: "ops_session", value: p.session, url: t.url }]);
  return context.newPage();
}

describe("console: alerts", () => {
  test("a maintainer adds a channel and a rule; the firing shows in the deliveries", async () => {
    const page = await pageAs(maintainer);
    await page.goto(`${t.url}/projects/shop/alerts/channels`);
    await page.getByRole("heading", { name: "Alerts" }).waitFor();
    await page.getByLabel("Name").fill("oncall");
    await page.getByLabel("Kind").selectOption("slack");
    await page.getByLabel("URL").fill(`http://127.0.0.1:${receiver.port}/services/${SECRET}`);
    await page.getByRole("button", { name: "Add channel" }).click();
    await page.getByText("Channel oncall added.").waitFor();
    const channels = await page.locator("table").innerText();
    expect(channels).toContain(`http://127.0.0.1:${receiver.port}/…`);
    expect(await page.content()).not.toContain(SECRET);
    await shot(page, "alerts-channels");

    await page.getByRole("link", { name: "Rules" }).click();
    await page.getByLabel("Name").fill("gateway");
    await page.getByLabel("Kind").selectOption("log");
    await page.getByLabel("Log query").fill("gateway timeout");
    await page.getByLabel("At least (lines)").fill("2");
    await page.getByLabel("oncall (slack)").check();
    await page.getByRole("button", { name: "Add rule" }).click();
    await page.getByText("Rule gateway added.").waitFor();

    const project = t.core.access.findProject("shop")!;
    const now = t.clock.now();
    await appendPlatformLogs(t.core, [1, 2].map((i) => ({ project: project.id, environment: "production", service: "api", level: "error" as const, message: `gateway timeout ${i}`, target: "stdout", timestamp: now - i * 1000 })));
    await t.core.scheduler.runNow(EVALUATE_TASK);
    await t.core.scheduler.runDue({ tasks: false });
    expect(bodies).toHaveLength(1);
    expect(JSON.parse(bodies[0]).text).toContain("[FIRING] gateway");

    await page.reload();
    await page.getByText("firing").first().waitFor();
    await page.getByRole("link", { name: "Deliveries" }).click();
    await page.getByRole("cell", { name: "alert.firing" }).waitFor();
    expect(await page.locator("table").innerText()).toContain("delivered");
    await shot(page, "alerts-deliveries");
    await page.context().close();
  }, 60_000);

  test("a viewer sees the rules and deliveries, and no forms", async () => {
    const page = await pageAs(viewer);
    await page.goto(`${t.url}/projects/shop/alerts`);
    await page.getByRole("cell", { name: "gateway", exact: true }).waitFor();
    expect(await page.getByRole("form", { name: "New alert rule" }).count()).toBe(0);
    await page.getByText("Adding rules:").waitFor();
    await page.goto(`${t.url}/projects/shop/alerts/deliveries`);
    await page.getByRole("cell", { name: "alert.firing" }).waitFor();
    await page.context().close();
  }, 60_000);
});
