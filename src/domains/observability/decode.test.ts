/**
 * The OTLP decoders against the bytes the real OpenTelemetry JS exporters send: the same SDK
 * records exported as protobuf and as JSON (captured by a loopback server) decode to the same
 * records. Malformed input is refused, unknown fields are skipped.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { gunzipSync } from "node:zlib";
import { decodeLogsProto, decodeMetricsProto, decodeTracesProto } from "./otlp-proto";
import { encodePartialSuccessProto } from "./proto-wire";
import { decodeLogsJson, decodeMetricsJson, decodeTracesJson } from "./otlp-json";
import { OtlpDecodeError } from "./otlp-model";
import { makeLogs, exportLogs, makeSpans, exportSpans, meters, exportMetrics, SeverityNumber, type Encoding } from "../../../test/obs-clients";

interface Captured {
  path: string;
  contentType: string;
  encoding: string | null;
  body: Uint8Array;
}

const captured: Captured[] = [];
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    captured.push({ path: new URL(req.url).pathname, contentType: req.headers.get("content-type") ?? "", encoding: req.headers.get("content-encoding"), body: new Uint8Array(await req.arrayBuffer()) });
    return new Response(null, { status: 200 });
  },
});
afterAll(() => server.stop(true));
const base = `http://127.0.0.1:${server.port}`;

async function capture(send: (encoding: Encoding) => Promise<unknown>): Promise<{ proto: Uint8Array; json: unknown }> {
  captured.length = 0;
  await send("proto");
  await send("json");
  const proto = captured.find((c) => c.contentType === "application/x-protobuf")!;
  const json = captured.find((c) => c.contentType === "application/json")!;
  const unzip = (c: Captured) => (c.encoding === "gzip" ? gunzipSync(c.body) : c.body);
  return { proto: unzip(proto), json: JSON.parse(Buffer.from(unzip(json)).toString("utf8")) };
}

/** Maps to plain objects, so two decodings compare with toEqual. */
function plain(v: unknown): unknown {
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]));
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

describe("OTLP decoding of the real exporters' bytes", () => {
  test("logs: protobuf and JSON decode to the same records", async () => {
    const records = makeLogs({ "service.name": "api", "deployment.environment.name": "staging", "host.name": "web-1" }, [
      { body: "first line", severityNumber: SeverityNumber.INFO, severityText: "INFO", attributes: { "http.route": "/a", "http.response.status_code": 200, flag: true, ratio: 0.5 } },
      { body: "second line ünïcode", severityNumber: SeverityNumber.ERROR, timestamp: Date.UTC(2026, 10, 23, 10, 0, 0, 123) },
    ]);
    const { proto, json } = await capture((encoding) => exportLogs(base, records, { encoding, token: "t", gzip: encoding === "proto" }));
    const fromProto = decodeLogsProto(proto);
    const fromJson = decodeLogsJson(json);
    expect(plain(fromProto)).toEqual(plain(fromJson));
    const recs = fromProto[0].scopes[0].items;
    expect(fromProto[0].resource.get("service.name")).toBe("api");
    expect(recs.map((r) => r.body)).toEqual(["first line", "second line ünïcode"]);
    expect(recs[0].attributes.get("http.response.status_code")).toBe(200);
    expect(recs[0].attributes.get("flag")).toBe(true);
    expect(recs[0].severityText).toBe("INFO");
    expect(recs[1].severityNumber).toBe(SeverityNumber.ERROR);
    expect(Math.floor(recs[1].timeMs)).toBe(Date.UTC(2026, 10, 23, 10, 0, 0, 123));
  });

  test("traces: protobuf and JSON decode to the same spans, ids as hex, kinds in OTLP numbering", async () => {
    const { spans, traceIds } = makeSpans({ "service.name": "web" }, [{ name: "GET /orders", attributes: { "http.route": "/orders" }, error: "boom", children: ["SELECT orders"] }]);
    const { proto, json } = await capture((encoding) => exportSpans(base, spans, { encoding, token: "t" }));
    const fromProto = decodeTracesProto(proto);
    expect(plain(fromProto)).toEqual(plain(decodeTracesJson(json)));
    const all = fromProto[0].scopes[0].items;
    const root = all.find((s) => s.parentSpanId === "")!;
    const child = all.find((s) => s.parentSpanId !== "")!;
    expect(root.traceId).toBe(traceIds[0]);
    expect(root.kind).toBe(2); // SERVER in OTLP (the JS API says 1)
    expect(child.kind).toBe(3); // CLIENT
    expect(child.parentSpanId).toBe(root.spanId);
    expect(root.statusCode).toBe(2);
    expect(root.statusMessage).toBe("boom");
    expect(root.endMs).toBeGreaterThanOrEqual(root.startMs);
  });

  test("metrics: counter, up-down counter, gauge and histogram decode alike from both encodings", async () => {
    const m = meters({ "service.name": "api" });
    const meter = m.provider.getMeter("test");
    meter.createCounter("http.requests").add(3, { route: "/a" });
    meter.createUpDownCounter("queue.depth").add(-2);
    meter.createGauge("cpu.load").record(0.75);
    const h = meter.createHistogram("http.duration", { unit: "ms" });
    for (const v of [3, 12, 480]) h.record(v);
    const metrics = await m.collect();
    const { proto, json } = await capture((encoding) => exportMetrics(base, metrics, { encoding, token: "t" }));
    const fromProto = decodeMetricsProto(proto);
    expect(plain(fromProto)).toEqual(plain(decodeMetricsJson(json)));
    const byName = new Map(fromProto[0].scopes[0].items.map((x) => [x.name, x]));
    expect(byName.get("http.requests")).toMatchObject({ type: "sum", monotonic: true, temporality: 2 });
    expect(byName.get("http.requests")!.points[0].value).toBe(3);
    expect(byName.get("http.requests")!.points[0].attributes.get("route")).toBe("/a");
    expect(byName.get("queue.depth")).toMatchObject({ type: "sum", monotonic: false });
    expect(byName.get("queue.depth")!.points[0].value).toBe(-2);
    expect(byName.get("cpu.load")!.type).toBe("gauge");
    const hist = byName.get("http.duration")!;
    expect(hist).toMatchObject({ type: "histogram", unit: "ms" });
    expect(hist.points[0]).toMatchObject({ count: 3, sum: 495, min: 3, max: 480 });
    expect(hist.points[0].bucketCounts.length).toBe(hist.points[0].explicitBounds.length + 1);
    expect(hist.points[0].bucketCounts.reduce((a, b) => a + b, 0)).toBe(3);
    await m.provider.shutdown();
  });
});

