/**
 * Commands that outlive an exec of ops (replicas, docs/decisions/0390). Started like
 * `startCommand` (process.ts: own process group, explicit environment, output line by line), but
 * the output goes through pipes ops made itself (fds.ts) and reads without blocking, so:
 * - `handOver()` stops reading between two reads, leaving whatever the command writes next in the
 *   pipe (the kernel keeps up to 64 KiB, then the writer waits), and names the descriptors and the
 *   bytes of an unfinished line; nothing is lost and the command never sees EPIPE;
 * - `adoptCommand` in the next image reads on from the same descriptors and notices the exit with
 *   `waitpid` (Bun does not know a child an earlier image started).
 * The process stays a child of the same pid across the exec, so `--die-with-parent` (bwrap's
 * PR_SET_PDEATHSIG, which fires when the thread that forked exits: Bun spawns on its main thread,
 * the one that calls execve) does not fire; a real exit of ops still ends it.
 */
import { emitLine, emitUnfinishedBytes, groupControl, type CommandResult, type RunningCommand } from "./process";
import { NO_MASK, type SecretMasker } from "../../core/secret-mask";
import { closeFd, fdIdentity, pipe, reapChild, readSome, setNonBlocking, startTimeOf } from "./fds";

/** One output pipe handed to the next image. */
export interface PipeHandover {
  fd: number;
  /** `dev:ino` of the pipe, to check it is still the same one. */
  ident: string;
  /** Bytes of an unfinished line, base64. */
  pending: string;
}

export interface CommandHandover {
  pid: number;
  /** /proc/<pid>/stat start time: a pid with another one is another process. */
  pidStart: string;
  stdout: PipeHandover;
  stderr: PipeHandover;
}

export interface KeptCommand extends RunningCommand {
  /** Stop reading and watching (the process runs on); what the next image needs to adopt it. */
  handOver(): CommandHandover;
}

export interface KeptSpec {
  command: readonly string[];
  cwd: string;
  env: Record<string, string>;
  onLine(stream: "stdout" | "stderr", line: string): void;
  /** Secret values masked in every line before `onLine` sees it (as `startCommand` does). */
  mask?: SecretMasker;
  politeTargets?(pid: number): number[];
}

const NL = 0x0a;
const MAX_IDLE_MS = 200;

/** Read a non-blocking pipe until EOF (then close it) or until detached (then leave it open). */
function pumpFd(fd: number, emit: (line: string) => void, start: Uint8Array = new Uint8Array(0), mask: SecretMasker = NO_MASK) {
  const decoder = new TextDecoder();
  let buf = start;
  let detached = false;
  const line = (bytes: Uint8Array) => {
    const text = decoder.decode(bytes);
    emitLine(text.endsWith("\r") ? text.slice(0, -1) : text, mask, emit);
  };
  const split = () => {
    let i: number;
    while ((i = buf.indexOf(NL)) >= 0) {
      line(buf.subarray(0, i));
      buf = buf.slice(i + 1);
    }
    buf = emitUnfinishedBytes(buf, mask, emit);
  };
  const done = (async () => {
    const chunk = new Uint8Array(65536);
    let idle = 5;
    for (;;) {
      if (detached) return;
      const got = readSome(fd, chunk);
      if (got === "eof") break;
      if (got === "empty") {
        await Bun.sleep(idle);
        idle = Math.min(idle * 2, MAX_IDLE_MS);
        continue;
      }
      idle = 5;
      const joined = new Uint8Array(buf.length + got.length);
      joined.set(buf);
      joined.set(got, buf.length);
      buf = joined;
      split();
      await new Promise((r) => setImmediate(r));
    }
    if (buf.length > 0) line(buf);
    buf = new Uint8Array(0);
    closeFd(fd);
  })();
  return {
    done,
    detach(): PipeHandover {
      detached = true;
      return { fd, ident: fdIdentity(fd) ?? "", pending: Buffer.from(buf).toString("base64") };
    },
  };
}

