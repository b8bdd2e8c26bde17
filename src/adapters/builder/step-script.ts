/**
 * A step's commands in one sandbox: a small shell script runs them one after another, each as its
 * own `sh -c`, and stops at the first that fails, exiting with its status. Starting the sandbox
 * (the memory-group join, setpriv, bwrap and its namespaces) costs several milliseconds, once per
 * step instead of once per command; like lines of a CI job's script, what one command leaves
 * running in the background is still there for the next, until the step ends.
 *
 * After each command the script writes a marker line to both stdout and stderr: a newline (so the
 * marker starts a line even after output with no final newline), then `\x1e<tag> <index> <status>`.
 * The two streams are read separately, so ops cannot tell from arrival order alone whether a line
 * on stdout came before or after a marker on stderr. `StepOutput` puts them back in order: a line
 * belongs to the command whose marker its own stream has not passed yet, lines of a later command
 * wait until both streams passed the earlier command's marker, and the `$ command` line of the
 * next command is written between the two. The newline written before a marker is dropped when it
 * made an empty line of its own.
 *
 * The markers only order the log and name the command that was running: whether the step
 * succeeded is the script's exit status and the limits' verdict, so output that imitates a marker
 * (the tag is on the script's command line, which the build can read) can confuse only its own log.
 */

/** The script run as `sh -c SCRIPT ops-step <tag> <command>…`. */
export const STEP_SCRIPT = [
  'tag="$1"; shift; i=0',
  'for c in "$@"; do',
  '  sh -c "$c"; rc=$?',
  "  printf '\\n\\036%s %d %d\\n' \"$tag\" \"$i\" \"$rc\"",
  "  printf '\\n\\036%s %d %d\\n' \"$tag\" \"$i\" \"$rc\" >&2",
  '  [ "$rc" -eq 0 ] || exit "$rc"',
  "  i=$((i + 1))",
  "done",
].join("\n");

/** The argv (inside the sandbox) that runs `commands` in order under the marker `tag`. */
export function stepScriptArgv(tag: string, commands: readonly string[]): string[] {
  return ["sh", "-c", STEP_SCRIPT, "ops-step", tag, ...commands];
}

/** A tag no build output carries by chance. */
export function newStepTag(): string {
  return `ops-step-${crypto.randomUUID().replaceAll("-", "")}`;
}

type Stream = "stdout" | "stderr";

interface Held {
  stream: Stream;
  command: number;
  line: string;
}

/**
 * Reorders the script's two output streams into the log (see the file comment). `onLine` gets the
 * commands' own lines; `onCommand(i)` is called when command `i` (from 1 on) starts in the log.
 */
export class StepOutput {
  /** Markers seen per stream: a line on a stream belongs to command `passed[stream]`. */
  private readonly passed: Record<Stream, number> = { stdout: 0, stderr: 0 };
  /** A stream's empty line, held until the next line says whether it was the marker's newline. */
  private readonly emptyHeld: Record<Stream, boolean> = { stdout: false, stderr: false };
  private readonly statuses: number[] = [];
  /** The command whose lines go to the log now. */
  private current = 0;
  private readonly waiting: Held[] = [];
  private readonly marker: RegExp;

  constructor(
    tag: string,
    private readonly commands: number,
    private readonly onLine: (stream: Stream, line: string) => void,
    private readonly onCommand: (index: number) => void,
  ) {
    this.marker = new RegExp(`^\\x1e${tag} (\\d+) (\\d+)$`);
  }

  line(stream: Stream, line: string): void {
    const m = this.marker.exec(line);
    if (m && Number(m[1]) === this.passed[stream]) {
      this.emptyHeld[stream] = false;
      if (this.statuses[this.passed[stream]] === undefined) this.statuses[this.passed[stream]] = Number(m[2]);
      this.passed[stream]++;
      this.advance();
      return;
    }
    if (this.emptyHeld[stream]) {
      this.emptyHeld[stream] = false;
      this.route(stream, "");
    }
    if (line === "") {
      this.emptyHeld[stream] = true;
      return;
    }
    this.route(stream, line);
  }

  /** The index of the command that did not finish with status 0 (the one running when it ended). */
  get running(): number {
    let i = 0;
    while (i < this.statuses.length && this.statuses[i] === 0) i++;
    return Math.min(i, this.commands - 1);
  }

  /** The script ended: whatever is still held goes to the log, in order. */
  end(): void {
    for (const s of ["stdout", "stderr"] as const) {
      if (this.emptyHeld[s]) {
        this.emptyHeld[s] = false;
        this.route(s, "");
      }
    }
    // A stream that passed a marker the other never wrote (the step was stopped between them):
    // the later command did start, so its lines follow its `$` line.
    const held = this.waiting.splice(0).sort((a, b) => a.command - b.command);
    for (const h of held) {
      if (h.command > this.current) {
        this.current = h.command;
        if (this.current < this.commands) this.onCommand(this.current);
      }
      this.onLine(h.stream, h.line);
    }
  }

  private route(stream: Stream, line: string): void {
    const command = this.passed[stream];
    if (command === this.current) this.onLine(stream, line);
    else this.waiting.push({ stream, command, line });
  }

  private advance(): void {
    while (this.passed.stdout > this.current && this.passed.stderr > this.current) {
      const ok = this.statuses[this.current] === 0;
      this.current++;
      if (!ok || this.current >= this.commands) return;
      this.onCommand(this.current);
      const now = this.waiting.filter((h) => h.command === this.current);
      if (now.length === 0) continue;
      const later = this.waiting.filter((h) => h.command !== this.current);
      this.waiting.splice(0, this.waiting.length, ...later);
      for (const h of now) this.onLine(h.stream, h.line);
    }
  }
}
