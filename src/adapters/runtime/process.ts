/**
 * The command runner under job runs and service replicas: runs a shell command (or an argv) as a
 * child process in its own process group (so a timeout or shutdown stops everything it started,
 * not only `sh`), with an explicit environment (nothing inherited from the server: the server's
 * own settings, such as OPS_SECRETS_KEY, never leak into a child), a working directory, an
 * optional timeout, and its output handed over line by line, its secret values masked.
 */
import { readdirSync, readFileSync } from "node:fs";
import { NO_MASK, type SecretMasker } from "../../core/secret-mask";

export { secretMasker, type SecretMasker } from "../../core/secret-mask";

export interface CommandSpec {
  /** A shell command line (run as `sh -c`), or an argv run as given. */
  command: string | readonly string[];
  cwd: string;
  /** The child's whole environment. */
  env: Record<string, string>;
  /** Stop the command after this long; omitted or 0: no timeout (a supervised service). */
  timeoutMs?: number;
  /** Called for every complete line (and the unterminated tail) of stdout and stderr. */
  onLine(stream: "stdout" | "stderr", line: string): void;
  /** Secret values masked in every line before `onLine` sees it (whole, before a long line is cut). */
  mask?: SecretMasker;
  /**
   * The processes that get the polite SIGTERM of a stop (default: the whole process group).
   * A sandbox whose outer process would die at once on SIGTERM, taking its children with it,
   * names the processes inside it instead. SIGKILL after the grace period always ends the group.
   */
  politeTargets?(pid: number): number[];
}

export interface CommandResult {
  exitCode: number | null;
  /** The signal that ended it, when one did. */
  signal: string | null;
  timedOut: boolean;
  /** Stopped through `RunningCommand.stop` (shutdown). */
  stopped: boolean;
}

export interface RunningCommand {
  pid: number;
  done: Promise<CommandResult>;
  /** Stop the whole process group (SIGTERM, then SIGKILL after `graceMs`). */
  stop(graceMs?: number): void;
}

/** Longest line kept whole; longer output is split into several lines. */
export const MAX_LINE_CHARS = 8192;

/** A PATH for children that does not depend on the server's own environment. */
export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * An output line masked whole, then cut into pieces of at most MAX_LINE_CHARS: a secret across a
 * cut is masked like any other (decision 0515).
 */
export function emitLine(text: string, mask: SecretMasker, emit: (line: string) => void): void {
  let line = mask(text);
  while (line.length > MAX_LINE_CHARS) {
    emit(line.slice(0, MAX_LINE_CHARS));
    line = line.slice(MAX_LINE_CHARS);
  }
  emit(line);
}

/**
 * The head of an unfinished line that grew past MAX_LINE_CHARS, emitted in pieces; returns what
 * stays behind. It is masked before the cut, and the masker's reach stays behind, so a secret
 * whose end has not arrived yet is never cut off from it.
 */
export function emitUnfinished(text: string, mask: SecretMasker, emit: (line: string) => void): string {
  if (text.length <= MAX_LINE_CHARS + mask.reach) return text;
  let rest = mask(text);
  while (rest.length > MAX_LINE_CHARS + mask.reach) {
    emit(rest.slice(0, MAX_LINE_CHARS));
    rest = rest.slice(MAX_LINE_CHARS);
  }
  return rest;
}

/**
 * `emitUnfinished` over bytes (a pipe read as bytes, so an unfinished line can be handed over
 * exactly): the bytes of a character not yet complete stay behind as they are.
 */
export function emitUnfinishedBytes(buf: Uint8Array, mask: SecretMasker, emit: (line: string) => void): Uint8Array {
  if (buf.length <= MAX_LINE_CHARS + mask.reach) return buf;
  let end = buf.length;
  while (end > 0 && (buf[end - 1]! & 0xc0) === 0x80) end--;
  if (end > 0 && buf[end - 1]! >= 0xc0) end--;
  const rest = new TextEncoder().encode(emitUnfinished(new TextDecoder().decode(buf.subarray(0, end)), mask, emit));
  const out = new Uint8Array(rest.length + buf.length - end);
  out.set(rest);
  out.set(buf.subarray(end), rest.length);
  return out;
}

