/**
 * Request metrics from the ingress with no change to the app (issue 36): a deployed app (the test
 * app's own APP_JS, no telemetry code) gets requests through ops's ingress — answered, and with
 * no replica at all — and after one read of the ingress
 * (`recordIngressMetrics`, every 10 s under `ops serve`) Metrics has the service's request count by
 * status class, its latency histogram and p95, its bytes and its in-flight gauge; a second read
 * writes only what changed. The quantile reading of a histogram is checked on its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject } from "./fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { quantileOf, recordIngressMetrics } from "../src/domains/deployments/ingress-metrics";
import { existingWriter } from "../src/domains/observability/writer";
import { EVALUATE_TASK } from "../src/domains/alerts/service";
import { ingressOf } from "../src/adapters/ingress";

let t: TestApp;
let slug: string;
let session: string;
let ingress: string;
const req = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/${slug}${p}`, { token: session, body });

async function series(name: string): Promise<{ kind: string; series: Array<{ service: string; points: Array<{ t: string; value: number | null; count?: number | null; sum?: number | null }> }> }> {
  await existingWriter(t.core)?.flush();
  const from = new Date(t.core.clock.now() - 3_600_000).toISOString();
  const to = new Date(t.core.clock.now() + 60_000).toISOString();
  return expectStatus(await t.request("GET", `/api/v1/obs/metrics/series?project=${slug}&environment=production&service=web&name=${encodeURIComponent(name)}&from=${from}&to=${to}`, { token: session }), 200);
}

const lastValue = (s: Awaited<ReturnType<typeof series>>) => s.series.flatMap((x) => x.points).filter((p) => p.value !== null).at(-1)?.value ?? null;

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "10" } });
  ingress = listenIngress(t);
  slug = makeProject(t).slug;
  session = (await makePerson(t, [{ role: "owner", project: slug }])).session;
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } }), 201);
  const digest = await pushApp(t, slug, "web", { version: "v1" });
  await expectStatus(await req("POST", "/resources/service/web/deploy", { digest }), 201);
  await t.core.scheduler.runDue();
  const [row] = await expectStatus<any[]>(await req("GET", "/deployments?service=web"), 200);
  expect(row.state).toBe("healthy");
}, 90_000);

afterAll(async () => {
  await t?.close();
});

describe("request metrics from the ingress", () => {
  test("requests by status class, latency with p95, bytes and in-flight reach Metrics after one read; the next read adds only what changed", async () => {
    const host = defaultHostOf(slug, "web");
    await recordIngressMetrics(t.core); // the baseline: nothing yet
    for (let i = 0; i < 20; i++) expect((await viaIngress(ingress, host, "/")).status).toBe(200);
    const size = (await (await viaIngress(ingress, host, "/headers")).arrayBuffer()).byteLength;
    const written = await recordIngressMetrics(t.core);
    expect(written).toBeGreaterThan(0);

    const names = await expectStatus<Array<{ name: string; kind: string }>>(await t.request("GET", `/api/v1/obs/metrics/names?project=${slug}&environment=production`, { token: session }), 200);
    for (const n of ["ops.ingress.requests", "ops.ingress.responses.2xx", "ops.ingress.request.duration", "ops.ingress.request.duration.p95", "ops.ingress.response.bytes", "ops.ingress.requests.inflight"]) expect(names.map((x) => x.name)).toContain(n);
    const requests = await series("ops.ingress.requests");
    expect(requests.kind).toBe("counter");
    // Every request sent through the ingress (the rollout's health probes do not pass it).
    expect(lastValue(requests)).toBe(21);
    const p95 = lastValue(await series("ops.ingress.request.duration.p95"));
    expect(p95).toBeGreaterThan(0);
    expect(p95).toBeLessThan(10_000);
    // The bytes relayed: each answer's head and body, at least the last one's body.
    expect(lastValue(await series("ops.ingress.response.bytes"))).toBeGreaterThan(size);
    expect(lastValue(await series("ops.ingress.requests.inflight"))).toBe(0);

    // A later read adds the increase only.
    for (let i = 0; i < 5; i++) await viaIngress(ingress, host, "/");
    t.clock.advance(10_000);
    await recordIngressMetrics(t.core);
    expect(lastValue(await series("ops.ingress.requests"))).toBe(26);
  }, 60_000);

  test("an open WebSocket through the ingress is an open connection of its service until it closes", async () => {
    const ws = new WebSocket(ingress.replace(/^http/, "ws") + "/", { headers: { host: defaultHostOf(slug, "web") } } as unknown as string[]);
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("the WebSocket did not open"));
    });
    const echoed = new Promise<string>((resolve) => (ws.onmessage = (m) => resolve(String(m.data))));
    ws.send("ping");
    expect(await echoed).toBe("echo:ping");
    t.clock.advance(120_000); // a bucket of its own: a gauge's bucket is the average of its samples
    await recordIngressMetrics(t.core);
    expect(lastValue(await series("ops.ingress.connections.open"))).toBe(1);
    const closed = new Promise<void>((resolve) => (ws.onclose = () => resolve()));
    ws.close();
    await closed;
    // The tunnel ends on the ingress's side once both halves closed.
    const entry = ingressOf(t.core).table().find((e) => e.service.project === slug && e.service.service === "web")!;
    for (let i = 0; i < 100 && entry.upstreams.some((u) => ingressOf(t.core).websockets(u) > 0); i++) await Bun.sleep(20);
    t.clock.advance(120_000); // a bucket of its own: a gauge's bucket is the average of its samples
    await recordIngressMetrics(t.core);
    expect(lastValue(await series("ops.ingress.connections.open"))).toBe(0);
  }, 30_000);

  test("a service with no replica: its 502s are counted as 5xx", async () => {
    await expectStatus(await req("PUT", "/resources/service/web", { spec: { image: `${slug}/web`, health_check_path: "/healthz", replicas: 0 } }), 200);
    await t.core.scheduler.runDue();
    const before = lastValue(await series("ops.ingress.requests")) ?? 0;
    const res = await viaIngress(ingress, defaultHostOf(slug, "web"), "/");
    expect(res.status).toBe(502);
    t.clock.advance(10_000);
    await recordIngressMetrics(t.core);
    const s = await series("ops.ingress.requests");
    expect(lastValue(s)).toBe(before + 1);
    expect(lastValue(await series("ops.ingress.responses.5xx"))).toBe(1);
    expect(lastValue(await series("ops.ingress.responses.2xx"))).toBe(before);
  }, 60_000);

  test("an alert rule on the ingress's 5xx rate fires to a webhook, with no telemetry in the app", async () => {
    const got: Array<{ type: string; rule: { name: string; value: number } }> = [];
    const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (r) => (got.push((await r.json()) as (typeof got)[number]), new Response("ok")) });
    try {
      const estate = await makeOwner(t);
      await expectStatus(await t.request("PUT", "/api/v1/estate/alert-settings", { token: estate.session, body: { allow_private_targets: ["127.0.0.1"] } }), 200);
      const channel = await expectStatus<{ id: string }>(await req("POST", "/alert-channels", { name: "ops-hook", kind: "webhook", url: `http://127.0.0.1:${receiver.port}/hook` }), 201);
      await expectStatus(await req("POST", "/alert-rules", { name: "5xx", kind: "metric", metric: "ops.ingress.responses.5xx", service: "web", environment: "production", threshold: 0.01, channels: [channel.id] }), 201);
      // The service still has no replica: every request is a 502, read twice a minute apart.
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 10; i++) expect((await viaIngress(ingress, defaultHostOf(slug, "web"), "/")).status).toBe(502);
        t.clock.advance(60_000);
        await recordIngressMetrics(t.core);
      }
      await existingWriter(t.core)?.flush();
      await t.core.scheduler.runNow(EVALUATE_TASK);
      for (let i = 0; i < 20 && got.length === 0; i++) {
        await t.core.scheduler.runDue({ tasks: false });
        await Bun.sleep(100);
      }
      expect(got.map((g) => g.type)).toEqual(["alert.firing"]);
      expect(got[0]!.rule.name).toBe("5xx");
      expect(got[0]!.rule.value).toBeGreaterThan(0.01);
    } finally {
      receiver.stop(true);
    }
  }, 60_000);

  test("a histogram's quantiles: interpolated within the bucket that holds them", () => {
    // 100 requests: 50 in (0, 5] ms, 45 in (5, 10], 5 in (10, 25].
    const counts = [50, 45, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    expect(quantileOf(counts, 0.5)).toBe(5);
    expect(quantileOf(counts, 0.95)).toBe(10);
    expect(quantileOf(counts, 0.99)).toBeCloseTo(22, 5);
    expect(quantileOf(new Array(12).fill(0), 0.95)).toBeNull();
  });
});
