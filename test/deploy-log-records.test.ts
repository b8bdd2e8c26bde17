/**
 * A stack trace a replica prints is one record in the log store, in order: a Node app whose start
 * throws (the uncaught error and its frames) and one that prints a Python-style traceback line by line. The ring keeps the lines
 * one by one; the store, what Logs and `ops logs` read, has one record per trace, its first line
 * first, beside the app's other lines. The failed rollout keeps what its replica printed last
 * (secrets masked) on its timeline row.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject } from "./fixtures";
import { pushApp } from "./deploy-fixtures";
import { flushServiceLogs } from "../src/domains/deployments/logs";
import { existingWriter } from "../src/domains/observability/writer";
import { runCli } from "../src/main";
import { call, connectHttp } from "./mcp-fixtures";

let t: TestApp;
let slug: string;
let session: string;
const req = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/${slug}${p}`, { token: session, body });

/** The service's records in the store, once one of them is `last` (a replica's output may arrive after its exit is known). */
async function stored(service: string, last: (message: string) => boolean): Promise<Array<{ message: string; host: string; environment: string }>> {
  for (const until = Date.now() + 10_000; ; await Bun.sleep(100)) {
    await flushServiceLogs(t.core);
    await existingWriter(t.core)?.flush();
    const rows = await expectStatus<Array<{ message: string; host: string; environment: string }>>(await t.request("GET", `/api/v1/obs/logs?project=${slug}&service=${service}&environment=production&limit=500`, { token: session }), 200);
    if (rows.some((r) => last(r.message)) || Date.now() > until) return rows;
  }
}

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "4" } });
  slug = makeProject(t).slug;
  session = (await makePerson(t, [{ role: "owner", project: slug }])).session;
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe("a stack trace is one record", () => {
  test("a Node app that throws at start: the store holds the error with its frames in order, once", async () => {
    await expectStatus(await req("POST", "/resources/service", { name: "crash", spec: { image: `${slug}/crash`, health_check_path: "/healthz" } }), 201);
    await expectStatus(await req("PUT", "/secrets/crash/API_TOKEN", { value: "tok-crash-5e6f7a8b9c" }), 204);
    const digest = await pushApp(t, slug, "crash", { version: "v1", start: `echo booting with $API_TOKEN; node -e 'function connect() { throw new Error("DATABASE_URL is not set") } connect()'` });
    await expectStatus(await req("POST", "/resources/service/crash/deploy", { digest }), 201);
    await t.core.scheduler.runDue();
    // The reason where the failure is shown: the timeline row keeps what the replica printed last, masked.
    const [row] = await expectStatus<any[]>(await req("GET", "/deployments?service=crash"), 200);
    expect(row).toMatchObject({ state: "rolled_back", failure_kind: "health" });
    const output = row.deployment.failure_output as Array<{ process: string; lines: string[] }>;
    expect(output.length).toBeGreaterThan(0);
    expect(output[0]!.process).toStartWith(`${slug}.production.crash.${row.deployment.id}-`);
    expect(output[0]!.lines).toContain("booting with ***");
    expect(output[0]!.lines.some((l) => l.startsWith("Error: DATABASE_URL is not set"))).toBe(true);
    expect(JSON.stringify(row)).not.toContain("tok-crash-5e6f7a8b9c");
    const rows = await stored("crash", (m) => m.startsWith("Error: DATABASE_URL is not set") && m.includes("at connect"));
    const traces = rows.filter((r) => r.message.includes("DATABASE_URL is not set") && r.message.includes("at connect"));
    expect(traces.length).toBeGreaterThan(0);
    const trace = traces[0]!.message.split("\n");
    expect(trace.findIndex((l) => l.startsWith("Error: DATABASE_URL is not set"))).toBe(0);
    expect(trace[1]).toMatch(/^ {4}at connect \(/);
    // No frame stored on its own.
    expect(rows.filter((r) => /^\s+at /.test(r.message))).toEqual([]);
    expect(rows.some((r) => r.message === "booting with ***")).toBe(true);
    expect(traces[0]!.environment).toBe("production");
    expect(traces[0]!.host).toMatch(new RegExp(`^${slug}\\.production\\.crash\\.`));
  }, 90_000);

  test("ops deploy of a crashing version prints what the replica printed last, masked, and exits 1", async () => {
    const digest = await pushApp(t, slug, "crash", { version: "v2", start: `echo v2 booting with $API_TOKEN; node -e 'throw new Error("REDIS_URL is not set")'` });
    const home = tempDir("ops-cli-home-");
    let out = "";
    let err = "";
    const ended: { code: number | null } = { code: null };
    const run = runCli(["deploy", "crash", "--digest", digest, "--project", slug], { stdout: (x) => void (out += x), stderr: (x) => void (err += x), env: { HOME: home, OPS_SERVER: t.url, OPS_TOKEN: session }, cwd: home }).then((c) => (ended.code = c));
    // The test app's scheduler runs only when asked: run it while the CLI follows the rollout.
    while (ended.code === null) {
      await t.core.scheduler.runDue();
      await Bun.sleep(100);
    }
    await run;
    expect(ended.code).toBe(1);
    expect(out).toMatch(/^\d+ rolled_back\n$/);
    expect(err).toContain(`.production.crash.`);
    expect(err).toContain("printed last:");
    expect(err).toContain("  | v2 booting with ***");
    expect(err).toMatch(/ {2}\| Error: REDIS_URL is not set/);
    expect(err).not.toContain("tok-crash-5e6f7a8b9c");
    expect(err).toContain(`all its lines: ops logs crash --project ${slug} --environment production`);
    // The MCP timeline tool says it too: its text names what the failed replica printed.
    const client = await connectHttp(t, session);
    try {
      const r = await call(client, "timeline", { project: slug, service: "crash" });
      const text = r.content.map((c) => c.text).join(" ");
      expect(text).toContain("printed: Error: REDIS_URL is not set");
      expect(text).not.toContain("tok-crash-5e6f7a8b9c");
      expect(JSON.stringify(r.structuredContent)).toContain("v2 booting with ***");
    } finally {
      await client.close();
    }
  }, 90_000);

  test("a traceback printed line by line, with pauses: one record ending at its exception line", async () => {
    const py = 'echo "Traceback (most recent call last):"; sleep 0.02; echo "  File \\"/app/main.py\\", line 3, in <module>"; sleep 0.02; echo "    main()"; sleep 0.02; echo "ValueError: boom"; echo "after the trace"';
    await expectStatus(await req("POST", "/resources/service", { name: "py", spec: { image: `${slug}/py`, health_check_path: "/healthz" } }), 201);
    const digest = await pushApp(t, slug, "py", { version: "v1", start: `${py}; exit 3` });
    await expectStatus(await req("POST", "/resources/service/py/deploy", { digest }), 201);
    await t.core.scheduler.runDue();
    const rows = (await stored("py", (m) => m === "after the trace")).map((r) => r.message);
    expect(rows).toContain('Traceback (most recent call last):\n  File "/app/main.py", line 3, in <module>\n    main()\nValueError: boom');
    expect(rows).toContain("after the trace");
    expect(rows).not.toContain("ValueError: boom");
  }, 90_000);
});
