/**
 * Time, injectable. Everything that reads the time takes it from `core.clock`, so tests can pin it
 * and move it (`FixedClock.advance`) instead of sleeping.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to. */
export class FixedClock implements Clock {
  constructor(private ms: number = Date.UTC(2026, 10, 21, 12, 0, 0)) {}
  now(): number {
    return this.ms;
  }
  set(ms: number | Date): void {
    this.ms = typeof ms === "number" ? ms : ms.getTime();
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** RFC 3339 UTC with milliseconds, the one timestamp format of the JSON API. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** `iso` for nullable columns. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/**
 * Parse an API time parameter: RFC 3339, or relative to `now` (`15m`, `24h`, `7d`, `30s`).
 * Returns epoch ms, or null when the text is neither.
 */
export function parseTimeParam(text: string, now: number): number | null {
  const rel = /^(\d+)(s|m|h|d|w)$/.exec(text.trim());
  if (rel) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[rel[2] as "s"];
    return now - Number(rel[1]) * unit;
  }
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(text.trim())) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}
