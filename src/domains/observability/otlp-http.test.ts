/**
 * The OTLP/HTTP protocol at the edges, with hand-built requests (the happy path is tested with the
 * real exporters in ingest.test.ts): answers in the request's encoding, partial success, 400, 413,
 * 415, 429 with Retry-After under overload (and nothing lost that was acknowledged), and the
 * google.rpc.Status failure body in JSON and protobuf.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { gzipSync } from "node:zlib";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { writerOf } from "./writer";

/** The default OPS_OTLP_MAX_DECODED_BYTES: the limit on the wire and once decompressed. */
const OTLP_MAX_BODY_BYTES = 16 * 1024 * 1024;
const OTLP_MAX_DECODED_BYTES = OTLP_MAX_BODY_BYTES;

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await createTestApp();
  makeProject(t, "shop");
  token = (await makeMachine(t, [{ role: "developer", project: "shop" }])).token;
});
afterAll(() => t.close());

const attr = (key: string, value: string) => ({ key, value: { stringValue: value } });
function logsBody(service: string, records: Array<{ body: string; timeUnixNano?: string }>) {
  return { resourceLogs: [{ resource: { attributes: [attr("service.name", service)] }, scopeLogs: [{ scope: { name: "s" }, logRecords: records.map((r) => ({ body: { stringValue: r.body }, timeUnixNano: r.timeUnixNano })) }] }] };
}

const post = (signal: string, body: BodyInit, headers: Record<string, string>) => t.request("POST", `/otlp/v1/${signal}`, { token, raw: body, headers });

describe("answers", () => {
  test("JSON: `{}` on success, partialSuccess when records are refused (too old), same content type", async () => {
    const ok = await post("logs", JSON.stringify(logsBody("edge", [{ body: "fresh" }])), { "content-type": "application/json" });
    expect(ok.headers.get("content-type")).toBe("application/json");
    expect(await expectStatus(ok, 200)).toEqual({});
    const old = `${t.clock.now() - 30 * 86_400_000}000000`;
    const partial = await post("logs", JSON.stringify(logsBody("edge", [{ body: "ancient", timeUnixNano: old }, { body: "fine" }])), { "content-type": "application/json" });
    expect(await expectStatus(partial, 200)).toEqual({ partialSuccess: { rejectedLogRecords: "1", errorMessage: "1 log record older than the 14-day retention (not stored)" } });
  });

  test("protobuf: an empty body on success, an encoded partial success otherwise", async () => {
    // ExportLogsServiceRequest { resource_logs { scope_logs { log_records { body "x" } } } }
    const rec = (time?: number) => {
      const body = [0x2a, 0x03, 0x0a, 0x01, 0x78];
      if (time === undefined) return body;
      const b = new Uint8Array(8);
      new DataView(b.buffer).setBigUint64(0, BigInt(time) * 1_000_000n, true);
      return [0x09, ...b, ...body];
    };
    const request = (records: number[][]) => {
      const scope = records.flatMap((r) => [0x12, r.length, ...r]);
      const group = [0x12, scope.length, ...scope];
      return new Uint8Array([0x0a, group.length, ...group]);
    };
    const ok = await post("logs", request([rec()]), { "content-type": "application/x-protobuf" });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toBe("application/x-protobuf");
    expect((await ok.arrayBuffer()).byteLength).toBe(0);
    const partial = await post("logs", request([rec(t.clock.now() - 30 * 86_400_000), rec()]), { "content-type": "application/x-protobuf" });
    const bytes = new Uint8Array(await partial.arrayBuffer());
    expect(bytes[0]).toBe(0x0a);
    expect(bytes[2]).toBe(0x08);
    expect(bytes[3]).toBe(1);
    expect(Buffer.from(bytes).toString("utf8")).toContain("older than the 14-day retention");
  });

  test("metrics and traces answer partial success with their own counters", async () => {
    const badSpan = { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: "", spanId: "", name: "x" }] }] }] };
    expect(await expectStatus(await post("traces", JSON.stringify(badSpan), { "content-type": "application/json" }), 200)).toEqual({
      partialSuccess: { rejectedSpans: "1", errorMessage: "1 span without a valid trace or span id" },
    });
    const nan = { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: "m", gauge: { dataPoints: [{ asDouble: "NaN" }] } }] }] }] };
    expect(await expectStatus(await post("metrics", JSON.stringify(nan), { "content-type": "application/json" }), 200)).toEqual({
      partialSuccess: { rejectedDataPoints: "1", errorMessage: "1 data point without a finite value" },
    });
  });

  test("an empty request is a success", async () => {
    expect(await expectStatus(await post("logs", "", { "content-type": "application/json" }), 200)).toEqual({});
    expect((await post("traces", new Uint8Array(0), { "content-type": "application/x-protobuf" })).status).toBe(200);
  });
});

