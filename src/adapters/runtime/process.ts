/**
 * The process runtime's command runner: runs a shell command as a child process in its own
 * process group (so a timeout or shutdown stops everything it started, not only `sh`), with an
 * explicit environment (nothing inherited from the server: the server's own settings, such as
 * OPS_SECRETS_KEY, never leak into a job), a working directory, a timeout, and its output handed
 * over line by line.
 */

export interface CommandSpec {
  command: string;
  cwd: string;
  /** The child's whole environment. */
  env: Record<string, string>;
  timeoutMs: number;
  /** Called for every complete line (and the unterminated tail) of stdout and stderr. */
  onLine(stream: "stdout" | "stderr", line: string): void;
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

async function pump(stream: ReadableStream<Uint8Array>, emit: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  const flush = (final: boolean) => {
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      while (line.length > MAX_LINE_CHARS) {
        emit(line.slice(0, MAX_LINE_CHARS));
        line = line.slice(MAX_LINE_CHARS);
      }
      emit(line);
    }
    while (buf.length > MAX_LINE_CHARS) {
      emit(buf.slice(0, MAX_LINE_CHARS));
      buf = buf.slice(MAX_LINE_CHARS);
    }
    if (final && buf !== "") {
      emit(buf);
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

/** Start `sh -c <command>`; the promise resolves when it exited and its output was read. */
export function startCommand(spec: CommandSpec): RunningCommand {
  const proc = Bun.spawn(["sh", "-c", spec.command], {
    cwd: spec.cwd,
    env: spec.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  let timedOut = false;
  let stopped = false;
  let killTimer: ReturnType<typeof setTimeout> | null = null;
  const signalGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid, sig);
    } catch {
      try {
        proc.kill(sig);
      } catch {
        // Already gone.
      }
    }
  };
  const terminate = (graceMs: number) => {
    signalGroup("SIGTERM");
    killTimer ??= setTimeout(() => signalGroup("SIGKILL"), graceMs);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    terminate(5000);
  }, spec.timeoutMs);

  const done = (async (): Promise<CommandResult> => {
    const out = pump(proc.stdout as ReadableStream<Uint8Array>, (l) => spec.onLine("stdout", l));
    const err = pump(proc.stderr as ReadableStream<Uint8Array>, (l) => spec.onLine("stderr", l));
    const exitCode = await proc.exited;
    // Anything the command left in the background would hold the pipes open: end the group.
    signalGroup("SIGKILL");
    await Promise.allSettled([out, err]);
    clearTimeout(timer);
    if (killTimer) clearTimeout(killTimer);
    const signal = proc.signalCode === null || proc.signalCode === undefined ? null : String(proc.signalCode);
    return { exitCode: signal ? null : exitCode, signal, timedOut, stopped };
  })();

  return {
    pid: proc.pid,
    done,
    stop(graceMs = 2000) {
      stopped = true;
      terminate(graceMs);
    },
  };
}
