import { describe, test, expect } from "bun:test";
import { FixedClock, systemClock, iso, isoOrNull, parseTimeParam } from "./clock";

const NOW = Date.UTC(2026, 10, 21, 21, 55, 0);

describe("clocks", () => {
  test("FixedClock moves only when told", () => {
    const c = new FixedClock(NOW);
    expect(c.now()).toBe(NOW);
    c.advance(1500);
    expect(c.now()).toBe(NOW + 1500);
    c.set(new Date(NOW));
    expect(c.now()).toBe(NOW);
    c.set(5);
    expect(c.now()).toBe(5);
  });

  test("systemClock is the wall clock", () => {
    const before = Date.now();
    const t = systemClock.now();
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
  });
});

describe("formats", () => {
  test("iso is RFC 3339 UTC with milliseconds", () => {
    expect(iso(NOW)).toBe("2026-11-21T21:55:00.000Z");
    expect(isoOrNull(null)).toBeNull();
    expect(isoOrNull(undefined)).toBeNull();
    expect(isoOrNull(NOW + 7)).toBe("2026-11-21T21:55:00.007Z");
  });

  test.each([
    ["15m", NOW - 15 * 60_000],
    ["24h", NOW - 24 * 3_600_000],
    ["7d", NOW - 7 * 86_400_000],
    ["30s", NOW - 30_000],
    ["2w", NOW - 14 * 86_400_000],
    ["2026-11-21T20:00:00Z", Date.UTC(2026, 10, 21, 20, 0, 0)],
    ["2026-11-21T20:00:00.250Z", Date.UTC(2026, 10, 21, 20, 0, 0, 250)],
    ["2026-11-21T22:00:00+02:00", Date.UTC(2026, 10, 21, 20, 0, 0)],
    ["2026-11-21", Date.UTC(2026, 10, 21)],
  ])("parseTimeParam(%p)", (text, expected) => {
    expect(parseTimeParam(text, NOW)).toBe(expected);
  });

  test.each(["yesterday", "15 minutes", "-5m", "2026-13-45T99:00:00Z", "", "1y"])("parseTimeParam(%p) is null", (text) => {
    expect(parseTimeParam(text, NOW)).toBeNull();
  });
});