describe("protobuf edge cases", () => {
  test("unknown fields are skipped", () => {
    // ExportLogsServiceRequest { resource_logs { scope_logs { log_records { severity_text "X", field 99 = 7 } } }, field 50 "zz" }
    const rec = [0x1a, 0x01, 0x58, 0x98, 0x06, 0x07];
    const scope = [0x12, rec.length, ...rec];
    const group = [0x12, scope.length, ...scope];
    const bytes = new Uint8Array([0x0a, group.length, ...group, 0x92, 0x03, 0x02, 0x7a, 0x7a]);
    const decoded = decodeLogsProto(bytes);
    expect(decoded[0].scopes[0].items[0].severityText).toBe("X");
  });

  test("truncated and malformed input is refused", () => {
    expect(() => decodeLogsProto(new Uint8Array([0x0a, 0x05, 0x12]))).toThrow(OtlpDecodeError);
    expect(() => decodeLogsProto(new Uint8Array([0x0b]))).toThrow(OtlpDecodeError);
    expect(() => decodeLogsProto(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(OtlpDecodeError);
    expect(() => decodeLogsJson({ resourceLogs: "nope" })).toThrow(OtlpDecodeError);
    expect(() => decodeLogsJson([])).toThrow(OtlpDecodeError);
    expect(() => decodeTracesJson({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: "not-hex" }] }] }] })).toThrow(OtlpDecodeError);
  });

  test("an empty request is an empty list", () => {
    expect(decodeLogsProto(new Uint8Array(0))).toEqual([]);
    expect(decodeMetricsJson({})).toEqual([]);
  });

  test("JSON accepts 64-bit integers as strings or numbers, and NaN/Infinity doubles", () => {
    const [g] = decodeMetricsJson({
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                { name: "a", sum: { isMonotonic: true, aggregationTemporality: 2, dataPoints: [{ asInt: "42", timeUnixNano: "1767269700000000000" }, { asDouble: "NaN", timeUnixNano: 1767269700000000000 }] } },
              ],
            },
          ],
        },
      ],
    });
    const points = g.scopes[0].items[0].points;
    expect(points[0].value).toBe(42);
    expect(points[0].timeMs).toBe(1767269700000);
    expect(Number.isNaN(points[1].value)).toBe(true);
  });

  test("the partial-success answer encodes as OTLP specifies", () => {
    expect(encodePartialSuccessProto(0, "")).toEqual(new Uint8Array(0));
    expect([...encodePartialSuccessProto(3, "ab")]).toEqual([0x0a, 0x06, 0x08, 0x03, 0x12, 0x02, 0x61, 0x62]);
  });
});
