/**
 * What an OTLP export body may look like before anything parses it (json-shape.ts), and how much
 * of the intake one credential may hold (intake.ts, writer.ts), with hand-built hostile bodies:
 * nesting past what any export needs is refused while the body is still arriving; a body that is
 * not one JSON object, or that is mostly empty objects, is refused; brackets inside strings and the
 * deepest attribute values the decoders accept still go through; protobuf attribute values are
 * bounded by their own decoder. One credential never takes every decompression slot or the whole
 * writer backlog: another project's export still finds room.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { gzipSync } from "node:zlib";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { MAX_JSON_DEPTH } from "./json-shape";
import { MAX_ANY_DEPTH } from "./otlp-model";
import { writerOf } from "./writer";

let t: TestApp;
let token: string;
let other: string;

beforeAll(async () => {
  t = await createTestApp();
  makeProject(t, "shop");
  makeProject(t, "calm");
  token = (await makeMachine(t, [{ role: "developer", project: "shop" }])).token;
  other = (await makeMachine(t, [{ role: "developer", project: "calm" }])).token;
});
afterAll(() => t.close());

const attr = (key: string, value: unknown) => ({ key, value });
const logs = (service: string, records: unknown[]) => ({ resourceLogs: [{ resource: { attributes: [attr("service.name", { stringValue: service })] }, scopeLogs: [{ scope: { name: "s" }, logRecords: records }] }] });
const post = (signal: string, body: BodyInit, headers: Record<string, string> = {}, as = token) =>
  t.request("POST", `/otlp/v1/${signal}`, { token: as, raw: body, headers: { "content-type": "application/json", ...headers } });
/** An attribute value nested `n` kvlists deep (the innermost at depth `n`). */
const kvlist = (n: number): unknown => (n === 0 ? { stringValue: "leaf" } : { kvlistValue: { values: [attr("k", kvlist(n - 1))] } });

async function storedMessages(service: string): Promise<string[]> {
  await writerOf(t.core).flush();
  const entries = await expectStatus<Array<{ message: string }>>(await t.request("GET", `/api/v1/obs/logs?service=${service}&from=1h`, { token }), 200);
  return entries.map((e) => e.message);
}

