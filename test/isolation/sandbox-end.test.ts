/**
 * A sandbox's end (DESIGN §6; issue 40): a build step, job run, release step or replica is
 * reported ended only once every process of its sandbox is gone. The hostile command leaves
 * processes behind in sessions of their own, holding none of its output pipes: the kill of the
 * command's process group misses them and its output ends without them, so only the teardown of
 * the sandbox's pid namespace (which the kernel does after ops saw the command exit) and ops's
 * own kill of the sandbox's cgroup end them. Each case looks for them at the moment of the report
 * (the replica's state hook, the run's resolution, the job run's row), by a marker on their
 * command line that nothing else on the host carries. Real sandboxes, ops as root.
 *
 * A process the kernel will not let die (held in uninterruptible sleep, as a hung disk holds one)
 * cannot be waited for forever: past the bound (5 s) the run ends failed, saying what is left,
 * never reported as a success with its sandbox still alive.
 *
 * `OPS_ISOLATION_REPEAT=N` runs every case N times (the fork-bomb suite in limits-build.test.ts
 * reads it too), to show the barrier holds under load rather than by luck.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, existsSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../harness";
import { projectWithOwner, type ProjectCtx } from "../resources-helpers";
import { prepareTestImage, until, type PreparedImage } from "../runtime-fixtures";
import { freezerMissing, holdInKernel, processesRunning } from "../support/host-processes";
import { createProcessRuntime } from "../../src/adapters/runtime/process-runtime";
import { runNativeBuild } from "../../src/adapters/builder/native";
import { jobRuns } from "../../src/domains/resources/tables";
import type { HandingOverRuntime, ReplicaStatus } from "../../src/adapters/runtime/types";

const REPEAT = Math.max(1, Number(process.env.OPS_ISOLATION_REPEAT ?? 1));
const PIDS = 64;
const LEFT = 40;

let t: TestApp;
let p: ProjectCtx;
let prepared: PreparedImage;
let runtime: HandingOverRuntime;
const states: ReplicaStatus[] = [];
const notes: Array<{ id: string; line: string }> = [];
/** Called with every state the runtime reports, at the moment it reports it. */
let onState: (s: ReplicaStatus) => void = () => {};

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_SANDBOX_PIDS: String(PIDS) } });
  chmodSync(t.dataDir, 0o755);
  p = await projectWithOwner(t);
  prepared = await prepareTestImage(t);
  runtime = createProcessRuntime({ limits: { memoryMb: 256, pids: PIDS, tmpMb: 16 }, graceMs: 500, onState: (s) => (states.push(s), onState(s)), onLine: (id, stream, line) => stream === "ops" && notes.push({ id, line }) });
}, 120_000);

afterAll(async () => {
  await runtime?.stopAll(200);
  await t?.close();
}, 60_000);

/** A number no other process on the host has on its command line: `sleep <marker>` is ours. */
const newMarker = () => String(3_000_000 + Math.floor(Math.random() * 6_000_000));

/** `LEFT` processes, each in a session of its own with no output pipe, that would sleep for weeks. */
const leaveBehind = (marker: string) => `i=0; while [ $i -lt ${LEFT} ]; do setsid sleep ${marker} </dev/null >/dev/null 2>&1 & i=$((i+1)); done; echo left $i`;

/** Live processes running `sleep <marker>`. */
const leftOver = (marker: string) => processesRunning(["sleep", marker]);

const rounds = Array.from({ length: REPEAT }, (_, i) => (REPEAT > 1 ? ` (round ${i + 1} of ${REPEAT})` : ""));

