/**
 * A job run's limits (DESIGN §6 "Limits"): a run's command is a sandbox like a build step's, with
 * the process limit (a fork probe stops at OPS_SANDBOX_PIDS), a sized /tmp (ENOSPC past
 * OPS_SANDBOX_TMP_MB) and the seccomp filter with no_new_privs. Real runs through the scheduler,
 * ops as root.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync } from "node:fs";
import { createTestApp, expectStatus, type TestApp } from "../harness";
import { projectWithOwner, type ProjectCtx } from "../resources-helpers";

let t: TestApp;
let p: ProjectCtx;

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_SANDBOX_PIDS: "32", OPS_SANDBOX_TMP_MB: "8" } });
  chmodSync(t.dataDir, 0o755);
  p = await projectWithOwner(t);
});
afterAll(() => t?.close());

async function runToEnd(job: string, command: string): Promise<{ run: { status: string; error: string | null }; text: string }> {
  await expectStatus(await p.req("PUT", `/resources/job/${job}`, { spec: { command } }), 201);
  const queued = await expectStatus(await p.req("POST", `/resources/job/${job}/run`), 202);
  await t.core.scheduler.runDue();
  const runs = await expectStatus<Array<{ id: number; status: string; error: string | null }>>(await p.req("GET", `/resources/job/${job}/runs`), 200);
  const log = await expectStatus<{ lines: Array<{ line: string }> }>(await p.req("GET", `/resources/job/${job}/runs/${queued.id}/log`), 200);
  return { run: runs.find((r) => r.id === queued.id)!, text: log.lines.map((l) => l.line).join("\n") };
}

describe("a job run", () => {
  test("a fork probe stops at the process limit", async () => {
    const { run, text } = await runToEnd("forks", "n=0; while [ $n -lt 500 ]; do sleep 30 & n=$((n+1)); done; echo started $n");
    expect(run.status).toBe("failed");
    expect(text).toContain("Cannot fork");
    expect(text).not.toContain("started 500");
  });

  test("its /tmp is sized: writing past it fails with ENOSPC", async () => {
    const { run, text } = await runToEnd("tmp", "head -c 33554432 /dev/zero > /tmp/fill.bin");
    expect(run.status).toBe("failed");
    expect(text).toContain("No space left on device");
  });

  test("it runs with no_new_privs under the seccomp filter", async () => {
    const { run, text } = await runToEnd("seccomp", "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; unshare -r true || echo refused");
    expect(run.status).toBe("succeeded");
    expect(text).toMatch(/NoNewPrivs:\s+1/);
    expect(text).toMatch(/Seccomp:\s+2/);
    expect(text).toContain("refused");
  });
});
