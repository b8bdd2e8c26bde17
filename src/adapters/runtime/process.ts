/**
 * The command runner under job runs and service replicas: runs a shell command (or an argv) as a
 * child process in its own process group (so a timeout or shutdown stops everything it started,
 * not only `sh`), with an explicit environment (nothing inherited from the server: the server's
 * own settings, such as OPS_SECRETS_KEY, never leak into a child), a working directory, an
 * optional timeout, and its output handed over line by line.
 */
import { readdirSync, readFileSync } from "node:fs";
import { encodedForms } from "../../core/secret-encodings";

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
 * A function that replaces every secret value in a line with `***`, as CI systems do, in the
 * forms programs print it in too: base64 and base64url (also of the value inside a longer encoded
 * text), hex in both cases and percent-encoding (src/core/secret-encodings.ts). Values shorter
 * than 4 characters are left alone (masking them would garble ordinary output), and the longest
 * forms go first so a secret that contains another is masked whole. Output arrives line by line,
 * so a value of several lines (a PEM key) is masked line by line too, and encoded whole.
 */
export function secretMasker(values: readonly string[]): (line: string) => string {
  const kept = values.filter((v) => v.length >= 4);
  const parts = kept.flatMap((v) => (v.includes("\n") ? v.split(/\r?\n/).map((l) => l.trim()) : [v]));
  const mask = [...new Set([...parts.filter((s) => s.length >= 4), ...kept.flatMap(encodedForms)])].sort((a, b) => b.length - a.length);
  if (mask.length === 0) return (line) => line;
  // One expression of every form answers "anything to mask?" for most lines several times faster
  // than a substring search per form; the rare line that has one is masked longest form first.
  const any = new RegExp(mask.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"));
  return (line) => {
    if (!any.test(line)) return line;
    for (const s of mask) if (line.includes(s)) line = line.split(s).join("***");
    return line;
  };
}

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
    const out = pump(proc.stdout as ReadableStream<Uint8Array>, (l) => spec.onLine("stdout", l));
    const err = pump(proc.stderr as ReadableStream<Uint8Array>, (l) => spec.onLine("stderr", l));
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