describe("nothing of a sandbox outlives the report of its end", () => {
  for (const round of rounds) {
    test(`a job run is recorded ended only once its processes are gone${round}`, async () => {
      const marker = newMarker();
      const job = `leaves-${marker}`;
      await expectStatus(await p.req("PUT", `/resources/job/${job}`, { spec: { command: `${leaveBehind(marker)}; sleep 0.2` } }), 201);
      const queued = await expectStatus<{ id: number }>(await p.req("POST", `/resources/job/${job}/run`), 202);
      let atRecord: number[] | null = null;
      // The row is read between the run's own awaits: the first turn that sees it ended is the report.
      const watch = setInterval(() => {
        if (atRecord !== null) return;
        const row = t.core.db.select({ status: jobRuns.status }).from(jobRuns).where(eq(jobRuns.id, queued.id)).get();
        if (row && row.status !== "queued" && row.status !== "running") atRecord = leftOver(marker);
      }, 1);
      try {
        await t.core.scheduler.runDue();
      } finally {
        clearInterval(watch);
      }
      const run = t.core.db.select().from(jobRuns).where(eq(jobRuns.id, queued.id)).get()!;
      expect(run.status).toBe("succeeded");
      expect(atRecord ?? leftOver(marker)).toEqual([]);
    });

    test(`a release step (a one-off run) returns only once its processes are gone${round}`, async () => {
      const marker = newMarker();
      const res = await runtime.run({ id: `release-${marker}`, image: prepared.image, command: leaveBehind(marker), timeoutMs: 30_000 });
      const atReturn = leftOver(marker);
      expect(res.code).toBe(0);
      expect(res.tail).toContain(`left ${LEFT}`);
      expect(atReturn).toEqual([]);
    });

    test(`a replica that exits is reported crashed only once its processes are gone${round}`, async () => {
      const marker = newMarker();
      const id = `crash-${marker}`;
      let atCrash: number[] | null = null;
      onState = (s) => {
        if (s.id === id && s.state === "crashed" && atCrash === null) atCrash = leftOver(marker);
      };
      await runtime.start({ id, image: prepared.image, command: `${leaveBehind(marker)}; sleep 0.2; exit 3`, restart: { initialMs: 60_000, maxMs: 60_000, resetAfterMs: 60_000 } });
      try {
        for (let i = 0; i < 600 && atCrash === null; i++) await Bun.sleep(50);
      } finally {
        onState = () => {};
        await runtime.stop(id, 200);
      }
      expect(atCrash).not.toBeNull();
      expect(atCrash!).toEqual([]);
    });

    test(`a replica that is stopped is reported stopped only once its processes are gone${round}`, async () => {
      const marker = newMarker();
      const id = `stop-${marker}`;
      let atStop: number[] | null = null;
      onState = (s) => {
        if (s.id === id && s.state === "stopped" && atStop === null) atStop = leftOver(marker);
      };
      await runtime.start({ id, image: prepared.image, command: `${leaveBehind(marker)}; exec sleep 1000` });
      try {
        for (let i = 0; i < 600 && leftOver(marker).length < LEFT; i++) await Bun.sleep(50);
        expect(leftOver(marker).length).toBe(LEFT);
        await runtime.stop(id, 200);
      } finally {
        onState = () => {};
      }
      expect(atStop).not.toBeNull();
      expect(atStop!).toEqual([]);
    });

    test(`a build step returns its verdict only once its processes are gone${round}`, async () => {
      const marker = newMarker();
      const root = tempDir("ops-sandbox-end-");
      chmodSync(root, 0o755);
      const contextDir = path.join(root, "src");
      mkdirSync(contextDir);
      try {
        const res = await runNativeBuild(
          { contextDir, workDir: path.join(root, "work"), cacheDir: null, checks: [], build: [leaveBehind(marker)], variables: [], memoryMb: 256, pids: PIDS, stepTimeoutSecs: 60, output: "." },
          { onLine: () => {} },
        );
        const atVerdict = leftOver(marker);
        expect(res.status).toBe("succeeded");
        expect(atVerdict).toEqual([]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  }
});

/** One process that sleeps for weeks in a session of its own, then a wait until the test holds it (its state D, as the sandbox's /proc shows it). */
const stuck = (marker: string) => `setsid sleep ${marker} </dev/null >/dev/null 2>&1 & p=$!; until grep -q '^State:[[:space:]]*D' /proc/$p/status; do sleep 0.05; done; echo held`;
const NOT_EMPTY = /^1 process\(es\) of the sandbox were still alive 5 s after they were killed \(pid \d+, cgroup \/sys\/fs\/cgroup\/\S+\)/;

/**
 * Wait for the run's `sleep <marker>`, hold it in the kernel (which lets the run's command end), and
 * give `check` the held pid; `check` returns the message that named the group. Once the process is
 * let go, that group is removed (ops tries again every 10 s).
 */
async function withHeld(marker: string, check: (pid: number) => Promise<string | void>): Promise<void> {
  const pid = await until(`the sandbox's sleep ${marker}`, () => leftOver(marker)[0], 30_000, 20);
  const held = await holdInKernel(pid);
  let message: string | void;
  try {
    message = await check(pid);
  } finally {
    await held.release();
  }
  const group = message ? / cgroup (\S+)\)/.exec(message)?.[1] : undefined;
  if (group) await until(`${group} removed`, () => !existsSync(group), 15_000, 100);
}

describe.skipIf(freezerMissing() !== null)("a process the kernel keeps alive past the bound (its group removed once it is gone)", () => {
  test("a build step fails saying what is left, instead of succeeding with its sandbox alive", async () => {
    const marker = newMarker();
    const root = tempDir("ops-sandbox-end-");
    chmodSync(root, 0o755);
    mkdirSync(path.join(root, "src"));
    try {
      const verdict = runNativeBuild(
        { contextDir: path.join(root, "src"), workDir: path.join(root, "work"), cacheDir: null, checks: [], build: [stuck(marker)], variables: [], memoryMb: 256, pids: PIDS, stepTimeoutSecs: 60, output: "." },
        { onLine: () => {} },
      ).then((r) => r, (e: Error) => e);
      await withHeld(marker, async (pid) => {
        const outcome = await verdict;
        expect(leftOver(marker)).toEqual([pid]);
        expect(outcome).toBeInstanceOf(Error);
        expect((outcome as Error).message).toMatch(NOT_EMPTY);
        return (outcome as Error).message;
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  test("a job run is recorded failed with what is left, not succeeded", async () => {
    const marker = newMarker();
    const job = `stuck-${marker}`;
    await expectStatus(await p.req("PUT", `/resources/job/${job}`, { spec: { command: stuck(marker) } }), 201);
    const queued = await expectStatus<{ id: number }>(await p.req("POST", `/resources/job/${job}/run`), 202);
    const ran = t.core.scheduler.runDue();
    await withHeld(marker, async (pid) => {
      await ran;
      const run = t.core.db.select().from(jobRuns).where(eq(jobRuns.id, queued.id)).get()!;
      expect(leftOver(marker)).toEqual([pid]);
      expect(run.status).toBe("failed");
      expect(run.error).toMatch(NOT_EMPTY);
      return run.error!;
    });
  }, 60_000);

  test("a release step fails with what is left, instead of returning its exit code", async () => {
    const marker = newMarker();
    const result = runtime.run({ id: `stuck-release-${marker}`, image: prepared.image, command: stuck(marker), timeoutMs: 30_000 }).then((r) => r, (e: Error) => e);
    await withHeld(marker, async (pid) => {
      const outcome = await result;
      expect(leftOver(marker)).toEqual([pid]);
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error).message).toMatch(NOT_EMPTY);
      return (outcome as Error).message;
    });
  }, 60_000);

  test("a replica that exits is reported crashed with a note of what is left", async () => {
    const marker = newMarker();
    const id = `stuck-crash-${marker}`;
    await runtime.start({ id, image: prepared.image, command: `${stuck(marker)}; exit 3`, restart: { initialMs: 60_000, maxMs: 60_000, resetAfterMs: 60_000 } });
    try {
      await withHeld(marker, async (pid) => {
        await until("the crash", () => runtime.status(id)?.state === "crashed", 30_000, 20);
        expect(leftOver(marker)).toEqual([pid]);
        expect(notes.filter((n) => n.id === id).map((n) => n.line)).toContainEqual(expect.stringMatching(NOT_EMPTY));
      });
    } finally {
      await runtime.stop(id, 200);
    }
  }, 60_000);
});
