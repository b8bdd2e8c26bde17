import { describe, expect, test } from "bun:test";
import { IDLE_MS, recordJoiner } from "./log-records";

/** A joiner on a clock the test moves; what it emitted, in order. */
function harness() {
  let clock = 0;
  const out: Array<{ key: string; message: string; at: number }> = [];
  const j = recordJoiner((key, message, at) => out.push({ key, message, at }), () => clock);
  return { j, out, tick: (ms: number) => (clock += ms) };
}

describe("one record per stack trace", () => {
  test("a Node trace: the Error line, its frames, the blank line and trailer of the same write; then the next line apart", () => {
    const { j, out, tick } = harness();
    j.push("r", "listening on 3000", 1);
    for (const l of ["Error: DATABASE_URL is not set", "    at Object.<anonymous> (/app/server.js:3:9)", "    at Module._compile (node:internal/modules/cjs/loader:1364:14)", "", "Node.js v20.19.2"]) j.push("r", l, 2);
    tick(100);
    j.push("r", "next start", 3);
    expect(out.map((o) => o.message)).toEqual(["listening on 3000", "Error: DATABASE_URL is not set\n    at Object.<anonymous> (/app/server.js:3:9)\n    at Module._compile (node:internal/modules/cjs/loader:1364:14)\n\nNode.js v20.19.2", "next start"]);
    expect(out[1]!.at).toBe(2);
  });

  test("a Python traceback ends with its exception line; a Java trace keeps Caused by and ... more", () => {
    const { j, out, tick } = harness();
    for (const l of ["Traceback (most recent call last):", '  File "/app/main.py", line 3, in <module>', "    main()", "ValueError: boom"]) {
      j.push("py", l, 1);
      tick(20);
    }
    j.push("py", "after", 2);
    for (const l of ['Exception in thread "main" java.lang.IllegalStateException: x', "\tat A.main(A.java:3)", "Caused by: java.io.IOException: y", "\t... 1 more"]) {
      j.push("java", l, 3);
      tick(20);
    }
    tick(IDLE_MS);
    j.push("java", "plain", 4);
    expect(out.map((o) => o.message)).toEqual([
      'Traceback (most recent call last):\n  File "/app/main.py", line 3, in <module>\n    main()\nValueError: boom',
      "after",
      'Exception in thread "main" java.lang.IllegalStateException: x\n\tat A.main(A.java:3)\nCaused by: java.io.IOException: y\n\t... 1 more',
      "plain",
    ]);
  });

  test("lines that open no record pass at once; keys do not mix; an idle record ends by itself", async () => {
    let clock = 0;
    const out: string[] = [];
    const j = recordJoiner((key, message) => out.push(`${key}:${message}`), () => clock);
    j.push("a", "TypeError: x is undefined", 1);
    j.push("b", "hello", 1);
    clock += 1;
    j.push("a", "    at f (a.js:1:1)", 1);
    expect(out).toEqual(["b:hello"]);
    await Bun.sleep(IDLE_MS + 30);
    expect(out).toEqual(["b:hello", "a:TypeError: x is undefined\n    at f (a.js:1:1)"]);
    j.push("a", "Error: again", 2);
    j.flushAll();
    expect(out[2]).toBe("a:Error: again");
  });

  test("a record is bounded: past 200 lines the rest starts anew", () => {
    const { j, out } = harness();
    j.push("r", "Error: deep", 1);
    for (let i = 0; i < 250; i++) j.push("r", `    at f${i} (x.js:1:1)`, 1);
    j.flushAll();
    expect(out[0]!.message.split("\n").length).toBe(200);
    expect(out.length).toBe(1 + 51);
  });
});
