/**
 * Kept commands (src/adapters/runtime/kept.ts, docs/decisions/0390): a process that starts a
 * command, hands it over and execs itself (test/fixtures/kept-exec.ts, as `ops restart` does)
 * adopts it in its new image: same pid, every line once and in order (an unfinished line joined
 * across the exec), no EPIPE for the writer, its exit status read with waitpid, and a stop that
 * works. Without clearing FD_CLOEXEC the pipes close at the exec, the writer dies of SIGPIPE and
 * the new image refuses to adopt. A handed-over pid that is another process now is refused and
 * left alone; a hand-over naming another ops or data dir is refused (what a gone ops left is stopped).
 */
import { describe, test, expect } from "bun:test";
import path from "node:path";
import { notAdoptable } from "../src/adapters/runtime/kept";
import { fdIdentity, memfdWith, pipe, closeFd, startTimeOf } from "../src/adapters/runtime/fds";
import { claimHandover, HANDOVER_ENV, takeClaimedReplicas } from "../src/adapters/runtime/handover";
import { createProcessRuntime } from "../src/adapters/runtime/process-runtime";
import type { ReplicaHandover } from "../src/adapters/runtime/types";

const FIXTURE = path.join(import.meta.dir, "fixtures", "kept-exec.ts");

async function run(command: string, env: Record<string, string> = {}) {
  const p = Bun.spawn([process.execPath, FIXTURE, command], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const events = out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
  return { events, err, code, pid: p.pid };
}

const WRITER = 'i=0; while [ $i -lt 60 ]; do echo "line $i"; i=$((i+1)); done; printf part-a; sleep 2; echo part-b; echo on-stderr >&2; exit 3';

describe("kept commands across an exec", () => {
  test("adopted after the exec: same pids, every line once in order, the unfinished line joined, the exit status read", async () => {
    const r = await run(WRITER, { KEPT_BEFORE_MS: "1000", KEPT_GAP_MS: "200" });
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const started = r.events.find((e) => e.started)!.started;
    const handed = r.events.find((e) => e.handedOver)!.handedOver;
    expect(handed.pid).toBe(started);
    // The writer was between "part-a" and "part-b" at the hand-over.
    expect(Buffer.from(handed.stdout.pending, "base64").toString()).toBe("part-a");
    expect(r.events.find((e) => "adoptable" in e)!.adoptable).toBeNull();
    expect(new Set(r.events.map((e) => e.pid))).toEqual(new Set([r.pid]));
    const stdout = r.events.filter((e) => e.stream === "stdout").map((e) => e.line);
    expect(stdout).toEqual([...Array.from({ length: 60 }, (_, i) => `line ${i}`), "part-apart-b"]);
    expect(r.events.filter((e) => e.stream === "stderr").map((e) => e.line)).toEqual(["on-stderr"]);
    expect(r.events.at(-1)!.done).toEqual({ exitCode: 3, signal: null, timedOut: false, stopped: false });
  }, 30_000);

  test("lines written while no image reads wait in the pipe and arrive after the exec", async () => {
    const r = await run('i=0; while [ $i -lt 50 ]; do echo "line $i"; i=$((i+1)); sleep 0.02; done', { KEPT_BEFORE_MS: "300", KEPT_GAP_MS: "400" });
    const execAt = r.events.findIndex((e) => e.exec);
    const after = r.events.slice(execAt).filter((e) => e.stream === "stdout").map((e) => e.line);
    expect(after.length).toBeGreaterThan(10);
    expect(r.events.filter((e) => e.stream === "stdout").map((e) => e.line)).toEqual(Array.from({ length: 50 }, (_, i) => `line ${i}`));
    expect(r.events.at(-1)!.done).toMatchObject({ exitCode: 0, signal: null });
  }, 30_000);

  test("stop of an adopted command: SIGTERM to its group, the exit seen", async () => {
    const r = await run("trap 'echo bye; exit 0' TERM; while :; do sleep 0.05; done", { KEPT_BEFORE_MS: "200", KEPT_GAP_MS: "100", KEPT_STOP_AFTER_MS: "300" });
    const pid = r.events.find((e) => e.started)!.started;
    expect(r.events.at(-1)!.done).toMatchObject({ stopped: true });
    expect(startTimeOf(pid)).toBeNull();
  }, 30_000);

  test("control: pipes left close-on-exec close at the exec; the writer dies of SIGPIPE and nothing is adopted", async () => {
    const r = await run('while :; do echo tick; sleep 0.02; done', { KEPT_BEFORE_MS: "200", KEPT_GAP_MS: "100", KEPT_KEEP_CLOEXEC: "1" });
    expect(r.code).toBe(2);
    // Whichever the new image saw first: the pipe closed, or the writer already dead of SIGPIPE.
    expect(r.events.find((e) => "adoptable" in e)!.adoptable).toMatch(/did not survive the restart|is gone/);
    // The writer got EPIPE/SIGPIPE: gone (or a zombie of the new image, which did not adopt it).
    expect([null, "Z"]).toContain(r.events.find((e) => "alive" in e)!.alive);
  }, 30_000);
});

describe("notAdoptable", () => {
  test("a pid whose start time differs is another process; a gone pid; a closed or different fd", () => {
    const p = pipe();
    const ident = fdIdentity(p.read)!;
    const h = { pid: process.pid, pidStart: startTimeOf(process.pid)!, stdout: { fd: p.read, ident, pending: "" }, stderr: { fd: p.read, ident, pending: "" } };
    expect(notAdoptable(h)).toBeNull();
    expect(notAdoptable({ ...h, pidStart: String(Number(h.pidStart) - 1) })).toBe(`pid ${process.pid} is another process now`);
    expect(notAdoptable({ ...h, pid: 2 ** 22 + 7 })).toContain("is gone");
    expect(notAdoptable({ ...h, stdout: { ...h.stdout, fd: p.write } })).toContain("did not survive");
    closeFd(p.read);
    closeFd(p.write);
    expect(notAdoptable(h)).toContain("did not survive");
  });
});

/**
 * Whether a child of this test process ended within `ms`. The refusal stops it and reaps it with
 * waitpid, which can come before Bun's own reaping of its child: Bun's `exited` then rejects with
 * ECHILD, which means the same.
 */
function stoppedWithin(p: { exited: Promise<number> }, ms: number): Promise<"stopped" | "running"> {
  const ended = p.exited.then(
    () => "stopped" as const,
    (e: { code?: string }) => {
      if (e?.code === "ECHILD") return "stopped" as const;
      throw e;
    },
  );
  return Promise.race([ended, Bun.sleep(ms).then(() => "running" as const)]);
}

describe("hand-overs that are not this process's", () => {
  const sleeper = () => Bun.spawn(["sleep", "30"], { detached: true });
  const record = (pid: number, pidStart: string): ReplicaHandover => {
    const p = pipe();
    const ident = fdIdentity(p.read)!;
    closeFd(p.write);
    return {
      spec: { id: "shop.production.web.1-1", image: { digest: "sha256:0", config: { entrypoint: [], cmd: ["true"], env: [], workingDir: "/", exposedPorts: [], labels: {} } as any, root: "/nonexistent" }, labels: {} },
      status: { id: "shop.production.web.1-1", state: "running", host: "127.0.0.1", port: 1, pid, restarts: 0, startedAt: 0, lastExit: null, nextRestartAt: null, memory: { limitMb: null, enforced: true, how: null, reason: null }, notEnforced: [], labels: {} },
      policy: { initialMs: 1000, maxMs: 30_000, resetAfterMs: 60_000 },
      delayMs: 1000,
      oomBase: 0,
      cgroup: null,
      pids: null,
      netns: null,
      command: { pid, pidStart, stdout: { fd: p.read, ident, pending: "" }, stderr: { fd: p.read, ident, pending: "" } },
    };
  };
  const handoverEnv = (ops: { pid: number; start: string }, dataDir: string, replicas: ReplicaHandover[]) => ({ [HANDOVER_ENV]: String(memfdWith(JSON.stringify({ format: 1, ops: { ...ops, dataDir }, replicas }))) });

  test("a replica whose pid is another process now is not adopted, and that process is left alone", async () => {
    const other = sleeper();
    const runtime = createProcessRuntime();
    const [res] = runtime.adopt([record(other.pid, String(Number(startTimeOf(other.pid)) + 1))]);
    expect(res).toEqual({ id: "shop.production.web.1-1", adopted: false, reason: `pid ${other.pid} is another process now` });
    expect(runtime.list()).toEqual([]);
    await Bun.sleep(300);
    expect(startTimeOf(other.pid)).not.toBeNull();
    other.kill("SIGKILL");
  });

  test("a hand-over naming an ops that is gone is refused and its replicas are stopped; one naming a live other process leaves them alone", async () => {
    const dataDir = "/tmp/ops-handover-test";
    const dead = Bun.spawn(["true"]);
    const deadStart = startTimeOf(dead.pid) ?? "1";
    await dead.exited;
    const orphan = sleeper();
    const env: Record<string, string | undefined> = handoverEnv({ pid: dead.pid, start: deadStart }, dataDir, [record(orphan.pid, startTimeOf(orphan.pid)!)]);
    expect(claimHandover(dataDir, env)).toEqual({ replicas: 1, refused: `it names another process (pid ${dead.pid})` });
    expect(env[HANDOVER_ENV]).toBeUndefined();
    expect(takeClaimedReplicas(dataDir)).toEqual([]);
    expect(await stoppedWithin(orphan, 5000)).toBe("stopped");

    const own = sleeper();
    const live = handoverEnv({ pid: 1, start: startTimeOf(1)! }, dataDir, [record(own.pid, startTimeOf(own.pid)!)]);
    expect(claimHandover(dataDir, live)?.refused).toBe("it names another process (pid 1)");
    await Bun.sleep(300);
    expect(own.exitCode).toBeNull();
    own.kill("SIGKILL");
  });

  test("a hand-over of this process for another data dir or format is refused; for this one its replicas are claimed once", async () => {
    const me = { pid: process.pid, start: startTimeOf(process.pid)! };
    const r = record(process.pid, me.start);
    expect(claimHandover("/tmp/a", handoverEnv(me, "/tmp/b", [r]))?.refused).toBe("it is of another data dir (/tmp/b)");
    expect(claimHandover("/tmp/a", handoverEnv(me, "/tmp/a", [r]))).toEqual({ replicas: 1, refused: null });
    expect(takeClaimedReplicas("/tmp/b")).toEqual([]);
    expect(takeClaimedReplicas("/tmp/a").map((x) => x.spec.id)).toEqual(["shop.production.web.1-1"]);
    expect(takeClaimedReplicas("/tmp/a")).toEqual([]);
    // Another version's hand-over (an upgrade that changed its shape) is refused and its replica ended.
    const older = sleeper();
    const env = { [HANDOVER_ENV]: String(memfdWith(JSON.stringify({ format: 0, ops: { ...me, dataDir: "/tmp/a" }, replicas: [record(older.pid, startTimeOf(older.pid)!)] }))) };
    expect(claimHandover("/tmp/a", env)?.refused).toBe("it is of another format (0, this binary reads 1)");
    expect(takeClaimedReplicas("/tmp/a")).toEqual([]);
    expect(await stoppedWithin(older, 5000)).toBe("stopped");
  });
});
