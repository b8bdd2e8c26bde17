/**
 * The data plane's output spool: every line a replica writes (and ops's notes about it) is given a
 * sequence number and appended to a segment file under `run/data-plane/spool/` before anyone else
 * sees it, so output written while the control plane is down is kept and reaches the log store
 * when it is back (decision 0600). The control plane acknowledges what its log writer has stored;
 * segments wholly acknowledged are deleted. Bounded: past `maxBytes` the oldest segment goes and
 * the lines it held are counted as dropped (said once to the control plane when it attaches).
 *
 * Lines are JSON, one per line, written in batches (every `flushMs` or 64 KiB): a crash of the
 * data plane loses at most one batch, which the replicas' own death (they die with it) makes moot.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import path from "node:path";
import type { SpooledLine } from "./protocol";

export interface Spool {
  /** Give `line` the next sequence number and queue it for the disk; returns it. */
  append(line: Omit<SpooledLine, "seq">): SpooledLine;
  /** The lines after `seq` still on disk (the queued batch written first), oldest first, at most `limit`. */
  after(seq: number, limit: number): SpooledLine[];
  /** Everything up to `seq` is stored by the control plane: drop the segments it covers. */
  ack(seq: number): void;
  /** The highest sequence number handed out. */
  readonly seq: number;
  /** Lines dropped because the spool was full, since the last `takeDropped`. */
  takeDropped(): number;
  flush(): void;
  close(): void;
}

const SEGMENT_BYTES = 4 * 1024 * 1024;
const BATCH_BYTES = 64 * 1024;

interface Segment {
  first: number;
  last: number;
  bytes: number;
  file: string;
}

const name = (first: number) => `${String(first).padStart(16, "0")}.jsonl`;

/** Open (or continue) the spool in `dir`. */
export function openSpool(dir: string, opts: { maxBytes: number; flushMs?: number }): Spool {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const segments: Segment[] = [];
  for (const f of readdirSync(dir).filter((n) => /^\d{16}\.jsonl$/.test(n)).sort()) {
    const file = path.join(dir, f);
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n").filter((l) => l.length > 0);
    let last = Number(f.slice(0, 16)) - 1;
    for (const l of lines) {
      try {
        last = Math.max(last, (JSON.parse(l) as SpooledLine).seq);
      } catch {
        // a torn last line of a crashed writer: skipped on read too
      }
    }
    segments.push({ first: Number(f.slice(0, 16)), last, bytes: statSync(file).size, file });
  }
  let seq = segments.length > 0 ? segments[segments.length - 1].last : 0;
  let fd: number | null = null;
  let pending: string[] = [];
  let pendingBytes = 0;
  let dropped = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const total = () => segments.reduce((n, s) => n + s.bytes, 0);

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending.length === 0) return;
    const text = pending.join("");
    const firstSeq = (JSON.parse(pending[0]) as SpooledLine).seq;
    pending = [];
    pendingBytes = 0;
    let cur = segments[segments.length - 1];
    if (!cur || fd === null || cur.bytes >= SEGMENT_BYTES) {
      if (fd !== null) closeSync(fd);
      cur = { first: firstSeq, last: firstSeq - 1, bytes: 0, file: path.join(dir, name(firstSeq)) };
      segments.push(cur);
      fd = openSync(cur.file, "a", 0o600);
    }
    const bytes = Buffer.from(text);
    writeSync(fd, bytes);
    cur.bytes += bytes.length;
    cur.last = seq;
    // Bounded: the oldest segments go first (never the one being written).
    while (segments.length > 1 && total() > opts.maxBytes) {
      const old = segments.shift()!;
      dropped += old.last - old.first + 1;
      rmSync(old.file, { force: true });
    }
  };

  const readSegment = (s: Segment): SpooledLine[] => {
    let text: string;
    try {
      text = readFileSync(s.file, "utf8");
    } catch {
      return [];
    }
    const out: SpooledLine[] = [];
    for (const l of text.split("\n")) {
      if (l.length === 0) continue;
      try {
        out.push(JSON.parse(l) as SpooledLine);
      } catch {
        // torn line
      }
    }
    return out;
  };

  return {
    append(line) {
      const full: SpooledLine = { seq: ++seq, ...line };
      const text = `${JSON.stringify(full)}\n`;
      pending.push(text);
      pendingBytes += text.length;
      if (pendingBytes >= BATCH_BYTES) flush();
      else timer ??= setTimeout(flush, opts.flushMs ?? 20);
      return full;
    },
    after(from, limit) {
      flush();
      const out: SpooledLine[] = [];
      for (const s of segments) {
        if (s.last <= from) continue;
        for (const l of readSegment(s)) {
          if (l.seq <= from) continue;
          out.push(l);
          if (out.length >= limit) return out;
        }
      }
      return out;
    },
    ack(upTo) {
      flush();
      while (segments.length > 0 && segments[0].last <= upTo) {
        const s = segments[0];
        // The segment being written stays open; it is emptied by starting the next one.
        if (segments.length === 1) {
          if (fd !== null) closeSync(fd);
          fd = null;
        }
        segments.shift();
        rmSync(s.file, { force: true });
      }
    },
    get seq() {
      return seq;
    },
    takeDropped() {
      const n = dropped;
      dropped = 0;
      return n;
    },
    flush,
    close() {
      flush();
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
