/**
 * The step script's output demultiplexer: a step's commands run in one sandbox and their two
 * streams arrive separately, so StepOutput must put each line under the command that wrote it,
 * whatever order the streams arrive in, and drop only the newline the script itself wrote before
 * a marker. The script itself runs in plain `sh` here (the native builder's tests run it in the
 * sandbox).
 */
import { describe, test, expect } from "bun:test";
import { newStepTag, stepScriptArgv, StepOutput } from "../src/adapters/builder/step-script";

function recorder(tag: string, commands: number) {
  const log: string[] = [];
  const out = new StepOutput(
    tag,
    commands,
    (stream, line) => log.push(`${stream}:${line}`),
    (i) => log.push(`$ ${i}`),
  );
  return { log, out };
}

const M = (tag: string, i: number, rc: number) => `\x1e${tag} ${i} ${rc}`;

describe("StepOutput", () => {
  test("a later command's lines wait until both streams passed the earlier command's marker", () => {
    const tag = "t1";
    const { log, out } = recorder(tag, 2);
    // stderr is read ahead: its marker and the second command's stderr line come first.
    out.line("stderr", "err0");
    out.line("stderr", "");
    out.line("stderr", M(tag, 0, 0));
    out.line("stderr", "err1");
    out.line("stdout", "out0");
    out.line("stdout", "");
    out.line("stdout", M(tag, 0, 0));
    out.line("stdout", "out1");
    out.line("stdout", "");
    out.line("stdout", M(tag, 1, 0));
    out.line("stderr", "");
    out.line("stderr", M(tag, 1, 0));
    out.end();
    expect(log).toEqual(["stderr:err0", "stdout:out0", "$ 1", "stderr:err1", "stdout:out1"]);
    expect(out.running).toBe(1);
  });

  test("only the script's own newline before a marker is dropped: a command's empty lines stay", () => {
    const tag = "t2";
    const { log, out } = recorder(tag, 1);
    for (const l of ["a", "", "", "", M(tag, 0, 0)]) out.line("stdout", l);
    for (const l of ["", M(tag, 0, 0)]) out.line("stderr", l);
    out.end();
    expect(log).toEqual(["stdout:a", "stdout:", "stdout:"]);
  });

  test("a failing command: the next command never starts in the log, and running names the failed one", () => {
    const tag = "t3";
    const { log, out } = recorder(tag, 3);
    for (const s of ["stdout", "stderr"] as const) out.line(s, M(tag, 0, 0));
    out.line("stderr", "boom");
    for (const s of ["stdout", "stderr"] as const) out.line(s, M(tag, 1, 2));
    out.end();
    expect(log).toEqual(["$ 1", "stderr:boom"]);
    expect(out.running).toBe(1);
  });

  test("a step stopped between a command's two markers: held lines still reach the log under their command, and running names it", () => {
    const tag = "t4";
    const { log, out } = recorder(tag, 2);
    out.line("stdout", M(tag, 0, 0));
    out.line("stdout", "early");
    out.line("stdout", "");
    out.end();
    expect(log).toEqual(["$ 1", "stdout:early", "stdout:"]);
    expect(out.running).toBe(1);
  });

  test("a line imitating a marker of another tag, or out of turn, is output", () => {
    const tag = "t5";
    const { log, out } = recorder(tag, 2);
    out.line("stdout", M("other", 0, 0));
    out.line("stdout", M(tag, 1, 0));
    expect(log).toEqual([`stdout:${M("other", 0, 0)}`, `stdout:${M(tag, 1, 0)}`]);
  });
});

describe("the step script", () => {
  test("runs the commands in order in one shell, stops at the first failure with its status, and the log reads in command order", async () => {
    const tag = newStepTag();
    const commands = ["echo one; echo one-err >&2; printf 'no newline'", "echo two-err >&2; sleep 0.05; echo two; printf 'x\\n\\n'", "exit 7", "echo never"];
    const [, , script, ...args] = stepScriptArgv(tag, commands);
    const proc = Bun.spawn(["sh", "-c", script!, ...args], { stdout: "pipe", stderr: "pipe" });
    const { log, out } = recorder(tag, commands.length);
    const pumpLines = async (stream: "stdout" | "stderr", body: ReadableStream<Uint8Array>) => {
      const text = await new Response(body).text();
      const lines = text.split("\n");
      if (lines.at(-1) === "") lines.pop();
      for (const l of lines) out.line(stream, l);
    };
    // stderr whole first: the worst order for the log.
    await pumpLines("stderr", proc.stderr);
    await pumpLines("stdout", proc.stdout);
    out.end();
    expect(await proc.exited).toBe(7);
    const cut = (i: number) => log.indexOf(`$ ${i}`);
    expect(log.slice(0, cut(1)).sort()).toEqual(["stderr:one-err", "stdout:no newline", "stdout:one"]);
    expect(log.slice(cut(1) + 1, cut(2)).sort()).toEqual(["stderr:two-err", "stdout:", "stdout:two", "stdout:x"]);
    expect(log.slice(cut(2) + 1)).toEqual([]);
    expect(log).not.toContain("$ 3");
    expect(out.running).toBe(2);
  });
});
