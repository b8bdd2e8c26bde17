import { describe, test, expect } from "bun:test";
import { createLogger } from "./log";

function capture(level: "debug" | "info" | "warn" | "error" = "info") {
  const lines: string[] = [];
  const log = createLogger(level, (l) => lines.push(l));
  return { log, lines, parsed: () => lines.map((l) => JSON.parse(l)) };
}

describe("createLogger", () => {
  test("one JSON object per line: ts, level, msg, then fields", () => {
    const { log, lines, parsed } = capture();
    log.info("request", { req: "r-1", status: 200 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("\n");
    const [rec] = parsed();
    expect(Object.keys(rec)).toEqual(["ts", "level", "msg", "req", "status"]);
    expect(rec).toMatchObject({ level: "info", msg: "request", req: "r-1", status: 200 });
    expect(new Date(rec.ts).toISOString()).toBe(rec.ts);
  });

  test("lines below the level are dropped", () => {
    const { log, parsed } = capture("warn");
    log.debug("d");
    log.info("i");
    log.warn("w");
    log.error("e");
    expect(parsed().map((r) => r.level)).toEqual(["warn", "error"]);
  });

  test("child loggers add their fields to every line", () => {
    const { log, parsed } = capture("debug");
    const child = log.child({ req: "abc" }).child({ domain: "access" });
    child.debug("hello", { n: 1 });
    expect(parsed()[0]).toMatchObject({ req: "abc", domain: "access", msg: "hello", n: 1 });
  });

  test("errors become name, message and a short stack", () => {
    const { log, parsed } = capture();
    log.error("failed", { err: new TypeError("bad thing") });
    const err = parsed()[0].err;
    expect(err.name).toBe("TypeError");
    expect(err.message).toBe("bad thing");
    expect(err.stack.split("\n").length).toBeLessThanOrEqual(8);
  });

  test("fields that cannot be serialised still give a line", () => {
    const { log, parsed } = capture();
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    log.warn("odd", { loop });
    expect(parsed()[0]).toMatchObject({ level: "warn", msg: "odd", note: "fields not serialisable" });
  });
});