describe("nesting", () => {
  test("a body nested past the bound is refused with 400 naming the depth, plain or gzip, before the rest of it arrives", async () => {
    const nested = `{"resourceLogs":${"[".repeat(7_000_000)}${"]".repeat(7_000_000)}}`;
    for (const [body, headers] of [
      [nested, {}],
      [gzipSync(nested), { "content-encoding": "gzip" }],
    ] as const) {
      const res = await post("logs", body, headers);
      const status = await expectStatus(res, 400);
      expect(status).toMatchObject({ code: 3, message: `The JSON is nested deeper than ${MAX_JSON_DEPTH} levels; no OTLP export request needs more.` });
    }
    // The first 64 KiB of such a body, and then nothing: the answer comes while the body is still open.
    let close = () => {};
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(`{"resourceLogs":${"[".repeat(64 * 1024)}`));
        // The server cancels the body once it has refused it; closing is only for an answer that never came.
        close = () => {
          try {
            controller.close();
          } catch {}
        };
      },
    });
    const answered = await Promise.race([post("logs", stream).then((r) => r.status), Bun.sleep(10_000).then(() => "no answer while the body was open")]);
    close();
    expect(answered).toBe(400);
  });

  test(`nesting is counted outside strings only: brackets and escaped quotes inside text are stored as sent`, async () => {
    const text = `${"[".repeat(5000)} \\" ${"{".repeat(5000)} "quoted [ still text" \\\\`;
    expect(await expectStatus(await post("logs", JSON.stringify(logs("brackets", [{ body: { stringValue: text } }]))), 200)).toEqual({});
    expect(await storedMessages("brackets")).toEqual([text]);
  });

  test(`the deepest attribute values the decoders accept (${MAX_ANY_DEPTH} levels) still go through, in a log, a data point and an exemplar; one level more is the decoder's 400`, async () => {
    const deep = kvlist(MAX_ANY_DEPTH);
    expect(await expectStatus(await post("logs", JSON.stringify(logs("deep", [{ body: { stringValue: "deep" }, attributes: [attr("nested", deep)] }]))), 200)).toEqual({});
    const point = { asInt: "1", timeUnixNano: `${t.clock.now()}000000`, attributes: [attr("nested", deep)] };
    const histogram = { count: "1", timeUnixNano: `${t.clock.now()}000000`, exemplars: [{ asDouble: 1, filteredAttributes: [attr("nested", deep)] }] };
    const metrics = { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: "deep.gauge", gauge: { dataPoints: [point] } }, { name: "deep.histogram", histogram: { dataPoints: [histogram] } }] }] }] };
    expect(await expectStatus(await post("metrics", JSON.stringify(metrics)), 200)).toEqual({});
    const tooDeep = await expectStatus(await post("logs", JSON.stringify(logs("deep", [{ attributes: [attr("nested", kvlist(MAX_ANY_DEPTH + 1))] }]))), 400);
    expect(tooDeep.message).toContain("attribute values nested too deeply");
  });

  test(`an unknown field may nest to ${MAX_JSON_DEPTH} levels and no further`, async () => {
    const nestedTo = (levels: number) => `{"resourceLogs":[],"future":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`;
    expect(await expectStatus(await post("logs", nestedTo(MAX_JSON_DEPTH)), 200)).toEqual({});
    expect((await expectStatus(await post("logs", nestedTo(MAX_JSON_DEPTH + 1)), 400)).message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  test("protobuf: an attribute value nested 200 000 levels deep is refused by the decoder's own bound, and the intake carries on", async () => {
    const varint = (n: number) => {
      const out: number[] = [];
      for (; n > 0x7f; n >>>= 7) out.push((n & 0x7f) | 0x80);
      out.push(n);
      return out;
    };
    // AnyValue { array_value (5) { values (1) { AnyValue … } } } around a string value, 200 000 times:
    // lengths from the inside out, then the heads written from the outside in.
    const leaf = [0x0a, 0x01, 0x78];
    const heads: number[][] = [];
    let size = leaf.length;
    for (let i = 0; i < 200_000; i++) {
      const array = [0x0a, ...varint(size)];
      const value = [0x2a, ...varint(size + array.length)];
      size += array.length + value.length;
      heads.push([...value, ...array]);
    }
    const field = (tag: number, inner: Uint8Array) => Buffer.concat([Uint8Array.from([tag, ...varint(inner.length)]), inner]);
    const nested = Uint8Array.from([...heads.reverse().flat(), ...leaf]);
    // ExportLogsServiceRequest { resource_logs (1) { scope_logs (2) { log_records (2) { body (5) } } } }
    const body = field(0x0a, field(0x12, field(0x12, field(0x2a, nested))));
    const res = await post("logs", body, { "content-type": "application/x-protobuf" });
    expect(res.status).toBe(400);
    expect(Buffer.from(await res.arrayBuffer()).toString("utf8")).toContain("nested too deeply");
    expect(await expectStatus(await post("logs", JSON.stringify(logs("after-proto", [{ body: { stringValue: "fine" } }]))), 200)).toEqual({});
  });
});

describe("shape", () => {
  test("a body that is not one JSON object is refused at its first byte (an array, a string, a number, a second object)", async () => {
    for (const body of ["[]", '"resourceLogs"', "123", "  \n[{}]"]) {
      const refused = await expectStatus(await post("logs", body), 400);
      expect([body, refused.message]).toEqual([body, expect.stringContaining("is not a JSON object")]);
    }
    const twice = await expectStatus(await post("logs", `{"resourceLogs":[]} {"resourceLogs":[]}`), 400);
    expect(twice.message).toContain("continues after its JSON object ends");
    expect(await expectStatus(await post("logs", ' \n{"resourceLogs":[]}\n '), 200)).toEqual({});
  });

  test("a body that is mostly empty objects is refused with 413 naming the bound; an SDK-shaped body of the same size is taken", async () => {
    const small = await createTestApp({ env: { OPS_OTLP_MAX_DECODED_BYTES: String(1024 * 1024) } });
    try {
      makeProject(small, "tiny");
      const tiny = (await makeMachine(small, [{ role: "developer", project: "tiny" }])).token;
      const send = (body: string) => small.request("POST", "/otlp/v1/logs", { token: tiny, raw: gzipSync(body), headers: { "content-type": "application/json", "content-encoding": "gzip" } });
      const empties = JSON.stringify(logs("empty", Array.from({ length: 70_000 }, () => ({}))));
      expect(empties.length).toBeLessThan(1024 * 1024);
      const refused = await expectStatus(await send(empties), 413);
      expect(refused).toMatchObject({ code: 8, message: "The body holds more than 65536 JSON objects and arrays (one per 16 bytes of OPS_OTLP_MAX_DECODED_BYTES); send smaller batches." });
      const now = `${small.clock.now()}000000`;
      const record = (i: number) => ({
        timeUnixNano: now,
        observedTimeUnixNano: now,
        severityNumber: 9,
        severityText: "INFO",
        body: { stringValue: `GET /items/${i} 200` },
        attributes: [attr("http.route", { stringValue: "/items/:id" }), attr("http.response.status_code", { intValue: 200 })],
        traceId: "5b8efff798038103d269b633813fc60c",
        spanId: "eee19b7ec3c1b174",
      });
      const records = Array.from({ length: 2700 }, (_, i) => record(i));
      const sdk = JSON.stringify(logs("sdk", records));
      expect(sdk.length).toBeGreaterThan(900 * 1024);
      expect(sdk.length).toBeLessThan(1024 * 1024);
      expect(await expectStatus(await send(sdk), 200)).toEqual({});
    } finally {
      await small.close();
    }
  });
});

describe("one credential's share", () => {
  test("a credential with two gzip bodies inflating gets 429 for a third, while another project's gzip export is taken", async () => {
    const closers: Array<() => void> = [];
    const held = Array.from({ length: 2 }, (_, i) => {
      const whole = gzipSync(JSON.stringify(logs("held", [{ body: { stringValue: `held ${i}` } }])));
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(whole.subarray(0, 10));
          closers.push(() => {
            controller.enqueue(whole.subarray(10));
            controller.close();
          });
        },
      });
      return post("logs", stream, { "content-encoding": "gzip" });
    });
    // Until the server is inflating both (its own count of bodies being inflated).
    const counts = () => t.core.locals.get("observability.intake") as { inflating: number } | undefined;
    for (const deadline = Date.now() + 10_000; (counts()?.inflating ?? 0) < 2; ) {
      if (Date.now() > deadline) throw new Error("the two held bodies never started inflating");
      await Bun.sleep(5);
    }
    const third = await post("logs", gzipSync(JSON.stringify(logs("third", [{ body: { stringValue: "third" } }]))), { "content-encoding": "gzip" });
    expect(third.headers.get("retry-after")).toBe("1");
    expect((await expectStatus(third, 429)).message).toContain("this credential");
    const calm = await post("logs", gzipSync(JSON.stringify(logs("calm", [{ body: { stringValue: "another project" } }]))), { "content-encoding": "gzip" }, other);
    expect(await expectStatus(calm, 200)).toEqual({});
    for (const close of closers) close();
    for (const res of await Promise.all(held)) expect(await expectStatus(res, 200)).toEqual({});
    expect((await storedMessages("held")).sort()).toEqual(["held 0", "held 1"]);
  });

  test("a credential holds at most half of the writer's backlog: another project's export finds room while it floods", async () => {
    const writer = writerOf(t.core);
    const saved = writer.limits;
    writer.limits = { items: saved.items, bytes: 200_000 };
    try {
      const body = JSON.stringify(logs("flood", Array.from({ length: 1500 }, (_, i) => ({ body: { stringValue: `flood line ${i}` } }))));
      expect(body.length).toBeGreaterThan(40_000);
      expect(body.length).toBeLessThan(100_000);
      const flood = Array.from({ length: 12 }, () => post("logs", body));
      const calm = await post("logs", body, {}, other);
      const answers = await Promise.all(flood);
      expect(await expectStatus(calm, 200)).toEqual({});
      const refused = answers.filter((r) => r.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      expect(answers.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
      const messages = await Promise.all(refused.map(async (r) => (await r.json()).message as string));
      expect(messages.some((m) => m.includes("This credential's telemetry"))).toBe(true);
    } finally {
      writer.limits = saved;
    }
  });
});
