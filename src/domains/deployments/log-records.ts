/**
 * Lines of a replica's output that make one record (a stack trace) are stored as one log record, in
 * order, rather than as ten records the log search shows newest first (upside down). A record opens
 * with an error line (`Error: …`, `TypeError: …`, `Traceback (most recent call last):`, `panic: …`,
 * `Exception in thread …`, `thread '…' panicked`) and takes, while they come:
 * - indented lines (`    at f (file.js:1:2)`, `  File "x.py", line 3`, a tab before `at`);
 * - `Caused by: …` and `... 3 more`;
 * - after a Python traceback's frames, its closing `ValueError: …` line (then the record ends);
 * - any line written within `SAME_WRITE_MS` of the previous one (a runtime prints a trace in one
 *   write: its blank line and `Node.js v20…` trailer come with it).
 * Any other line ends the record; so do `IDLE_MS` without a line, `MAX_LINES` lines or `MAX_CHARS`
 * characters. Lines that open no record pass straight through. One record per replica and stream.
 */

export const SAME_WRITE_MS = 5;
export const IDLE_MS = 50;
const MAX_LINES = 200;
const MAX_CHARS = 32 * 1024;

const HEAD = /^(?:Uncaught |Unhandled )?(?:[A-Za-z_$][\w$.]*(?:Error|Exception|Panic)\b.*|Error\b.*|Traceback \(most recent call last\):|panic: .*|fatal error: .*|Exception in thread .*|thread '.*' panicked.*)$/;
const INDENTED = /^[ \t]+\S/;
const CHAINED = /^(?:Caused by: |\s*\.\.\. \d+ more|During handling of the above exception|The above exception was the direct cause)/;
/** A Python traceback's last line: `ValueError: boom`, `KeyError`, `module.Error: x`. */
const PY_END = /^[A-Za-z_][\w.]*(?::.*)?$/;

/** Whether a line opens an error record (`Error: …`, `TypeError: …`, a traceback, a panic). */
export function isErrorHead(line: string): boolean {
  return HEAD.test(line);
}

interface Open {
  lines: string[];
  chars: number;
  /** The first line's time (the record's time). */
  at: number;
  /** When the last line arrived (wall clock, for `SAME_WRITE_MS`). */
  lastArrival: number;
  traceback: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

export interface RecordJoiner {
  /** Take one line; `emit` receives each finished record (possibly at once, possibly later). */
  push(key: string, line: string, at: number): void;
  /** End the open record of `key`, if any (its replica stopped). */
  end(key: string): void;
  /** End every open record now (ops stops, a flush is asked for). */
  flushAll(): void;
}

export function recordJoiner(emit: (key: string, message: string, at: number) => void, now: () => number = () => performance.now()): RecordJoiner {
  const open = new Map<string, Open>();

  const close = (key: string) => {
    const r = open.get(key);
    if (!r) return;
    open.delete(key);
    if (r.timer) clearTimeout(r.timer);
    emit(key, r.lines.join("\n"), r.at);
  };

  const arm = (key: string, r: Open) => {
    if (r.timer) clearTimeout(r.timer);
    r.timer = setTimeout(() => close(key), IDLE_MS);
    (r.timer as { unref?: () => void }).unref?.();
  };

  function continues(r: Open, line: string, arrival: number): boolean {
    if (r.lines.length >= MAX_LINES || r.chars + line.length > MAX_CHARS) return false;
    if (INDENTED.test(line) || CHAINED.test(line)) return true;
    if (r.traceback && r.lines.length > 1 && INDENTED.test(r.lines[r.lines.length - 1]!) && PY_END.test(line)) return true;
    return arrival - r.lastArrival <= SAME_WRITE_MS;
  }

  return {
    push(key, line, at) {
      const arrival = now();
      const r = open.get(key);
      if (r && continues(r, line, arrival)) {
        r.lines.push(line);
        r.chars += line.length + 1;
        r.lastArrival = arrival;
        // A Python traceback ends with its exception line.
        if (r.traceback && !INDENTED.test(line) && !CHAINED.test(line) && PY_END.test(line) && r.lines.length > 2) close(key);
        else arm(key, r);
        return;
      }
      if (r) close(key);
      if (!HEAD.test(line)) {
        emit(key, line, at);
        return;
      }
      const fresh: Open = { lines: [line], chars: line.length, at, lastArrival: arrival, traceback: line.startsWith("Traceback"), timer: null };
      open.set(key, fresh);
      arm(key, fresh);
    },
    end: close,
    flushAll() {
      for (const key of [...open.keys()]) close(key);
    },
  };
}
