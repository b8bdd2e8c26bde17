/**
 * `/api/docs` works without internet (issue 27): in Chromium, every request the page makes goes
 * to ops itself, and the reference shows the API's operations. Requests to any other host are
 * aborted and recorded, as a machine with no way out would see them.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { type Browser } from "playwright-core";
import { launchChromium, problemsOf, shot } from "./chromium";
import { createTestApp, type TestApp } from "./harness";
import pkg from "../package.json";

let t: TestApp;
let browser: Browser;

beforeAll(async () => {
  t = await createTestApp();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the API reference offline", () => {
  test("the page loads its viewer and the document from ops only, and shows the operations", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const outside: string[] = [];
    const origin = new URL(t.url).origin;
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
      outside.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/api/docs`);
    await page.getByText("Liveness probe").first().waitFor({ timeout: 30_000 });
    await page.waitForLoadState("networkidle");
    expect(await page.getByText("The ops API: access, resources").first().isVisible()).toBe(true);
    await shot(page, "api-docs-offline");
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  test("the viewer is the pinned npm version", async () => {
    const res = await fetch(`${t.url}/api/docs/viewer.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/javascript");
    expect(pkg.dependencies["@scalar/api-reference"]).toMatch(/^\d+\.\d+\.\d+$/);
    expect(res.headers.get("x-viewer-version")).toBe(`@scalar/api-reference@${pkg.dependencies["@scalar/api-reference"]}`);
  });
});
