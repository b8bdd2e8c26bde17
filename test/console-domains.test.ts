/**
 * A domain's page in a real browser (Debian's chromium through playwright-core) against Debian's
 * pebble: a domain whose host validates over HTTP-01 shows its certificate valid with its expiry
 * and its host linked over HTTPS; a domain whose host points where nothing answers shows the
 * certificate failing with the reason and the next attempt; once DNS points here, "Retry now"
 * orders again and the page follows the certificate to valid. A viewer sees the certificates and
 * "Retry now" withheld, saying why. Screenshots go to test/artifacts/.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { eq } from "drizzle-orm";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, freePort, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { startPebble, type Pebble } from "./pebble";
import { launchChromium, problemsOf, shot, signIn, watchedContext, WallClock } from "./chromium";
import { ingressOf, startIngress, startIngressTls } from "../src/adapters/ingress";
import { certificatesModule } from "../src/domains/certificates";
import { certificates } from "../src/domains/certificates/tables";

setDefaultTimeout(120_000);

const SLUG = "harbour-shop";
let t: TestApp;
let pebble: Pebble;
let browser: Browser;
let mia: Person;
let vic: Person;
const httpPort = freePort();
const tlsPort = freePort();

const stateOf = (host: string) => t.core.db.select().from(certificates).where(eq(certificates.host, host)).get()?.state;

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`${what} did not happen within ${ms / 1000} s`);
    await Bun.sleep(100);
  }
}

async function domain(name: string, host: string): Promise<void> {
  await expectStatus(await t.request("POST", `/api/v1/projects/${SLUG}/resources/domain?environment=production`, { token: mia.session, body: { name, spec: { hosts: [host], service: "web" } } }), 201);
}

beforeAll(async () => {
  pebble = await startPebble(httpPort, tlsPort);
  t = await createTestApp({
    clock: new WallClock(),
    env: { OPS_INGRESS_LISTEN: `127.0.0.1:${httpPort}`, OPS_INGRESS_TLS_LISTEN: `127.0.0.1:${tlsPort}`, OPS_ACME_DIRECTORY: pebble.directoryUrl, OPS_ACME_CA_FILE: pebble.caFile, OPS_ACME_EMAIL: "certs@ops.test" },
  });
  startIngress(t.core);
  await startIngressTls(t.core);
  await certificatesModule.onServe!(t.core);
  makeProject(t, SLUG);
  mia = await makePerson(t, [{ role: "maintainer", project: SLUG }], { email: "mia@ops.test", password: "correct-horse-battery" });
  vic = await makePerson(t, [{ role: "viewer", project: SLUG }], { email: "vic@ops.test", password: "correct-horse-battery" });
  await expectStatus(await t.request("POST", `/api/v1/projects/${SLUG}/resources/service?environment=production`, { token: mia.session, body: { name: "web", spec: { image: "registry.example/web:1", replicas: 0 } } }), 201);
  await domain("shop", "shop.example.com");
  await pebble.resolve("down.example.com", "127.0.0.2");
  await domain("down", "down.example.com");
  await until("the shop certificate", () => stateOf("shop.example.com") === "valid");
  await until("the failed order", () => stateOf("down.example.com") === "failing");
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ingressOf(t.core).stop(1000);
  await t?.close();
  pebble?.stop();
});

describe("a domain's certificates in chromium", () => {
  test("valid and failing certificates; Retry now orders again and the page follows it to valid", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/projects/${SLUG}/resources/domain/shop?environment=production`);
    await signIn(page, mia);
    await page.getByRole("button", { name: "Refresh status" }).click();
    const shop = page.locator("table.certificates tr", { hasText: "shop.example.com" });
    await shop.locator(".badge", { hasText: "valid" }).waitFor();
    expect(await shop.innerText()).toContain("ACME");
    expect(await page.getByRole("link", { name: "shop.example.com" }).getAttribute("href")).toBe("https://shop.example.com/");
    expect(await page.getByRole("button", { name: "Retry now" }).count()).toBe(0);
    await shot(page, "domains-valid");

    await page.goto(`${t.url}/projects/${SLUG}/resources/domain/down?environment=production`);
    await page.getByRole("button", { name: "Refresh status" }).click();
    const down = page.locator("table.certificates tr", { hasText: "down.example.com" });
    await down.locator(".badge", { hasText: "failing" }).waitFor();
    expect(await down.innerText()).toMatch(/127\.0\.0\.2|connection refused|connect/i);
    expect(await down.innerText()).toContain("next attempt");
    expect(await page.getByRole("link", { name: "down.example.com" }).getAttribute("href")).toBe("http://down.example.com/");
    await shot(page, "domains-failing");

    // DNS now points here; the backoff would wait a minute, Retry now orders at once.
    await pebble.resolve("down.example.com", "127.0.0.1");
    await page.getByRole("button", { name: "Retry now" }).click();
    await page.getByText("The certificates are being ordered again now").waitFor();
    await until("the retried certificate on the page", async () => {
      await page.getByRole("button", { name: "Refresh status" }).click();
      await page.getByRole("button", { name: "Refresh status" }).waitFor();
      return (await down.locator(".badge", { hasText: "valid" }).count()) > 0;
    });
    expect(stateOf("down.example.com")).toBe("valid");
    await shot(page, "domains-retried");
    expect(problems).toEqual([]);
    await context.close();
  });

  test("a viewer sees the certificates; Retry now is not theirs, and says why", async () => {
    await pebble.resolve("gone.example.com", "127.0.0.2");
    await domain("gone", "gone.example.com");
    await until("the failed order", () => stateOf("gone.example.com") === "failing");
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SLUG}/resources/domain/gone?environment=production`);
    await signIn(page, vic);
    await page.getByRole("button", { name: "Refresh status" }).click();
    await page.locator("table.certificates tr", { hasText: "gone.example.com" }).locator(".badge", { hasText: "failing" }).waitFor();
    const retry = page.getByRole("button", { name: "Retry now" });
    expect(await retry.getAttribute("aria-disabled")).toBe("true");
    expect(await retry.getAttribute("title")).toContain("resources.write");
    await context.close();
  });
});