describe("refusals", () => {
  test("400 for undecodable bodies, as google.rpc.Status in the request's encoding", async () => {
    const json = await post("logs", "{not json", { "content-type": "application/json" });
    const body = await expectStatus(json, 400);
    expect(body).toMatchObject({ code: 3, details: [] });
    expect(body.message).toContain("could not be decoded");
    const proto = await post("logs", new Uint8Array([0x0a, 0x09, 0x01]), { "content-type": "application/x-protobuf" });
    expect(proto.status).toBe(400);
    expect(proto.headers.get("content-type")).toBe("application/x-protobuf");
    const status = new Uint8Array(await proto.arrayBuffer());
    expect([...status.slice(0, 2)]).toEqual([0x08, 0x03]);
    const badGzip = await post("logs", "plain", { "content-type": "application/json", "content-encoding": "gzip" });
    expect(badGzip.status).toBe(400);
  });

  test("415 for other content types and encodings", async () => {
    expect((await post("logs", "x", { "content-type": "text/plain" })).status).toBe(415);
    expect((await post("logs", "{}", { "content-type": "application/json", "content-encoding": "br" })).status).toBe(415);
  });

  test("413 past the body limit, on the wire and once gunzipped", async () => {
    const huge = new Uint8Array(OTLP_MAX_BODY_BYTES + 1);
    const res = await post("logs", huge, { "content-type": "application/x-protobuf" });
    expect(res.status).toBe(413);
    const bomb = gzipSync(Buffer.alloc(OTLP_MAX_DECODED_BYTES + 1024, 0x20));
    expect(bomb.byteLength).toBeLessThan(OTLP_MAX_BODY_BYTES);
    const exploded = await post("logs", bomb, { "content-type": "application/json", "content-encoding": "gzip" });
    expect(exploded.status).toBe(413);
    expect((await exploded.json()).code).toBe(8);
  });

  test("OPS_OTLP_MAX_DECODED_BYTES: counted on the decompressed size, and a body within it is taken", async () => {
    const small = await createTestApp({ env: { OPS_OTLP_MAX_DECODED_BYTES: String(1024 * 1024) } });
    try {
      makeProject(small, "tiny");
      const tiny = (await makeMachine(small, [{ role: "developer", project: "tiny" }])).token;
      const send = (body: BodyInit, headers: Record<string, string>) => small.request("POST", "/otlp/v1/logs", { token: tiny, raw: body, headers: { "content-type": "application/json", ...headers } });
      const records = (n: number) => JSON.stringify(logsBody("tiny", Array.from({ length: n }, (_, i) => ({ body: `line ${i} ${"x".repeat(80)}` }))));
      const over = records(13_000);
      expect(over.length).toBeGreaterThan(1024 * 1024);
      const gz = gzipSync(over);
      expect(gz.byteLength).toBeLessThan(100 * 1024);
      const inflated = await send(gz, { "content-encoding": "gzip" });
      expect(await expectStatus(inflated, 413)).toMatchObject({ code: 8, message: "The request body is larger than 1 MiB once decompressed (OPS_OTLP_MAX_DECODED_BYTES)." });
      expect((await send(over, {})).status).toBe(413);
      const within = records(8_000);
      expect(within.length).toBeLessThan(1024 * 1024);
      expect(await expectStatus(await send(gzipSync(within), { "content-encoding": "gzip" }), 200)).toEqual({});
      expect(await expectStatus(await send(within, {}), 200)).toEqual({});
    } finally {
      await small.close();
    }
  });

  test("401 is a google.rpc.Status too", async () => {
    const res = await t.request("POST", "/otlp/v1/logs", { raw: "{}", headers: { "content-type": "application/json" } });
    expect(await expectStatus(res, 401)).toMatchObject({ code: 16 });
  });

  test("429 with Retry-After while the writer's backlog is full; everything acknowledged is stored", async () => {
    const writer = writerOf(t.core);
    const saved = writer.limits;
    writer.limits = { items: saved.items, bytes: 200_000 };
    try {
      const records = Array.from({ length: 1500 }, (_, i) => ({ body: `overload line ${i}` }));
      const body = JSON.stringify(logsBody("overload", records));
      const answers = await Promise.all(Array.from({ length: 12 }, () => post("logs", body, { "content-type": "application/json" })));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      const refused = answers.filter((r) => r.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) expect(r.headers.get("retry-after")).toBe("2");
      for (const r of refused) expect((await r.json()).code).toBe(8);
      const accepted = statuses.filter((s) => s === 200).length;
      expect(accepted).toBeGreaterThan(0);
      await writer.flush();
      const stored = t.core.telemetrySqlite.query("SELECT coalesce(sum(n), 0) AS n FROM log_volume WHERE service = 'overload'").get() as { n: number };
      expect(stored.n).toBe(accepted * 1500);
    } finally {
      writer.limits = saved;
    }
  });
});

describe("while ops shuts down", () => {
  test("503 with Retry-After once the writer has closed", async () => {
    await writerOf(t.core).close();
    const res = await post("logs", JSON.stringify(logsBody("late", [{ body: "after close" }])), { "content-type": "application/json" });
    expect(await expectStatus(res, 503)).toMatchObject({ code: 14 });
    expect(res.headers.get("retry-after")).toBe("5");
  });
});
