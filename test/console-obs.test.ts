/**
 * The Logs, Traces and Metrics pages of a project in headless Chromium (playwright-core, Debian's
 * chromium), on telemetry sent by the real OpenTelemetry exporters: filters, the level histogram,
 * a line's details, the live tail picking up a line sent while it runs, a trace's waterfall and
 * the metric charts. Screenshots go to test/artifacts/ (gitignored) for a person to look at.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { type Browser, type BrowserContext } from "playwright-core";
import { launchChromium, shot, WallClock } from "./chromium";
import { createTestApp, type TestApp } from "./harness";
import { makeMachine, makePerson, makeProject, type Person } from "./fixtures";
import { makeLogs, exportLogs, makeSpans, exportSpans, meters, exportMetrics, SeverityNumber } from "./obs-clients";

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let person: Person;
let token: string;
let traceId: string;

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, "web-shop");
  person = await makePerson(t, [{ role: "developer", project: "web-shop" }], { email: "olly@ops.test" });
  token = (await makeMachine(t, [{ role: "developer", project: "web-shop" }])).token;

  const now = Date.now();
  const lines = [];
  for (let i = 0; i < 60; i++) {
    const sev = i % 10 === 0 ? SeverityNumber.ERROR : i % 4 === 0 ? SeverityNumber.WARN : SeverityNumber.INFO;
    lines.push({ body: i % 10 === 0 ? `payment provider timed out after 3000 ms (order ${1000 + i})` : `GET /orders/${i} 200 in ${10 + (i % 7)} ms`, severityNumber: sev, timestamp: now - (60 - i) * 50_000, attributes: { "http.route": "/orders/:id", "http.request.method": "GET" } });
  }
  await exportLogs(t.url, makeLogs({ "service.name": "checkout", "deployment.environment.name": "production", "host.name": "web-1" }, lines, "checkout.http"), { encoding: "proto", token });
  await exportLogs(t.url, makeLogs({ "service.name": "worker", "deployment.environment.name": "production" }, [{ body: "nightly export finished: 1200 rows", severityNumber: SeverityNumber.INFO, timestamp: now - 120_000 }], "worker.jobs"), { encoding: "json", token });

  const { spans, traceIds } = makeSpans({ "service.name": "checkout" }, [{ name: "POST /checkout", error: "card declined", children: ["SELECT cart", "POST payments/charge", "INSERT order"] }]);
  traceId = traceIds[0];
  await exportSpans(t.url, spans, { encoding: "proto", token });
  await exportSpans(t.url, makeSpans({ "service.name": "checkout" }, [{ name: "GET /orders", children: ["SELECT orders"] }]).spans, { encoding: "json", token });

  const svc = ["checkout", "worker"];
  for (const service of svc) {
    const m = meters({ "service.name": service });
    const meter = m.provider.getMeter("app");
    const requests = meter.createCounter("http.server.requests");
    const memory = meter.createGauge("process.memory.mb");
    const latency = meter.createHistogram("http.server.duration", { unit: "ms" });
    for (let round = 0; round < 3; round++) {
      requests.add(20 + round * (service === "checkout" ? 15 : 5));
      memory.record(service === "checkout" ? 180 + round * 12 : 90 + round * 3);
      latency.record(12 + round * 4);
      await exportMetrics(t.url, await m.collect(), { encoding: "proto", token });
    }
    await m.provider.shutdown();
  }

  // Fifteen minutes of history, a point every 30 s, as a long-running service would have sent it
  // (OTLP JSON with explicit times: the SDK stamps points with the moment they are collected).
  const attr = (key: string, value: string) => ({ key, value: { stringValue: value } });
  for (const [service, scale] of [["checkout", 1], ["worker", 0.4]] as const) {
    const points = Array.from({ length: 30 }, (_, i) => now - (30 - i) * 30_000);
    const body = {
      resourceMetrics: [
        {
          resource: { attributes: [attr("service.name", service)] },
          scopeMetrics: [
            {
              metrics: [
                { name: "queue.depth", gauge: { dataPoints: points.map((ms, i) => ({ timeUnixNano: `${ms}000000`, asDouble: Math.round(scale * (40 + 30 * Math.sin(i / 4))) })) } },
                { name: "jobs.processed", sum: { isMonotonic: true, aggregationTemporality: 2, dataPoints: points.map((ms, i) => ({ timeUnixNano: `${ms}000000`, asInt: String(Math.round(scale * (i * 120 + i * i * 3))) })) } },
              ],
            },
          ],
        },
      ],
    };
    const res = await t.request("POST", "/otlp/v1/metrics", { token, body });
    if (res.status !== 200) throw new Error(`metrics history: ${res.status}`);
  }

  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([{ name: "ops_session", value: person.session, url: t.url }]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("observability pages in chromium", () => {
  test("Logs: lines newest first, the level histogram, filters, a line's details", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/web-shop/logs?range=1h`);
    await page.getByRole("heading", { name: "Logs" }).waitFor();
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Logs" }).waitFor();
    const lines = page.getByRole("list", { name: "Log lines, newest first" }).locator("li");
    await lines.first().waitFor();
    expect(await lines.count()).toBe(61);
    expect(await lines.first().locator(".msg").textContent()).toBe("GET /orders/59 200 in 13 ms");
    // Each row says which environment and host wrote it.
    expect(await lines.first().locator(".where").textContent()).toBe("production · web-1");
    const histogram = page.getByRole("img", { name: /Lines per level/ });
    expect(await histogram.getAttribute("aria-label")).toContain("61 lines");
    expect(await page.locator("figure.histogram rect.bar").count()).toBeGreaterThan(5);
    await shot(page, "obs-logs");

    await page.getByLabel("Level", { exact: true }).selectOption("error,fatal");
    await page.waitForURL(/level=error%2Cfatal/);
    await page.locator("ol.log-lines .msg").first().getByText("payment provider timed out").waitFor();
    await page.waitForFunction(() => document.querySelectorAll('ol[aria-label="Log lines, newest first"] > li').length === 6);
    expect(await lines.count()).toBe(6);

    await page.getByLabel("Text", { exact: true }).fill("ORDER 1050");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/q=ORDER\+1050/);
    await page.getByText("payment provider timed out after 3000 ms (order 1050)").waitFor();
    // The line was already in the list before the search: wait for the list to hold it alone.
    await page.waitForFunction(() => document.querySelectorAll('ol[aria-label="Log lines, newest first"] > li').length === 1);
    expect(await lines.count()).toBe(1);
    await page.getByText("payment provider timed out after 3000 ms (order 1050)").click();
    await page.getByText("checkout.http").waitFor();
    expect(await page.getByText("GET /orders/:id").isVisible()).toBe(true);
    await shot(page, "obs-logs-filtered");
    await page.close();
  }, 60_000);

  test("Logs: a line's control characters and bidirectional override are shown, not obeyed", async () => {
    // What a visitor can make an app log: an override that would show "moc.live" as "evil.com", an escape sequence.
    const hostile = "visitor said \u202emoc.live\u202c and \u001b]0;title\u0007 done";
    await exportLogs(t.url, makeLogs({ "service.name": "worker", "deployment.environment.name": "production" }, [{ body: hostile, severityNumber: SeverityNumber.INFO, timestamp: Date.now() - 1000 }], "worker.http"), { encoding: "json", token });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/web-shop/logs?range=1h&q=visitor+said`);
    const msg = page.locator("ol.log-lines .msg").first();
    await msg.getByText("visitor said").waitFor();
    expect(await msg.textContent()).toBe("visitor said \\u202emoc.live\\u202c and \\u001b]0;title\\u0007 done");
    expect(await msg.locator(".ctl").count()).toBe(4);
    expect(await msg.locator(".ctl").first().getAttribute("title")).toBe("U+202E");
    await page.close();
  }, 60_000);

  test("Logs: the live tail shows a line sent while it polls", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/web-shop/logs?service=worker&range=1h`);
    await page.getByText("nightly export finished: 1200 rows").waitFor();
    await page.getByRole("button", { name: "Live tail" }).click();
    await page.getByRole("button", { name: "Stop live tail" }).waitFor();
    expect(await page.getByRole("button", { name: "Stop live tail" }).getAttribute("aria-pressed")).toBe("true");
    await exportLogs(t.url, makeLogs({ "service.name": "worker", "deployment.environment.name": "production" }, [{ body: "tail: a fresh line", severityNumber: SeverityNumber.WARN }]), { encoding: "proto", token });
    await page.getByText("tail: a fresh line").waitFor({ timeout: 15_000 });
    const first = page.locator("ol.log-lines li").first();
    expect(await first.locator(".msg").textContent()).toBe("tail: a fresh line");
    await shot(page, "obs-logs-live");
    await page.close();
  }, 60_000);

  test("Traces: root spans, then a trace's waterfall", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/web-shop/traces`);
    await page.getByRole("heading", { name: "Traces" }).waitFor();
    await page.getByRole("link", { name: "POST /checkout" }).waitFor();
    expect(await page.locator("table.traces tbody tr").count()).toBe(2);
    await shot(page, "obs-traces");
    await page.getByRole("link", { name: "POST /checkout" }).click();
    await page.waitForURL(new RegExp(`/traces/${traceId}$`));
    await page.getByRole("heading", { name: "POST /checkout" }).waitFor();
    const rows = page.locator("table.waterfall tbody tr");
    expect(await rows.count()).toBe(4);
    expect(await rows.first().textContent()).toContain("POST /checkout");
    expect(await page.locator("table.waterfall rect.span-bar").count()).toBe(4);
    expect(await page.locator("table.waterfall rect.span-bar.error").count()).toBe(1);
    expect(await page.locator("table.waterfall .indent.d1").count()).toBe(3);
    await shot(page, "obs-trace-waterfall");
    await page.close();
  }, 60_000);

  test("Metrics: a chart per metric with a line per service", async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/web-shop/metrics?range=15m`);
    await page.getByRole("heading", { name: "Metrics" }).waitFor();
    for (const name of ["http.server.requests", "process.memory.mb", "http.server.duration", "queue.depth", "jobs.processed"]) await page.locator("article.metric h3").getByText(name).waitFor();
    await page.locator("article.metric svg[role=img]").nth(2).waitFor();
    const memory = page.locator("article.metric").filter({ hasText: "process.memory.mb" });
    await memory.locator("g.series").first().waitFor();
    expect(await memory.locator("g.series").count()).toBe(2);
    expect(await memory.getByRole("img").getAttribute("aria-label")).toContain("checkout: latest 192; worker: latest 93");
    const queue = page.locator("article.metric").filter({ hasText: "queue.depth" });
    await queue.locator("polyline.line").first().waitFor();
    expect(await queue.locator("polyline.line").count()).toBe(2);
    const jobs = page.locator("article.metric").filter({ hasText: "jobs.processed" });
    await jobs.locator("polyline.line").first().waitFor();
    expect(await jobs.locator("p.hint").textContent()).toContain("rate per second");
    await shot(page, "obs-metrics");
    await page.getByLabel("Metric", { exact: true }).selectOption("http.server.requests");
    await page.waitForURL(/metric=http.server.requests/);
    expect(await page.locator("article.metric").count()).toBe(1);
    await page.close();
  }, 60_000);
});
