/**
 * Observability reads against doc 3: metric series read raw samples for any window inside the
 * 14-day raw retention and rollups only past it; a metric name nobody sent has no made-up kind;
 * the traces `limit` counts traces, not root spans; a trace id that is no trace id is a 404, and
 * so is a trace none of which the caller may read, even for a caller in no project at all.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeMachine, makePerson, makeProject, makeRole } from "./fixtures";

let t: TestApp;
let token: string;
const MIN = 60_000;
const DAY = 24 * 60 * MIN;

beforeAll(async () => {
  t = await createTestApp();
  makeProject(t, "ob");
  token = (await makeMachine(t, [{ role: "developer", project: "ob" }])).token;
});
afterAll(() => t.close());

const get = async <T = any>(p: string, status = 200) => expectStatus<T>(await t.request("GET", p, { token }), status);
const post = async (p: string, body: unknown) => expectStatus(await t.request("POST", p, { token, body }), 200);
const at = (ms: number) => new Date(ms).toISOString();
const hex = (n: number, len: number) => n.toString(16).padStart(len, "0");

describe("metric series", () => {
  test("a window inside the 14-day raw retention reads raw samples however wide; one reaching past it reads rollups", async () => {
    const now = t.clock.now();
    const points = [now - 3 * DAY, now - 2 * DAY, now - DAY, now - 10 * MIN].map((ms, i) => ({ timeUnixNano: `${ms}000000`, asDouble: i + 1 }));
    await post("/otlp/v1/metrics", { resourceMetrics: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "api" } }] }, scopeMetrics: [{ metrics: [{ name: "queue.depth", gauge: { dataPoints: points } }] }] }] });
    const threeDays = await get(`/api/v1/obs/metrics/series?name=queue.depth&from=${at(now - 4 * DAY)}&to=${at(now)}`);
    expect(threeDays.source).toBe("raw");
    expect(threeDays.kind).toBe("gauge");
    const values = threeDays.series[0].points.filter((p: { value: number | null }) => p.value !== null).map((p: { value: number }) => p.value);
    expect(values).toEqual([1, 2, 3, 4]);
    expect((await get(`/api/v1/obs/metrics/series?name=queue.depth&from=${at(now - 13 * DAY)}`)).source).toBe("raw");
    expect((await get(`/api/v1/obs/metrics/series?name=queue.depth&from=${at(now - 15 * DAY)}`)).source).toBe("rollup");
  });

  test("a name no series has answers an empty series without inventing a kind", async () => {
    const s = await get("/api/v1/obs/metrics/series?name=never.sent&from=1h");
    expect(s.series).toEqual([]);
    expect(s.kind).not.toBe("gauge");
    expect(s.kind).toBe("unknown");
  });
});

describe("traces", () => {
  test("limit counts traces: a trace with 30 root spans is one entry, and the next traces still come", async () => {
    const now = t.clock.now();
    const span = (trace: number, id: number, ms: number, name: string) => ({
      traceId: hex(trace, 32),
      spanId: hex(id, 16),
      name,
      startTimeUnixNano: `${ms}000000`,
      endTimeUnixNano: `${ms + 5}000000`,
    });
    // The newest trace has 30 roots (a batch job's spans without a parent); four older traces one each.
    const spans = [...Array.from({ length: 30 }, (_, i) => span(1, 100 + i, now - MIN + i * 10, `batch-${i}`)), ...[2, 3, 4, 5].map((tr) => span(tr, tr, now - tr * MIN, `request-${tr}`))];
    await post("/otlp/v1/traces", { resourceSpans: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "jobs" } }] }, scopeSpans: [{ spans }] }] });
    const list = await get<Array<{ trace_id: string }>>("/api/v1/obs/traces?service=jobs&from=1h&limit=5");
    expect(list.map((s) => s.trace_id)).toEqual([1, 2, 3, 4, 5].map((n) => hex(n, 32)));
    expect((await get<unknown[]>("/api/v1/obs/traces?service=jobs&from=1h&limit=2")).length).toBe(2);
  });

  test("a trace id that is no trace id (too long, not hex) is a 404, like an unknown one", async () => {
    for (const id of ["a".repeat(65), "f".repeat(200), "not-hex", hex(999, 32)]) {
      const res = await t.request("GET", `/api/v1/obs/traces/${id}`, { token });
      expect([id.length, res.status]).toEqual([id.length, 404]);
      await res.arrayBuffer();
    }
  });
});

describe("a trace the caller cannot see", () => {
  test("is a 404 for a person in no project, as for a trace that does not exist (not a 403)", async () => {
    const trace = hex(77, 32);
    const now = t.clock.now();
    await post("/otlp/v1/traces", { resourceSpans: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "api" } }] }, scopeSpans: [{ spans: [{ traceId: trace, spanId: hex(1, 16), name: "GET /", startTimeUnixNano: `${now - MIN}000000`, endTimeUnixNano: `${now - MIN + 5}000000` }] }] }] });
    expect((await get<Array<{ trace_id: string }>>(`/api/v1/obs/traces/${trace}`)).map((s) => s.trace_id)).toEqual([trace]);
    const nobody = await makePerson(t, []);
    for (const id of [trace, hex(78, 32)]) {
      const body = await expectStatus(await t.request("GET", `/api/v1/obs/traces/${id}`, { token: nobody.session }), 404);
      expect(body.error).toBe("not_found");
    }
    // A member of the project whose role lacks obs.read: none of the trace is in a project it may read.
    const role = makeRole(t, "ob", "no-obs-trace", ["project.read"]);
    const member = await makePerson(t, [{ role, project: "ob" }]);
    await expectStatus(await t.request("GET", `/api/v1/obs/traces/${trace}?project=ob`, { token: member.session }), 404);
    await expectStatus(await t.request("GET", `/api/v1/obs/traces/${trace}`), 401);
  });
});

describe("the deliberate 403 on reads (docs/decisions/0283)", () => {
  test("a caller without obs.read is told which project it was refused in", async () => {
    const role = makeRole(t, "ob", "no-obs", ["project.read"]);
    const p = await makePerson(t, [{ role, project: "ob" }]);
    const named = await expectStatus(await t.request("GET", "/api/v1/obs/logs?project=ob", { token: p.session }), 403);
    expect(named.message).toContain('"ob"');
    expect(named.message).toContain("obs.read");
    const none = await expectStatus(await t.request("GET", "/api/v1/obs/traces", { token: p.session }), 403);
    expect(none.message).toContain("in any project");
  });
});