function kept(
  pid: number,
  out: ReturnType<typeof pumpFd>,
  err: ReturnType<typeof pumpFd>,
  /** The command's exit, or null once `handedOver()` says it was handed over (the next image watches it). */
  exitOf: (handedOver: () => boolean) => Promise<{ code: number | null; signal: string | null } | null>,
  politeTargets: KeptSpec["politeTargets"],
): KeptCommand {
  let stopped = false;
  let handedOver = false;
  const exited = exitOf(() => handedOver);
  const group = groupControl(pid, politeTargets);
  const done = (async (): Promise<CommandResult> => {
    const res = await exited;
    if (res === null || handedOver) return new Promise<CommandResult>(() => {}); // handed over: the next image watches it
    // Anything the command left in the background would hold the pipes open: end the group.
    group.signalGroup("SIGKILL");
    await Promise.allSettled([out.done, err.done]);
    group.clear();
    return { exitCode: res.signal ? null : res.code, signal: res.signal, timedOut: false, stopped };
  })();
  const pidStart = startTimeOf(pid) ?? "";
  return {
    pid,
    done,
    stop(graceMs = 2000) {
      stopped = true;
      group.terminate(graceMs);
    },
    handOver() {
      handedOver = true;
      group.clear();
      return { pid, pidStart, stdout: out.detach(), stderr: err.detach() };
    },
  };
}

/** Start `spec` with output through pipes of ops's own. */
export function startKeptCommand(spec: KeptSpec): KeptCommand {
  const out = pipe();
  const err = pipe();
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn([...spec.command], { cwd: spec.cwd, env: spec.env, stdin: "ignore", stdout: out.write, stderr: err.write, detached: true });
  } catch (e) {
    for (const fd of [out.read, out.write, err.read, err.write]) closeFd(fd);
    throw e;
  }
  // Only the child holds the write ends now, so its exit (and its group's) is EOF here.
  closeFd(out.write);
  closeFd(err.write);
  setNonBlocking(out.read);
  setNonBlocking(err.read);
  const stdout = pumpFd(out.read, (l) => spec.onLine("stdout", l), undefined, spec.mask);
  const stderr = pumpFd(err.read, (l) => spec.onLine("stderr", l), undefined, spec.mask);
  const exitOf = (handed: () => boolean) =>
    proc.exited.then(() => {
      if (handed()) return null;
      const signal = proc.signalCode === null || proc.signalCode === undefined ? null : String(proc.signalCode);
      return { code: proc.exitCode, signal };
    });
  return kept(proc.pid, stdout, stderr, exitOf, spec.politeTargets);
}

/** Why a handed-over command cannot be adopted, or null when it can. */
export function notAdoptable(h: CommandHandover): string | null {
  const now = startTimeOf(h.pid);
  if (now === null) return `its process ${h.pid} is gone`;
  if (now !== h.pidStart) return `pid ${h.pid} is another process now`;
  for (const p of [h.stdout, h.stderr]) if (fdIdentity(p.fd) !== p.ident || p.ident === "") return `its output pipe (fd ${p.fd}) did not survive the restart`;
  return null;
}

const POLL_EXIT_MS = 200;

/** Adopt a command an earlier image of this process started and handed over (check `notAdoptable` first). */
export function adoptCommand(h: CommandHandover, spec: Pick<KeptSpec, "onLine" | "politeTargets" | "mask">): KeptCommand {
  const stdout = pumpFd(h.stdout.fd, (l) => spec.onLine("stdout", l), Buffer.from(h.stdout.pending, "base64"), spec.mask);
  const stderr = pumpFd(h.stderr.fd, (l) => spec.onLine("stderr", l), Buffer.from(h.stderr.pending, "base64"), spec.mask);
  const exitOf = async (handed: () => boolean) => {
    for (;;) {
      if (handed()) return null;
      const r = reapChild(h.pid);
      if (r !== null) return r;
      await Bun.sleep(POLL_EXIT_MS);
    }
  };
  return kept(h.pid, stdout, stderr, exitOf, spec.politeTargets);
}