async function pump(stream: ReadableStream<Uint8Array>, mask: SecretMasker, emit: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  const flush = (final: boolean) => {
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      emitLine(line.endsWith("\r") ? line.slice(0, -1) : line, mask, emit);
    }
    buf = emitUnfinished(buf, mask, emit);
    if (final && buf !== "") {
      emitLine(buf, mask, emit);
      buf = "";
    }
  };
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    flush(false);
  }
  buf += decoder.decode();
  flush(true);
}

/** A process below `root` (found through /proc), with its command name. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  comm: string;
}

/** Every descendant of `root` (not `root` itself), parents before children. Linux only. */
export function descendants(root: number): ProcessInfo[] {
  const all: ProcessInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // comm is in parentheses and may hold spaces or parentheses itself: split at the last ")".
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      all.push({ pid: Number(name), ppid, comm });
    } catch {
      // Gone while we looked.
    }
  }
  const out: ProcessInfo[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const next = all.filter((p) => frontier.includes(p.ppid));
    out.push(...next);
    frontier = next.map((p) => p.pid);
  }
  return out;
}

/**
 * The stop of a command's process group: SIGTERM to `politeTargets` (or the whole group), SIGKILL
 * of the group after the grace period. `fallback` signals the process alone when the group is gone.
 */
export function groupControl(pid: number, politeTargets?: (pid: number) => number[], fallback?: (sig: NodeJS.Signals) => void) {
  let killTimer: ReturnType<typeof setTimeout> | null = null;
  const signalGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        fallback?.(sig);
      } catch {
        // Already gone.
      }
    }
  };
  const terminate = (graceMs: number) => {
    const targets = politeTargets?.(pid) ?? [];
    if (targets.length === 0) signalGroup("SIGTERM");
    for (const p of targets) {
      try {
        process.kill(p, "SIGTERM");
      } catch {
        // Already gone.
      }
    }
    killTimer ??= setTimeout(() => signalGroup("SIGKILL"), graceMs);
  };
  const clear = () => {
    if (killTimer) clearTimeout(killTimer);
  };
  return { signalGroup, terminate, clear };
}

/** Start the command; the promise resolves when it exited and its output was read. */
export function startCommand(spec: CommandSpec): RunningCommand {
  const argv = typeof spec.command === "string" ? ["sh", "-c", spec.command] : [...spec.command];
  const proc = Bun.spawn(argv, {
    cwd: spec.cwd,
    env: spec.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  let timedOut = false;
  let stopped = false;
  const group = groupControl(proc.pid, spec.politeTargets, (sig) => proc.kill(sig));
  const timer = spec.timeoutMs
    ? setTimeout(() => {
        timedOut = true;
        group.terminate(5000);
      }, spec.timeoutMs)
    : null;

  const done = (async (): Promise<CommandResult> => {
    const out = pump(proc.stdout as ReadableStream<Uint8Array>, spec.mask ?? NO_MASK, (l) => spec.onLine("stdout", l));
    const err = pump(proc.stderr as ReadableStream<Uint8Array>, spec.mask ?? NO_MASK, (l) => spec.onLine("stderr", l));
    const exitCode = await proc.exited;
    // Anything the command left in the background would hold the pipes open: end the group.
    group.signalGroup("SIGKILL");
    await Promise.allSettled([out, err]);
    if (timer) clearTimeout(timer);
    group.clear();
    const signal = proc.signalCode === null || proc.signalCode === undefined ? null : String(proc.signalCode);
    return { exitCode: signal ? null : exitCode, signal, timedOut, stopped };
  })();

  return {
    pid: proc.pid,
    done,
    stop(graceMs = 2000) {
      stopped = true;
      group.terminate(graceMs);
    },
  };
}

/** A loopback port that was free a moment ago (the kernel hands out ports round the range, so it rarely comes back soon). */
export function freeLoopbackPort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port as number;
  s.stop(true);
  return port;
}
