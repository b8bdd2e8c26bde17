/**
 * A job run's limits (DESIGN §6 "Limits"; issue 32 items 2 and 4): a run's command is a sandbox
 * like a build step's, with the process limit (a fork probe stops at OPS_SANDBOX_PIDS), a memory
 * limit (OPS_JOB_MEMORY_MB), a disk cap on its home (OPS_BUILD_MAX_DISK_MB), a sized /tmp and
 * /dev/shm (ENOSPC past OPS_SANDBOX_TMP_MB), the rest of /dev read-only, and the seccomp filter
 * with no_new_privs; its log names each limit. Real runs through the scheduler, ops as root.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "../harness";
import { projectWithOwner, type ProjectCtx } from "../resources-helpers";
import { attachDisk, mountsUnder } from "../../src/adapters/sandbox/disk";
import { sweepJobDisks } from "../../src/domains/resources/job-limits";

const MEMORY_MB = 96;
const DISK_MB = 48;
const TMP_MB = 8;

let t: TestApp;
let p: ProjectCtx;

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_SANDBOX_PIDS: "32", OPS_SANDBOX_TMP_MB: String(TMP_MB), OPS_JOB_MEMORY_MB: String(MEMORY_MB), OPS_BUILD_MAX_DISK_MB: String(DISK_MB) } });
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

  test("holding memory past OPS_JOB_MEMORY_MB is killed, and the run says it ran out of memory", async () => {
    const { run, text } = await runToEnd("memory", `perl -e '$x = "a" x (${MEMORY_MB * 4} * 1024 * 1024); print "held ", length($x), "\\n"'`);
    expect(run.status).toBe("failed");
    expect(text).not.toContain("held ");
    expect(run.error).toBe(`ran out of memory (limit ${MEMORY_MB} MiB, OPS_JOB_MEMORY_MB)`);
  });

  test("its home is capped at OPS_BUILD_MAX_DISK_MB: writing past it fails with ENOSPC, and nothing of it stays on the data disk", async () => {
    const { run, text } = await runToEnd("disk", `head -c ${DISK_MB * 3 * 1024 * 1024} /dev/zero > big.bin || { echo "write failed"; exit 7; }`);
    expect(run.status).toBe("failed");
    expect(text).toContain("No space left on device");
    expect(text).toContain("write failed");
    expect(run.error).toContain(`its home is full: it may hold ${DISK_MB} MiB (OPS_BUILD_MAX_DISK_MB)`);
    const jobs = path.join(t.dataDir, "run", "jobs");
    expect(mountsUnder(jobs)).toEqual([]);
    expect(readdirSync(jobs)).toEqual([]);
    const disks = path.join(t.dataDir, "run", "job-disks");
    expect(existsSync(disks) ? readdirSync(disks) : []).toEqual([]);
  });

  test("/dev/shm is sized like /tmp, and nothing else under /dev can be written", async () => {
    const { run, text } = await runToEnd(
      "dev",
      [
        `head -c ${TMP_MB * 4 * 1024 * 1024} /dev/zero > /dev/shm/fill.bin || echo "shm write failed"`,
        "echo x > /dev/null && echo null=ok",
        "touch /dev/evil || echo dev refused",
        "mkdir /dev/more || echo mkdir refused",
      ].join("; "),
    );
    expect(run.status).toBe("succeeded");
    expect(text).toContain("No space left on device");
    expect(text).toContain("shm write failed");
    expect(text).toContain("null=ok");
    expect(text).toContain("dev refused");
    expect(text).toContain("mkdir refused");
  });

  test("its log names every limit it runs under, in one line", async () => {
    const { run, text } = await runToEnd("says", "true");
    expect(run.status).toBe("succeeded");
    const line = text.split("\n").find((l) => l.startsWith("limits: "));
    expect(line).toMatch(
      new RegExp(
        `^limits: memory limit ${MEMORY_MB} MiB \\(cgroup v[12]\\); process limit 32 \\(cgroup-v[12]\\); disk cap ${DISK_MB} MiB on the run's home \\(an ext4 image on a loop device\\); /tmp and /dev/shm: ${TMP_MB} MiB tmpfs each, the rest of /dev read-only; seccomp filter \\((x64|arm64)\\) and no_new_privs$`,
      ),
    );
  });

  test("the start-up sweep unmounts and removes the home and disk a stopped ops left to a run", async () => {
    const home = path.join(t.dataDir, "run", "jobs", "999");
    const image = path.join(t.dataDir, "run", "job-disks", "999.img");
    mkdirSync(home, { recursive: true });
    expect(await attachDisk(home, image, 16)).toEqual({ how: "ext4-loop", reason: null });
    expect(mountsUnder(home)).toEqual([home]);
    await sweepJobDisks(t.core);
    expect(mountsUnder(path.join(t.dataDir, "run", "jobs"))).toEqual([]);
    expect(existsSync(home)).toBe(false);
    expect(existsSync(image)).toBe(false);
  });
});
