/**
 * `remote:` lines in a push's answer (docs/decisions/0430-push-feedback.md). receive-pack answers
 * a client that asked for side-band (git's default for push, `-q` included) with pkt-lines whose
 * first payload byte is the band: 1 the report-status, 2 progress and hook output (git prints it
 * as `remote: …`), 3 a fatal error; the answer ends with one flush packet (`0000`) after the
 * post-receive hook ran. ops holds that final flush back, lets the push subscribers run, then
 * writes their lines as band-2 packets followed by the flush: git prints them after its own
 * progress and before `To <url>`, and the report, sent whole before, is untouched.
 *
 * A client without side-band (`sendpack.sideband=false`) gets report-status packets and no place
 * for text: its answer passes unchanged. So does anything that does not parse as pkt-lines.
 */

import { TERMINAL_UNSAFE } from "../../../core/terminal-text";

/** Lines per push at most; the rest are counted in one last line. */
export const MAX_PUSH_LINES = 50;
/** Bytes of one line at most (a side-band packet is at most 1000 bytes with `side-band`). */
const MAX_LINE_BYTES = 900;

const FLUSH = new Uint8Array([48, 48, 48, 48]);
const enc = new TextEncoder();

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function hexLength(buf: Uint8Array, at: number): number {
  let n = 0;
  for (let i = at; i < at + 4; i++) {
    const c = buf[i]!;
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) return -1;
    n = n * 16 + d;
  }
  return n;
}

/**
 * Follows receive-pack's answer packet by packet as it streams through: `feed` returns what can go
 * to the client now (all but an unfinished packet header, or a flush packet that ends the bytes
 * seen so far), `end` what is left, with the lines before the final flush when git reads side-band.
 */
export class ReceivePackAnswer {
  private held: Uint8Array = new Uint8Array(0);
  /** Payload bytes of the current packet still to come. */
  private remaining = 0;
  /** Decided by the first payload byte: a band number, or the `unpack …` of a bare report. */
  private sideband: boolean | null = null;
  /** Set when the bytes are not pkt-lines: everything passes, nothing is added. */
  private opaque = false;

  feed(chunk: Uint8Array): Uint8Array {
    if (this.opaque) return chunk;
    const buf = this.held.length > 0 ? concat(this.held, chunk) : chunk;
    this.held = new Uint8Array(0);
    let p = 0;
    for (;;) {
      if (this.remaining > 0) {
        if (p >= buf.length) break;
        if (this.sideband === null) this.sideband = buf[p]! >= 1 && buf[p]! <= 3;
        const n = Math.min(this.remaining, buf.length - p);
        p += n;
        this.remaining -= n;
        continue;
      }
      if (buf.length - p < 4) break;
      const len = hexLength(buf, p);
      if (len < 0 || (len > 0 && len < 4 && len !== 1 && len !== 2)) {
        this.opaque = true;
        return buf;
      }
      if (len === 0 && p + 4 === buf.length) break;
      p += 4;
      if (len > 4) this.remaining = len - 4;
    }
    this.held = buf.slice(p);
    return buf.subarray(0, p);
  }

  /** The held bytes; when they are the final flush of a side-band answer, `lines` go before it. */
  end(lines: string[]): Uint8Array {
    const held = this.held;
    this.held = new Uint8Array(0);
    const atFlush = !this.opaque && this.remaining === 0 && held.length === 4 && hexLength(held, 0) === 0;
    if (!atFlush || this.sideband !== true || lines.length === 0) return held;
    return concat(sidebandLines(lines), FLUSH);
  }
}

/**
 * A line as the pusher's terminal may show it: control characters (escape sequences, carriage
 * returns), line separators and bidirectional overrides become `?` (a ref or a service name must
 * not repaint or reorder what git prints), and it is cut at MAX_LINE_BYTES.
 */
export function printable(line: string): string {
  const s = line.replace(TERMINAL_UNSAFE, "?");
  const bytes = enc.encode(s);
  if (bytes.length <= MAX_LINE_BYTES) return s;
  // Cut on bytes; a character split in two decodes as U+FFFD, dropped.
  return `${new TextDecoder().decode(bytes.subarray(0, MAX_LINE_BYTES - 3)).replace(/\uFFFD$/, "")}…`;
}

/** `lines` (at most MAX_PUSH_LINES, then a count of the rest) as band-2 pkt-lines. */
export function sidebandLines(lines: string[]): Uint8Array {
  const shown = lines.length > MAX_PUSH_LINES ? [...lines.slice(0, MAX_PUSH_LINES - 1), `… and ${lines.length - MAX_PUSH_LINES + 1} more (the console's Builds page lists every build)`] : lines;
  const packets = shown.map((l) => {
    const payload = enc.encode(`${printable(l)}\n`);
    const out = new Uint8Array(5 + payload.length);
    out.set(enc.encode((5 + payload.length).toString(16).padStart(4, "0")));
    out[4] = 2;
    out.set(payload, 5);
    return out;
  });
  return packets.reduce(concat, new Uint8Array(0));
}
