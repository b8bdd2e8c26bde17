import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { chmodSync, existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { jobRuns } from "./tables";
import { resourcesModule } from "./index";
import { MAX_RUN_LINES } from "./job-runs";

let t: TestApp;
let p: ProjectCtx;
const TOKEN_VALUE = "tok-9f2c71b4e0d8";

beforeAll(async () => {
  t = await createTestApp();
  // A data dir only root may enter (as `ops install` makes /var/lib/ops): runs still start.
  chmodSync(t.dataDir, 0o700);
  p = await projectWithOwner(t);
  await expectStatus(await p.req("POST", "/resources/secret-group", { name: "jobs-env", spec: { variables: [] } }), 201);
  await expectStatus(await p.req("PUT", "/resources/secret-group/jobs-env/variables/API_TOKEN", { value: TOKEN_VALUE }), 200);
  await expectStatus(await p.req("PUT", "/resources/secret-group/jobs-env/variables/REGION", { value: "eu-west", kind: "text" }), 200);
});
afterAll(() => t.close());

async function runToEnd(job: string, spec: Record<string, unknown>) {
  await expectStatus(await p.req("PUT", `/resources/job/${job}`, { spec }), 201);
  const run = await expectStatus(await p.req("POST", `/resources/job/${job}/run`), 202);
  await t.core.scheduler.runDue();
  return expectStatus(await p.req("GET", `/resources/job/${job}/runs`), 200).then((runs) => runs.find((r: { id: number }) => r.id === run.id));
}

describe("POST …/resources/job/{name}/run", () => {
  test("202 queued; 409 while it is queued; the run executes with the group's values as environment", async () => {
    await expectStatus(await p.req("PUT", "/resources/job/env-check", { spec: { command: 'test "$API_TOKEN" = "' + TOKEN_VALUE + '" && echo "token ok, region $REGION, token $API_TOKEN"; echo "job=$OPS_JOB"; env | grep -c OPS_SECRETS_KEY || true', env_group: "jobs-env" } }), 201);
    const run = await expectStatus(await p.req("POST", "/resources/job/env-check/run"), 202);
    expect(run).toMatchObject({ status: "queued", trigger: "manual", requested_by: p.owner.email, job: "env-check", environment: "production", lines: 0, started_at: null });
    const busy = await expectStatus(await p.req("POST", "/resources/job/env-check/run"), 409);
    expect(busy.details.run).toBe(run.id);
    const log = await expectStatus(await p.req("GET", `/resources/job/env-check/runs/${run.id}/log`), 200);
    expect(log).toEqual({ lines: [], live: true, next: 0 });
    await t.core.scheduler.runDue();
    const done = await expectStatus(await p.req("GET", `/resources/job/env-check/runs/${run.id}/log`), 200);
    expect(done.live).toBe(false);
    const text = done.lines.map((l: { line: string }) => l.line);
    expect(text).toContain("token ok, region eu-west, token ***");
    expect(text).toContain("job=env-check");
    expect(text).toContain("0");
    const runs = await expectStatus(await p.req("GET", "/resources/job/env-check/runs"), 200);
    expect(runs[0]).toMatchObject({ id: run.id, status: "succeeded", exit_code: 0, error: null, duration_secs: 0 });
    await expectStatus(await p.req("POST", "/resources/job/env-check/run"), 202);
  });
  test("exit code ≠ 0 is failed; stderr arrives as warn", async () => {
    const run = await runToEnd("fails", { command: "echo out; echo oops >&2; exit 3" });
    expect(run).toMatchObject({ status: "failed", exit_code: 3, error: "exit code 3" });
    const log = await expectStatus(await p.req("GET", `/resources/job/fails/runs/${run.id}/log`), 200);
    expect(log.lines.map((l: { level: string; line: string }) => [l.level, l.line])).toEqual([
      ["info", `run ${run.id} started (manual; timeout 3600s)`],
      ["info", expect.stringMatching(/^limits: memory limit 2048 MiB /)],
      ["info", "out"],
      ["warn", "oops"],
      ["error", "exit code 3"],
    ]);
  });
  test("a timeout stops the command and everything it started", async () => {
    const run = await runToEnd("slow", { command: "echo start; sleep 30 & sleep 30; echo never", timeout_secs: 1 });
    expect(run).toMatchObject({ status: "failed", error: "timed out after 1s", exit_code: null });
  });
  test("the working directory is the run's home in its sandbox, kept under the data dir's run/jobs and removed afterwards", async () => {
    const run = await runToEnd("where", { command: `pwd; touch scratch-file; ls; test -e ${JSON.stringify(t.dataDir)} && echo data-dir-visible || echo no-data-dir` });
    const log = await expectStatus(await p.req("GET", `/resources/job/where/runs/${run.id}/log`), 200);
    expect(log.lines.slice(2, 5).map((l: { line: string }) => l.line)).toEqual(["/home/job", "scratch-file", "no-data-dir"]);
    expect(existsSync(path.join(t.dataDir, "run", "jobs", String(run.id)))).toBe(false);
    expect(readdirSync(path.join(t.dataDir, "run", "jobs"))).toEqual([]);
  });
  test("404 unknown job; 401; 403 for a viewer (no jobs.run)", async () => {
    await expectStatus(await p.req("POST", "/resources/job/nope/run"), 404);
    await expectStatus(await t.request("POST", `${p.base}/resources/job/fails/run`), 401);
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    await expectStatus(await p.req("POST", "/resources/job/fails/run", undefined, viewer.session), 403);
  });
});

describe("GET …/resources/job/{name}/runs and …/runs/{id}/log", () => {
  test("runs: newest first, limit; 404; 422 limit out of bounds", async () => {
    await expectStatus(await p.req("PUT", "/resources/job/many", { spec: { command: "true" } }), 201);
    for (let i = 0; i < 3; i++) {
      await expectStatus(await p.req("POST", "/resources/job/many/run"), 202);
      await t.core.scheduler.runDue();
    }
    const runs = await expectStatus<Array<{ id: number }>>(await p.req("GET", "/resources/job/many/runs"), 200);
    expect(runs.length).toBe(3);
    expect(runs.map((r) => r.id)).toEqual([...runs.map((r) => r.id)].sort((a, b) => b - a));
    expect((await expectStatus(await p.req("GET", "/resources/job/many/runs?limit=2"), 200)).length).toBe(2);
    await expectStatus(await p.req("GET", "/resources/job/nope/runs"), 404);
    await expectStatus(await p.req("GET", "/resources/job/many/runs?limit=0"), 422);
    await expectStatus(await p.req("GET", "/resources/job/many/runs?limit=501"), 422);
  });
  test("log pages with after/limit; next is the last sequence, or the given after when nothing new", async () => {
    const run = await runToEnd("lines", { command: "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; done" });
    expect(run.lines).toBe(13);
    const a = await expectStatus(await p.req("GET", `/resources/job/lines/runs/${run.id}/log?limit=5`), 200);
    expect(a.lines.map((l: { seq: number }) => l.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(a.next).toBe(5);
    const b = await expectStatus(await p.req("GET", `/resources/job/lines/runs/${run.id}/log?after=${a.next}&limit=5`), 200);
    expect(b.lines.map((l: { line: string }) => l.line)).toEqual(["line 4", "line 5", "line 6", "line 7", "line 8"]);
    const c = await expectStatus(await p.req("GET", `/resources/job/lines/runs/${run.id}/log?after=${b.next}`), 200);
    expect(c.lines.map((l: { seq: number }) => l.seq)).toEqual([11, 12, 13]);
    const d = await expectStatus(await p.req("GET", `/resources/job/lines/runs/${run.id}/log?after=${c.next}`), 200);
    expect(d).toEqual({ lines: [], live: false, next: 13 });
  });
  test("log: 404 unknown run or job; 422 limit out of bounds", async () => {
    await expectStatus(await p.req("GET", "/resources/job/lines/runs/99999/log"), 404);
    await expectStatus(await p.req("GET", "/resources/job/nope/runs/1/log"), 404);
    await expectStatus(await p.req("GET", "/resources/job/lines/runs/1/log?limit=5001"), 422);
  });
  test(`a run keeps at most ${MAX_RUN_LINES} lines and says how many it dropped`, async () => {
    const run = await runToEnd("chatty", { command: `seq 1 ${MAX_RUN_LINES + 50}` });
    expect(run.lines).toBe(MAX_RUN_LINES + 1);
    const tail = await expectStatus(await p.req("GET", `/resources/job/chatty/runs/${run.id}/log?after=${MAX_RUN_LINES - 1}`), 200);
    expect(tail.lines.map((l: { line: string }) => l.line)).toEqual([String(MAX_RUN_LINES - 2), `53 more lines not kept (a run keeps ${MAX_RUN_LINES})`]);
  });
});

describe("scheduled runs", () => {
  test("a job's cron queues runs through the scheduler as the clock moves (no sleeping)", async () => {
    const start = t.clock.now();
    await expectStatus(await p.req("PUT", "/resources/job/every-ten", { spec: { command: "echo tick", schedule: "*/10 * * * *" } }), 201);
    const next = Math.ceil((start + 1) / 600_000) * 600_000;
    t.clock.set(next - 1000);
    await t.core.scheduler.runDue();
    expect(await expectStatus(await p.req("GET", "/resources/job/every-ten/runs"), 200)).toEqual([]);
    t.clock.set(next);
    await t.core.scheduler.runDue();
    const runs = await expectStatus(await p.req("GET", "/resources/job/every-ten/runs"), 200);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ trigger: "schedule", requested_by: "scheduler", status: "succeeded", queued_at: new Date(next).toISOString() });
    t.clock.set(next + 5 * 60_000);
    await t.core.scheduler.runDue();
    expect(await expectStatus(await p.req("GET", "/resources/job/every-ten/runs"), 200)).toHaveLength(1);
    t.clock.set(next + 10 * 60_000);
    await t.core.scheduler.runDue();
    expect(await expectStatus(await p.req("GET", "/resources/job/every-ten/runs"), 200)).toHaveLength(2);
    // Manual only from now on: no more scheduled runs.
    await expectStatus(await p.req("PUT", "/resources/job/every-ten", { spec: { command: "echo tick", schedule: null } }), 200);
    t.clock.set(next + 30 * 60_000);
    await t.core.scheduler.runDue();
    expect(await expectStatus(await p.req("GET", "/resources/job/every-ten/runs"), 200)).toHaveLength(2);
  });
});

describe("a server stop in the middle of a run leaves a consistent record", () => {
  test("a crash: at start-up the run left running is marked failed with the reason, and never run twice", async () => {
    const dir = tempDir();
    try {
      const a = await createTestApp({ dataDir: dir });
      const q = await projectWithOwner(a);
      await expectStatus(await q.req("PUT", "/resources/job/crashy", { spec: { command: "echo should-not-run-twice" } }), 201);
      const run = await expectStatus(await q.req("POST", "/resources/job/crashy/run"), 202);
      // What a process that died mid-run leaves behind: the run marked running, the child gone.
      a.core.db.update(jobRuns).set({ status: "running", startedAt: a.clock.now() }).where(eq(jobRuns.id, run.id)).run();
      await a.close();

      const b = await createTestApp({ dataDir: dir });
      await resourcesModule.onServe!(b.core);
      await b.core.scheduler.runDue();
      const owner = q.owner.session;
      const runs = await expectStatus(await b.request("GET", `${q.base}/resources/job/crashy/runs`, { token: owner }), 200);
      expect(runs[0]).toMatchObject({ id: run.id, status: "failed", error: "interrupted: ops stopped while the run was in flight (found at start-up)" });
      expect(runs[0].finished_at).not.toBeNull();
      const log = await expectStatus(await b.request("GET", `${q.base}/resources/job/crashy/runs/${run.id}/log`, { token: owner }), 200);
      expect(log.lines.map((l: { line: string }) => l.line)).not.toContain("should-not-run-twice");
      expect(log.live).toBe(false);
      await expectStatus(await b.request("POST", `${q.base}/resources/job/crashy/run`, { token: owner }), 202);
      await b.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("a graceful stop ends the child and records the run as failed", async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    try {
      const a = await createTestApp({ dataDir: dir, env: { OPS_SHUTDOWN_GRACE_MS: "2000" } });
      const q = await projectWithOwner(a);
      await expectStatus(await q.req("PUT", "/resources/job/long", { spec: { command: "echo begun; sleep 60" } }), 201);
      const run = await expectStatus(await q.req("POST", "/resources/job/long/run"), 202);
      const pending = a.core.scheduler.runDue();
      expect(a.core.db.select().from(jobRuns).where(eq(jobRuns.id, run.id)).get()?.status).toBe("running");
      await a.close();
      await pending.catch(() => {});
      const b = await createTestApp({ dataDir: dir });
      const runs = await expectStatus(await b.request("GET", `${q.base}/resources/job/long/runs`, { token: q.owner.session }), 200);
      expect(runs[0]).toMatchObject({ id: run.id, status: "failed", error: "ops shut down during the run" });
      await b.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
