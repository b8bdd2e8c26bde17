/**
 * Telemetry intake under a nesting attack, measured on a real `ops serve` child process: eight
 * OTLP-JSON bodies of 15 MiB that are nothing but `[` × 8M then `]` × 8M (16 KB gzipped) arrive at
 * once. Parsed whole, one such body costs over 500 MiB in the JSON parser and holds the writer for
 * seconds; refused while it streams (json-shape.ts), it costs the first chunk.
 *
 * The child's RSS is sampled from /proc/<pid>/status all through the attack, and its peak
 * (`VmHWM`, reset through /proc/<pid>/clear_refs just before) read after it: both must stay under
 * 384 MiB, and small exports sent meanwhile (from the attacking token and from another project)
 * are answered 200 within a second (test/support/memory-child.ts says why a child).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { gzipSync } from "node:zlib";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { procStatus, serveMemoryChild, type MemoryChild } from "../../../test/support/memory-child";

const MiB = 1024 * 1024;

let server: MemoryChild<{ hostile: string; calm: string }>;
let base: string;
let hostile: string;
let calm: string;

beforeAll(async () => {
  server = await serveMemoryChild(async (prep) => {
    makeProject(prep, "noisy");
    makeProject(prep, "calm");
    return {
      hostile: (await makeMachine(prep, [{ role: "developer", project: "noisy" }])).token,
      calm: (await makeMachine(prep, [{ role: "developer", project: "calm" }])).token,
    };
  });
  ({ base, prepared: { hostile, calm } } = server);
});

afterAll(() => server?.stop());

const send = (token: string, body: Uint8Array | string, gzip: boolean) =>
  fetch(`${base}/otlp/v1/logs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) },
    body: body as BodyInit,
  });

const small = (text: string) => JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "small" } }] }, scopeLogs: [{ logRecords: [{ body: { stringValue: text } }] }] }] });

async function timed(token: string, text: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await send(token, small(text), false);
  await res.arrayBuffer();
  return { status: res.status, ms: Math.round(performance.now() - started) };
}

describe("nesting attack on the OTLP intake", () => {
  test("eight 15 MiB bodies of `[`×8M `]`×8M at once: RSS stays under 384 MiB, and small exports meanwhile are answered 200 within 1 s", async () => {
    const depth = 8_000_000;
    // The red team's body, and the same nesting inside an object (refused by depth, not by its first byte).
    const bare = Buffer.from("[".repeat(depth) + "]".repeat(depth));
    const wrapped = Buffer.from(`{"resourceLogs":${"[".repeat(depth - 10)}${"]".repeat(depth - 10)}}`);
    const kinds = [bare, wrapped].map((json) => {
      expect(json.byteLength).toBeGreaterThan(15 * MiB);
      const gz = gzipSync(json, { level: 9 });
      expect(gz.byteLength).toBeLessThan(64 * 1024);
      return gz;
    });
    for (let i = 0; i < 3; i++) expect((await timed(calm, `warm-up ${i}`)).status).toBe(200);
    const pid = server.pid;
    server.resetPeak();
    let sampled = procStatus(pid, "VmRSS");
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        sampled = Math.max(sampled, procStatus(pid, "VmRSS"));
        await Bun.sleep(5);
      }
    })();

    const t0 = performance.now();
    let pending = 8;
    const bombs = Array.from({ length: 8 }, (_, i) =>
      send(hostile, kinds[i % 2], true).then(async (r) => {
        const outcome = { kind: i % 2, status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.text(), ms: Math.round(performance.now() - t0) };
        pending--;
        return outcome;
      }),
    );
    // Small exports all through the attack, from another project and from the attacker's own token,
    // and once more after it (nothing was left queued behind the refusals).
    const smalls: Array<{ status: number; ms: number }> = [];
    for (let i = 0; pending > 0 || i < 2; i++) {
      smalls.push(await timed(i % 2 === 0 ? calm : hostile, `sent during the attack ${i}`));
      await Bun.sleep(100);
    }
    const outcomes = await Promise.all(bombs);
    smalls.push(await timed(calm, "after the attack"));
    await Bun.sleep(200);
    sampling = false;
    await sampler;
    const peak = Math.max(sampled, procStatus(pid, "VmHWM"));

    console.log(`nesting attack: peak RSS ${(peak / MiB).toFixed(0)} MiB; ${smalls.length} small exports answered ${[...new Set(smalls.map((r) => r.status))].join(",")} in at most ${Math.max(...smalls.map((r) => r.ms))} ms; bombs ${outcomes.map((o) => `${o.status} at ${o.ms} ms`).join(", ")}`);
    expect(peak).toBeLessThan(384 * MiB);
    for (const r of smalls) {
      expect(r.status).toBe(200);
      expect(r.ms).toBeLessThan(1000);
    }
    // Each is refused: 400 naming what is wrong (not an object; nested too deep), or 429 with Retry-After while its token's decode slots are taken.
    for (const o of outcomes) {
      expect([400, 429]).toContain(o.status);
      if (o.status === 429) expect(o.retryAfter).not.toBeNull();
      else expect(JSON.parse(o.body).message).toContain(o.kind === 0 ? "is not a JSON object" : "nested deeper than");
    }
    expect(outcomes.some((o) => o.status === 400)).toBe(true);
  }, 120_000);
});
