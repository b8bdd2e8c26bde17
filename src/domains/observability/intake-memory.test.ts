/**
 * Telemetry intake under a decompression attack, measured on a real `ops serve` child process:
 * eight small gzip exports that each inflate to about 58 MiB of valid OTLP JSON arrive at once,
 * and a small export is sent while they are in flight.
 *
 * Why a child process (test/support/memory-child.ts): peak memory is the thing under test, and the
 * test process holds bun's test runner, the senders and every other suite's leftovers. The child's
 * peak RSS (`VmHWM`) is reset just before the attack, so the growth read afterwards is the
 * attack's and nothing else's.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { gzipSync } from "node:zlib";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { procStatus, serveMemoryChild, type MemoryChild } from "../../../test/support/memory-child";

const MiB = 1024 * 1024;

/** A valid OTLP-JSON logs export of about `bytes`, repetitive enough to gzip about 140:1. */
function bombExport(bytes: number): { json: Buffer; gz: Buffer; records: number } {
  const attr = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const record = (i: number) =>
    JSON.stringify({ severityNumber: 9, severityText: "INFO", body: { stringValue: `GET /api/v1/items/${i % 16} handled in ${i % 7} ms for tenant acme` }, attributes: [attr("http.route", "/api/v1/items/:id"), attr("http.response.status_code", "200")] });
  const head = `{"resourceLogs":[{"resource":{"attributes":[${JSON.stringify(attr("service.name", "bomb"))}]},"scopeLogs":[{"scope":{"name":"s"},"logRecords":[`;
  const tail = "]}]}]}";
  const parts: string[] = [];
  let size = head.length + tail.length;
  while (size < bytes) {
    const r = record(parts.length);
    parts.push(r);
    size += r.length + 1;
  }
  const json = Buffer.from(`${head}${parts.join(",")}${tail}`);
  return { json, gz: gzipSync(json, { level: 9 }), records: parts.length };
}

let server: MemoryChild<{ token: string }>;
let base: string;
let token: string;

beforeAll(async () => {
  server = await serveMemoryChild(async (prep) => {
    makeProject(prep, "shop");
    return { token: (await makeMachine(prep, [{ role: "developer", project: "shop" }])).token };
  });
  ({ base, prepared: { token } } = server);
});

afterAll(() => server?.stop());

const send = (body: Uint8Array | string, gzip: boolean) =>
  fetch(`${base}/otlp/v1/logs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) },
    body: body as BodyInit,
  });

const small = (text: string) => JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "small" } }] }, scopeLogs: [{ logRecords: [{ body: { stringValue: text } }] }] }] });

describe("decompression attack on the OTLP intake", () => {
  test("eight 0.4 MiB exports inflating to ~58 MiB each grow peak RSS by under 384 MiB; a small export meanwhile is answered within 1 s", async () => {
    const bomb = bombExport(58 * MiB);
    expect(bomb.gz.byteLength).toBeLessThan(0.5 * MiB);
    expect(bomb.json.byteLength).toBeGreaterThan(57 * MiB);
    // Warm the server up (the writer thread, its database, the JIT) so the baseline is a running server's.
    for (let i = 0; i < 3; i++) expect((await send(small(`warm-up ${i}`), false)).status).toBe(200);
    const pid = server.pid;
    const before = procStatus(pid, "VmRSS");
    server.resetPeak();

    const t0 = performance.now();
    const bombs = Array.from({ length: 8 }, () => send(bomb.gz, true).then(async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.text(), ms: Math.round(performance.now() - t0) })));
    // Sent right behind the eight, while they are read and inflated.
    const started = performance.now();
    const answer = await send(small("sent during the attack"), false);
    const smallMs = performance.now() - started;
    const outcomes = await Promise.all(bombs);
    const growth = procStatus(pid, "VmHWM") - before;

    console.log(`intake attack: peak RSS grew ${(growth / MiB).toFixed(0)} MiB; small export answered ${answer.status} in ${smallMs.toFixed(0)} ms; bombs answered ${outcomes.map((o) => `${o.status} at ${o.ms} ms`).join(", ")}`);
    expect(answer.status).toBe(200);
    expect(smallMs).toBeLessThan(1000);
    expect(growth).toBeLessThan(384 * MiB);
    // Past the decoded limit (16 MiB by default) each is refused whole: 413, or 429 while the decode slots are taken.
    for (const o of outcomes) {
      expect([413, 429]).toContain(o.status);
      if (o.status === 429) expect(o.retryAfter).not.toBeNull();
    }
    expect(outcomes.some((o) => o.status === 413)).toBe(true);
  }, 120_000);

  test("eight exports under the limit at once (10 MiB each once inflated) are decoded without several copies of each: peak RSS grows by under 384 MiB, and what was accepted is stored", async () => {
    const big = bombExport(10 * MiB);
    const pid = server.pid;
    const before = procStatus(pid, "VmRSS");
    server.resetPeak();
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(big.gz, true).then((r) => r.status)));
    const growth = procStatus(pid, "VmHWM") - before;
    console.log(`exports under the limit: peak RSS grew ${(growth / MiB).toFixed(0)} MiB; answered ${answers.join(",")}`);
    expect(answers.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const accepted = answers.filter((s) => s === 200).length;
    expect(accepted).toBeGreaterThan(0);
    expect(growth).toBeLessThan(384 * MiB);
    // Everything acknowledged is stored: the bomb service's lines are read back through the API.
    const res = await fetch(`${base}/api/v1/obs/logs/volume?service=bomb&from=1h`, { headers: { authorization: `Bearer ${token}` } });
    const volume = (await res.json()) as { buckets: Array<{ counts: Record<string, number> }> };
    const stored = volume.buckets.reduce((n, b) => n + Object.values(b.counts).reduce((a, c) => a + c, 0), 0);
    expect(stored).toBe(accepted * big.records);
  }, 180_000);
});
