/**
 * The process runtime masks a replica's secret values (`masked` in its spec: its env group's
 * secret values and its unit's secrets) in the output it hands over, in the forms build logs mask
 * (plain, base64, hex, percent-encoded, split by an escape): from a running replica, from the same
 * replica after `ops restart` handed it over and the next runtime adopted it, and from a one-off
 * command (a release step), whose tail (the failure message) too. Real sandboxed processes of the
 * test image.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, type TestApp } from "./harness";
import { prepareTestImage, until, type PreparedImage } from "./runtime-fixtures";
import { expectMasked, printCommand } from "./support/secret-printer";
import { createProcessRuntime } from "../src/adapters/runtime/process-runtime";
import type { HandingOverRuntime, OutputStream, ReplicaSpec } from "../src/adapters/runtime/types";

const API_KEY = "rt-api-key-5e4d3c2b1a09";
const UNIT_TOKEN = "unit tok/en+7&x=é";
const env: Array<[string, string]> = [
  ["API_KEY", API_KEY],
  ["UNIT_TOKEN", UNIT_TOKEN],
  ["REGION", "eu-west-1"],
];

let t: TestApp;
let prepared: PreparedImage;
const runtimes: HandingOverRuntime[] = [];
const lines: Array<{ id: string; stream: OutputStream; line: string }> = [];
const runtime = () => {
  const r = createProcessRuntime({ onLine: (id, stream, line) => lines.push({ id, stream, line }), graceMs: 1000 });
  runtimes.push(r);
  return r;
};
const linesOf = (id: string) => lines.filter((l) => l.id === id).map((l) => l.line);

beforeAll(async () => {
  t = await createTestApp();
  prepared = await prepareTestImage(t);
}, 120_000);
afterAll(async () => {
  for (const r of runtimes) await r.stopAll(500);
  await t?.close();
}, 60_000);

describe("replica output", () => {
  test("a replica's secret values are masked in every form; a variable that is not secret is not; so after a hand-over", async () => {
    const first = runtime();
    const spec: ReplicaSpec = { id: "shop.production.web.1-1", image: prepared.image, command: printCommand("replica", ["API_KEY", "UNIT_TOKEN", "REGION"], { loop: true }), env, masked: [API_KEY, UNIT_TOKEN], labels: { service: "web" } };
    await first.start(spec);
    await until("two rounds of output", () => linesOf(spec.id).some((l) => l === "replica 1 done"));
    expectMasked(linesOf(spec.id), "replica 0", { API_KEY, UNIT_TOKEN }, { REGION: "eu-west-1" });

    // `ops restart`: the next image adopts the running replica and reads on from its pipes.
    const handed = first.handOver();
    expect(handed.replicas.map((r) => r.spec.id)).toEqual([spec.id]);
    const next = runtime();
    expect(next.adopt(handed.replicas)).toEqual([{ id: spec.id, adopted: true, reason: null }]);
    const before = linesOf(spec.id).length;
    await until("output after the adoption", () => linesOf(spec.id).slice(before).filter((l) => l.endsWith(" done")).length >= 2);
    const after = linesOf(spec.id).slice(before);
    const round = after.find((l) => l.endsWith(" done"))!.replace(/ done$/, "");
    expectMasked(after, round, { API_KEY, UNIT_TOKEN }, { REGION: "eu-west-1" });
    await next.stop(spec.id, 500);
  }, 90_000);
});

describe("one-off commands (release steps)", () => {
  test("their output and the tail a failure message quotes are masked", async () => {
    const r = runtime();
    const id = "shop.production.web.1-migrate";
    const res = await r.run({ id, image: prepared.image, command: `${printCommand("release", ["API_KEY", "UNIT_TOKEN"])}; printf '%s\\n' "$API_KEY" >&2; exit 4`, env, masked: [API_KEY, UNIT_TOKEN], timeoutMs: 60_000 });
    expect(res.code).toBe(4);
    expectMasked(linesOf(id), "release", { API_KEY, UNIT_TOKEN });
    expect(res.tail.at(-1)).toBe("***");
    expect(res.tail.join("\n")).not.toContain(API_KEY);
  }, 90_000);
});
