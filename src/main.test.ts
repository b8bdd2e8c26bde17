import { describe, test, expect, afterAll } from "bun:test";
import { rmSync, existsSync } from "node:fs";
import path from "node:path";
import { Database } from "bun:sqlite";
import { runCli } from "./main";
import { COMMANDS } from "./commands";
import { SIDES } from "./commands/types";
import { VERSION } from "./version";
import { MIGRATIONS } from "./core/db/migrations.generated";
import { tempDir } from "../test/harness";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function cli(argv: string[], env: Record<string, string> = {}, cwd = process.cwd()) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), env, cwd });
  return { code, stdout, stderr };
}

const oneLine = (s: string) => s.endsWith("\n") && !s.slice(0, -1).includes("\n");

describe("help", () => {
  test("--help lists every command and the exit codes", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toContain(`  ${c.name}`);
    expect(r.stdout).toContain("Usage: ops <command> [flags]");
    expect(r.stdout).toContain("Exit codes: 0 ok, 1 failed, 2 bad usage");
    expect(r.stderr).toBe("");
    expect((await cli(["help"])).code).toBe(0);
  });

  test("every command has a side and ops --help lists it under that side's heading", async () => {
    const r = await cli(["--help"]);
    const sections = r.stdout.split("\n\n");
    for (const c of COMMANDS) {
      const entry = SIDES.find((s) => s.side === c.side);
      expect(entry).toBeDefined();
      const section = sections.find((s) => s.startsWith(`${entry!.heading}:\n`));
      expect(section).toBeDefined();
      expect(section!.split("\n").filter((l) => l.trim().startsWith(`${c.name}  `))).toHaveLength(1);
    }
    const listed = sections.filter((s) => SIDES.some((e) => s.startsWith(`${e.heading}:\n`))).flatMap((s) => s.split("\n").slice(1));
    expect(listed).toHaveLength(COMMANDS.length);
  });

  test("no arguments prints the help and exits 2", async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain("Commands:");
  });

  test("ops serve --help shows the flags and the variables they override", async () => {
    const r = await cli(["serve", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: ops serve");
    expect(r.stdout).toMatch(/--data-dir DIR\s+Data directory \(default \.\/ops-data\) \[OPS_DATA_DIR\]/);
    expect(r.stdout).toMatch(/--listen HOST:PORT\s+.*\[OPS_LISTEN\]/);
    expect(r.stdout).toMatch(/--public-url URL\s+.*\[OPS_PUBLIC_URL\]/);
    expect(r.stdout).toContain("--help");
    expect((await cli(["help", "serve"])).stdout).toBe(r.stdout);
  });
});

describe("usage errors exit 2 with one line on stderr", () => {
  test("unknown command", async () => {
    const r = await cli(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    expect(r.stderr).not.toContain("Did you mean");
  });

  test("a mistyped command gets a did-you-mean", async () => {
    for (const [typed, meant] of [["lgos", "logs"], ["deplyo", "deploy"], ["whoam", "whoami"], ["admin create-projcet", "admin create-project"], ["rollbak", "rollback"]]) {
      const r = await cli(typed.split(" "));
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(true);
      expect(r.stderr).toContain(`Did you mean 'ops ${meant}'?`);
    }
  });

  test("unknown flag", async () => {
    const r = await cli(["migrate", "--colour"]);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toContain("ops migrate:");
    expect(r.stderr).toContain("--colour");
  });

  test("unexpected argument", async () => {
    const r = await cli(["version", "extra"]);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toContain('unexpected argument "extra"');
  });

  test("bad configuration names the variable", async () => {
    const dir = tempDir("ops-cli-");
    dirs.push(dir);
    const r = await cli(["migrate", "--data-dir", dir], { OPS_LOG_LEVEL: "verbose" });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toContain("bad configuration: OPS_LOG_LEVEL:");
  });
});

describe("commands", () => {
  test("ops version and ops --version print the version", async () => {
    expect(await cli(["version"])).toEqual({ code: 0, stdout: `ops ${VERSION}\n`, stderr: "" });
    expect(await cli(["--version"])).toEqual({ code: 0, stdout: `ops ${VERSION}\n`, stderr: "" });
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  test("ops migrate --data-dir X migrates both databases; again says up to date", async () => {
    const dir = path.join(tempDir("ops-cli-"), "nested", "data");
    dirs.push(path.dirname(path.dirname(dir)));
    const first = await cli(["migrate", "--data-dir", dir]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`ops.db: applied ${MIGRATIONS.ops.map((m) => m.name).join(", ")}`);
    const db = new Database(path.join(dir, "ops.db"), { readonly: true });
    const names = (db.query("SELECT name FROM _ops_migrations").all() as Array<{ name: string }>).map((r) => r.name);
    expect(names).toEqual(MIGRATIONS.ops.map((m) => m.name));
    db.close();
    expect(existsSync(path.join(dir, "telemetry.db"))).toBe(true);

    const again = await cli(["migrate", "--data-dir", dir]);
    expect(again).toEqual({ code: 0, stdout: "ops.db: up to date\ntelemetry.db: up to date\n", stderr: "" });
  });

  test("a relative --data-dir is taken from the working directory; OPS_DATA_DIR works too", async () => {
    const cwd = tempDir("ops-cli-cwd-");
    dirs.push(cwd);
    expect((await cli(["migrate", "--data-dir", "rel-data"], {}, cwd)).code).toBe(0);
    expect(existsSync(path.join(cwd, "rel-data", "ops.db"))).toBe(true);
    expect((await cli(["migrate"], { OPS_DATA_DIR: "env-data" }, cwd)).code).toBe(0);
    expect(existsSync(path.join(cwd, "env-data", "ops.db"))).toBe(true);
  });
});
