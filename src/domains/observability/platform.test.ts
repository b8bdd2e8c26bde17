/**
 * Platform telemetry: the lines ops writes for a project (job runs today) land in the same store
 * as the services' OTLP lines — one search finds both — scrubbed like ingest, while the job-run
 * log route keeps its own copy.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { appendPlatformLogs } from "./service";
import { existingWriter } from "./writer";

let t: TestApp;
let p: ProjectCtx;

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
});
afterAll(() => t.close());

const logs = async (query: string) => expectStatus(await t.request("GET", `/api/v1/obs/logs?project=${p.slug}&${query}`, { token: p.owner.session }), 200);

describe("job-run lines in the log store", () => {
  test("a run's lines are searchable by the job's name, with its run in the target and its levels", async () => {
    await expectStatus(await p.req("PUT", "/resources/job/nightly", { spec: { command: "echo backing up user ops@example.com; echo disk almost full >&2; exit 2" } }), 201);
    const run = await expectStatus(await p.req("POST", "/resources/job/nightly/run"), 202);
    await t.core.scheduler.runDue();
    await existingWriter(t.core)?.flush();

    const all = await logs("service=nightly&limit=10");
    // The run's limits: line (decision 0505) says what this host enforces; the rest is the run's.
    expect(all.filter((e: { message: string }) => e.message.startsWith("limits: ")).length).toBe(1);
    const entries = all.filter((e: { message: string }) => !e.message.startsWith("limits: "));
    expect(entries.map((e: { message: string }) => e.message)).toEqual(["exit code 2", "disk almost full", "backing up user [email]", `run ${run.id} started (manual; timeout 3600s)`]);
    expect(entries.map((e: { level: string }) => e.level)).toEqual(["error", "warn", "info", "info"]);
    expect(entries[0]).toMatchObject({ service: "nightly", environment: "production", target: `ops.job-run/${run.id}`, host: "ops", project: p.slug });
    expect((await logs(`q=ops.job-run/${run.id}`)).length).toBe(5);
    expect(await expectStatus(await t.request("GET", "/api/v1/obs/services", { token: p.owner.session }), 200)).toContain("nightly");

    // The job-run route still serves its own copy, unscrubbed (its values of secret variables are masked there).
    const own = await expectStatus(await p.req("GET", `/resources/job/nightly/runs/${run.id}/log`), 200);
    expect(own.lines.map((l: { line: string }) => l.line)).toContain("backing up user ops@example.com");
  });

  test("appendPlatformLogs scrubs, skips lines past the retention, and dates future lines now", async () => {
    const project = t.core.access.findProject(p.slug)!;
    const now = t.clock.now();
    await appendPlatformLogs(t.core, [
      { project: project.id, environment: "staging", service: "web", level: "info", message: "build step: Authorization: Bearer abcdefghijklmnopqrstuvwxyz", target: "ops.build/1", timestamp: now - 1000 },
      { project: project.id, environment: "staging", service: "web", level: "warn", message: "too old", target: "ops.build/1", timestamp: now - 30 * 86_400_000 },
      { project: project.id, environment: "staging", service: "web", level: "error", message: "from the future", target: "ops.build/1", timestamp: now + 86_400_000 },
    ]);
    const entries = await logs("service=web&environment=staging");
    expect(entries.map((e: { message: string }) => e.message)).toEqual(["from the future", "build step: Authorization: Bearer [redacted]"]);
    expect(Date.parse(entries[0].timestamp)).toBe(now);
  });

  test("a private key a replica prints line by line is masked through its END line, also across batches; other streams are not affected", async () => {
    const project = t.core.access.findProject(p.slug)!;
    const now = t.clock.now();
    const pem = (generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }) as string).trimEnd().split("\n");
    const line = (message: string, i: number, host = "web-1") => ({ project: project.id, environment: "production", service: "keyprint", level: "info" as const, message, target: "stdout", timestamp: now - 500 + i, host });
    const lines = ["writing the key", ...pem, "key written"];
    // Two batches, split inside the key, and a line of another replica in between.
    await appendPlatformLogs(t.core, lines.slice(0, 3).map((m, i) => line(m, i)));
    await appendPlatformLogs(t.core, [line(pem[2], 10, "web-2"), ...lines.slice(3).map((m, i) => line(m, 20 + i))]);
    await existingWriter(t.core)?.flush();
    const entries = (await logs("service=keyprint&limit=50")) as Array<{ message: string; host: string }>;
    const web1 = entries.filter((e) => e.host === "web-1").map((e) => e.message).reverse();
    expect(web1[0]).toBe("writing the key");
    expect(web1.at(-1)).toBe("key written");
    expect(web1.slice(1, -1).every((m) => m === "[redacted]")).toBe(true);
    // web-2 never printed a BEGIN line: its line is not a key to it (it is still stored as printed).
    expect(entries.find((e) => e.host === "web-2")!.message).toBe(pem[2]);
    for (const body of pem.slice(1, -1)) expect(web1.join("\n")).not.toContain(body);
  });
});
