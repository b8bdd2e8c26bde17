/**
 * Metrics: the real SDK and exporters (counter, gauge, histogram) read back as server-side
 * bucketed series per service; rollups and retention as scheduler tasks that catch up after a
 * stop (the clock moved days ahead, one run), samples arriving days late folded into their
 * bucket, and the `source` telling raw from rollup.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { meters, exportMetrics, AggregationTemporality, type Encoding } from "../../../test/obs-clients";
import { ROLLUP_TASK, RETENTION_TASK } from "./jobs";

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(Date.now());
  makeProject(t, "shop");
  token = (await makeMachine(t, [{ role: "developer", project: "shop" }])).token;
});
afterAll(() => t.close());

const get = async <T = any>(p: string, status = 200) => expectStatus<T>(await t.request("GET", p, { token }), status);

describe("metrics from the real exporters", () => {
  for (const encoding of ["proto", "json"] as Encoding[]) {
    test(`${encoding}: counter summed across label sets, gauge average with min/max, histogram mean`, async () => {
      const svc = `metrics-${encoding}`;
      const m = meters({ "service.name": svc, "deployment.environment.name": "production" });
      const meter = m.provider.getMeter("test");
      const requests = meter.createCounter("http.requests");
      const load = meter.createGauge("cpu.load");
      const duration = meter.createHistogram("http.duration", { unit: "ms" });
      requests.add(3, { route: "/a" });
      requests.add(5, { route: "/b" });
      load.record(0.5, { cpu: "0" });
      load.record(1.5, { cpu: "1" });
      duration.record(10);
      duration.record(20);
      expect((await exportMetrics(t.url, await m.collect(), { encoding, token })).ok).toBe(true);
      // Cumulative: the second export carries running totals, which must not be added up again.
      requests.add(2, { route: "/a" });
      expect((await exportMetrics(t.url, await m.collect(), { encoding, token })).ok).toBe(true);
      await m.provider.shutdown();
      // The SDK stamps points with the real time; read with the clock there too.
      t.clock.set(Date.now());

      const names = await get("/api/v1/obs/metrics/names");
      expect(names).toEqual(expect.arrayContaining([{ name: "http.requests", kind: "counter" }, { name: "cpu.load", kind: "gauge" }, { name: "http.duration", kind: "histogram" }]));

      const counter = await get(`/api/v1/obs/metrics/series?name=http.requests&service=${svc}&from=15m`);
      expect(counter).toMatchObject({ name: "http.requests", kind: "counter", source: "raw" });
      expect(counter.series).toHaveLength(1);
      expect(counter.series[0].service).toBe(svc);
      const values = counter.series[0].points.map((p: { value: number | null }) => p.value).filter((v: number | null) => v !== null);
      expect(values[values.length - 1]).toBe(10);
      expect(counter.bucket_seconds).toBeGreaterThan(0);

      const gauge = await get(`/api/v1/obs/metrics/series?name=cpu.load&service=${svc}&from=15m`);
      const gp = gauge.series[0].points.filter((p: { value: number | null }) => p.value !== null);
      expect(gp[gp.length - 1]).toMatchObject({ value: 1, min: 0.5, max: 1.5 });

      const hist = await get(`/api/v1/obs/metrics/series?name=http.duration&service=${svc}&from=15m`);
      const hp = hist.series[0].points.filter((p: { value: number | null }) => p.value !== null);
      expect(hp[0]).toMatchObject({ value: 15, min: 10, max: 20 });
    });
  }

  test("delta temporality is stored as running totals", async () => {
    const m = meters({ "service.name": "delta-svc" }, AggregationTemporality.DELTA);
    const c = m.provider.getMeter("test").createCounter("jobs.done");
    c.add(4);
    expect((await exportMetrics(t.url, await m.collect(), { encoding: "proto", token })).ok).toBe(true);
    c.add(6);
    expect((await exportMetrics(t.url, await m.collect(), { encoding: "proto", token })).ok).toBe(true);
    await m.provider.shutdown();
    t.clock.set(Date.now());
    const s = await get("/api/v1/obs/metrics/series?name=jobs.done&from=15m");
    const values = s.series[0].points.map((p: { value: number | null }) => p.value).filter((v: number | null) => v !== null);
    expect(values[values.length - 1]).toBe(10);
  });

  test("an unknown metric is an empty series list; a missing name is 422", async () => {
    expect((await get("/api/v1/obs/metrics/series?name=no.such.metric")).series).toEqual([]);
    await get("/api/v1/obs/metrics/series", 422);
  });
});

const MIN = 60_000;

function gaugeRequest(service: string, name: string, points: Array<[ms: number, value: number]>) {
  return {
    resourceMetrics: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: service } }] },
        scopeMetrics: [{ metrics: [{ name, gauge: { dataPoints: points.map(([ms, v]) => ({ timeUnixNano: `${ms}000000`, asDouble: v })) } }] }],
      },
    ],
  };
}

describe("rollups and retention", () => {
  test("after a three-day stop one rollup run folds every missed bucket; wide windows read the rollups", async () => {
    const start = Math.floor(t.clock.now() / (5 * MIN)) * 5 * MIN - 60 * MIN;
    // One sample a minute for an hour: the value is the minute's index.
    const points: Array<[number, number]> = Array.from({ length: 60 }, (_, i) => [start + i * MIN + 1000, i]);
    await expectStatus(await t.request("POST", "/otlp/v1/metrics", { token, body: gaugeRequest("rollup-svc", "queue.size", points) }), 200);
    const raw = await get(`/api/v1/obs/metrics/series?name=queue.size&from=${new Date(start).toISOString()}&to=${new Date(start + 60 * MIN).toISOString()}`);
    expect(raw.source).toBe("raw");

    t.clock.advance(3 * 24 * 60 * MIN);
    await t.core.scheduler.runDue();
    const rows = t.core.telemetrySqlite.query("SELECT t, value, min, max, n FROM metric_rollups ORDER BY t").all() as Array<{ t: number; value: number; min: number; max: number; n: number }>;
    const mine = rows.filter((r) => r.t >= start && r.t < start + 60 * MIN);
    expect(mine).toHaveLength(12);
    expect(mine[0]).toEqual({ t: start, value: 2, min: 0, max: 4, n: 5 });

    // A window that reaches past the 14-day raw retention reads the rollups.
    const wide = await get(`/api/v1/obs/metrics/series?name=queue.size&from=${new Date(start - 15 * 24 * 60 * MIN).toISOString()}&to=${new Date(start + 24 * 60 * MIN).toISOString()}`);
    expect(wide.source).toBe("rollup");
    expect(wide.bucket_seconds % 300).toBe(0);
    // Each bucket is the average (with min and max) of exactly the samples that fall in it.
    const stepMs = wide.bucket_seconds * 1000;
    let checked = 0;
    for (const p of wide.series[0].points as Array<{ t: string; value: number | null; min: number | null; max: number | null }>) {
      const b = Date.parse(p.t);
      const inside = points.filter(([ms]) => ms >= b && ms < b + stepMs).map(([, v]) => v);
      if (inside.length === 0) {
        expect(p.value).toBeNull();
        continue;
      }
      expect(p.value).toBeCloseTo(inside.reduce((a, v) => a + v, 0) / inside.length, 9);
      expect(p.min).toBe(Math.min(...inside));
      expect(p.max).toBe(Math.max(...inside));
      checked += inside.length;
    }
    expect(checked).toBe(60);

    // Running again folds nothing new (the watermark moved past it).
    await t.core.scheduler.runNow(ROLLUP_TASK);
    expect((t.core.telemetrySqlite.query("SELECT count(*) AS n FROM metric_rollups").get() as { n: number }).n).toBe(rows.length);
  });

  test("samples that arrive late (inside the raw retention, older than the refold window) reach their rollup bucket", async () => {
    await t.core.scheduler.runNow(ROLLUP_TASK);
    const bucket = Math.floor((t.clock.now() - 5 * 24 * 60 * MIN) / (5 * MIN)) * 5 * MIN;
    const rollupOf = () => t.core.telemetrySqlite.query("SELECT r.value, r.min, r.max, r.n FROM metric_rollups r JOIN metric_series m ON m.id = r.series WHERE m.name = 'late.depth' AND r.t = ?").get(bucket);
    await expectStatus(await t.request("POST", "/otlp/v1/metrics", { token, body: gaugeRequest("late-svc", "late.depth", [[bucket + MIN, 10]]) }), 200);
    expect(rollupOf()).toBeNull();
    await t.core.scheduler.runNow(ROLLUP_TASK);
    expect(rollupOf()).toEqual({ value: 10, min: 10, max: 10, n: 1 });
    // A second late sample in the same bucket: the bucket is folded again from every sample in it.
    await expectStatus(await t.request("POST", "/otlp/v1/metrics", { token, body: gaugeRequest("late-svc", "late.depth", [[bucket + 2 * MIN, 20]]) }), 200);
    await t.core.scheduler.runNow(ROLLUP_TASK);
    expect(rollupOf()).toEqual({ value: 15, min: 10, max: 20, n: 2 });
    // Nothing is left to refold, and a window reaching past the raw retention reads the bucket.
    expect((t.core.telemetrySqlite.query("SELECT count(*) AS n FROM metric_refold").get() as { n: number }).n).toBe(0);
    const wide = await get(`/api/v1/obs/metrics/series?name=late.depth&from=${new Date(bucket - 15 * 24 * 60 * MIN).toISOString()}&to=${new Date(bucket + 24 * 60 * MIN).toISOString()}`);
    expect(wide.source).toBe("rollup");
    expect(wide.series[0].points.some((p: { value: number | null }) => p.value === 15)).toBe(true);
  });

  test("retention after a long stop: raw data past 14 days goes in one run, rollups stay", async () => {
    const now = t.clock.now();
    await expectStatus(await t.request("POST", "/otlp/v1/metrics", { token, body: gaugeRequest("retention-svc", "disk.used", [[now - 10 * MIN, 42]]) }), 200);
    await expectStatus(
      await t.request("POST", "/otlp/v1/logs", {
        token,
        body: { resourceLogs: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "retention-svc" } }] }, scopeLogs: [{ logRecords: [{ timeUnixNano: `${now - 10 * MIN}000000`, body: { stringValue: "retention-line" } }] }] }] },
      }),
      200,
    );
    await t.core.scheduler.runNow(ROLLUP_TASK);
    expect(await get("/api/v1/obs/logs?q=retention-line")).toHaveLength(1);
    const count = (sql: string) => (t.core.telemetrySqlite.query(sql).get() as { n: number }).n;
    expect(count("SELECT count(*) AS n FROM metric_samples")).toBeGreaterThan(0);

    t.clock.advance(20 * 24 * 60 * MIN);
    await t.core.scheduler.runDue();
    expect(count("SELECT count(*) AS n FROM metric_samples")).toBe(0);
    expect(count("SELECT count(*) AS n FROM spans")).toBe(0);
    expect(count("SELECT count(*) AS n FROM log_volume")).toBe(0);
    expect(count("SELECT count(*) AS n FROM metric_rollups")).toBeGreaterThan(0);
    expect(await get("/api/v1/obs/logs?q=retention-line")).toEqual([]);
    const old = await get(`/api/v1/obs/metrics/series?name=disk.used&from=${new Date(now - 60 * MIN).toISOString()}&to=${new Date(now).toISOString()}`);
    expect(old.source).toBe("rollup");
    expect(old.series[0].points.some((p: { value: number | null }) => p.value === 42)).toBe(true);

    // Rollups themselves go after 400 days.
    t.clock.advance(400 * 24 * 60 * MIN);
    await t.core.scheduler.runNow(RETENTION_TASK);
    expect(count("SELECT count(*) AS n FROM metric_rollups")).toBe(0);
  });
});
