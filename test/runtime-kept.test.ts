/**
 * Kept commands (src/adapters/runtime/kept.ts, docs/decisions/0390): a process that starts a
 * command, hands it over and execs itself (test/fixtures/kept-exec.ts, as `ops restart` does)
 * adopts it in its new image: same pid, every line once and in order (an unfinished line joined
 * across the exec), no EPIPE for the writer, its exit status read with waitpid, and a stop that
 * works. Without clearing FD_CLOEXEC the pipes close at the exec, the writer dies of SIGPIPE and
 * the new image refuses to adopt. A handed-over pid that is another process now is refused.
 */
import { describe, test, expect } from "bun:test";
import path from "node:path";
import { notAdoptable } from "../src/adapters/runtime/kept";
import { fdIdentity, pipe, closeFd, startTimeOf } from "../src/adapters/runtime/fds";

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
