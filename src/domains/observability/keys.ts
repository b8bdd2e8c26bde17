/**
 * Time keys: the row id of every log line and span is its timestamp, so "newest first" is "highest
 * row id first" — the order SQLite's B-trees and FTS5's doclists already iterate in, with no sort.
 *
 * key = (milliseconds since 2020-01-01) × 4096 + a sequence number. That stays below 2^53 (a
 * JavaScript number holds it exactly) until 2089, and gives 4096 distinct keys per millisecond; the
 * writer takes the next free key when one is taken, which at worst moves a line of an extreme burst
 * by a millisecond.
 */

/** 2020-01-01T00:00:00Z: timestamps before it are not stored. */
export const KEY_EPOCH_MS = Date.UTC(2020, 0, 1);
export const KEY_SEQ = 4096;
const LAST_MS = KEY_EPOCH_MS + Math.floor(Number.MAX_SAFE_INTEGER / KEY_SEQ) - 1;

/** True when `ms` can be keyed (2020 to 2089). */
export function keyable(ms: number): boolean {
  return Number.isFinite(ms) && ms >= KEY_EPOCH_MS && ms <= LAST_MS;
}

/** The key of `ms` with sequence `seq` (0..4095). */
export function keyOf(ms: number, seq: number): number {
  return (Math.floor(ms) - KEY_EPOCH_MS) * KEY_SEQ + seq;
}

/** The lowest key of millisecond `ms` (clamped to the keyable range). */
export function lowKey(ms: number): number {
  return (Math.min(Math.max(Math.floor(ms), KEY_EPOCH_MS), LAST_MS) - KEY_EPOCH_MS) * KEY_SEQ;
}

/** The highest key of millisecond `ms` (clamped to the keyable range). */
export function highKey(ms: number): number {
  return lowKey(ms) + KEY_SEQ - 1;
}

/** The millisecond a key stands for. */
export function msOfKey(key: number): number {
  return Math.floor(key / KEY_SEQ) + KEY_EPOCH_MS;
}
