#!/usr/bin/env bun
/**
 * `ops` entry point: argv → the command table (src/commands.ts). Unknown commands and flags get a
 * one-line error and exit code 2; `ops --help` and `ops <command> --help` print usage.
 */
import { parseArgs } from "node:util";
import { COMMANDS } from "./commands";
import { EXIT, SIDES, type Command, type CommandIO, type FlagSpec } from "./commands/types";
import { ConfigError } from "./core/config";
import { OpsError } from "./core/errors";
import { VERSION } from "./version";

function findCommand(argv: string[]): { command: Command; rest: string[] } | null {
  const two = argv.slice(0, 2).join(" ");
  const byTwo = COMMANDS.find((c) => c.name === two);
  if (byTwo && argv.length >= 2) return { command: byTwo, rest: argv.slice(2) };
  const byOne = COMMANDS.find((c) => c.name === argv[0]);
  return byOne ? { command: byOne, rest: argv.slice(1) } : null;
}

/** Edit distance (insert, delete, substitute, swap two neighbours) between two short words. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The command a mistyped name most likely meant: within two edits (one for short names), or a unique prefix. */
export function closest(typed: string, names: readonly string[]): string | null {
  let best: { name: string; d: number } | null = null;
  for (const n of names) {
    const dist = distance(typed, n);
    if (dist <= (n.length <= 4 ? 1 : 2) && (!best || dist < best.d)) best = { name: n, d: dist };
  }
  if (best) return best.name;
  const prefixed = names.filter((n) => n.startsWith(typed) && typed.length >= 3);
  return prefixed.length === 1 ? prefixed[0] : null;
}

export function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const groups = SIDES.map(({ side, heading }) => {
    const lines = COMMANDS.filter((c) => c.side === side).map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
    return `${heading}:\n${lines.join("\n")}`;
  });
  return `ops ${VERSION}: a self-hosted operations platform in one binary.

Usage: ops <command> [flags]

Commands:

${groups.join("\n\n")}

Run 'ops <command> --help' for a command's flags.

Exit codes: 0 ok, 1 failed, 2 bad usage, 3 not signed in or token refused,
4 server unreachable, 5 denied.
`;
}

export function commandHelp(c: Command): string {
  const flags = Object.entries(c.flags ?? {});
  const left = (n: string, f: FlagSpec) => `${f.short ? `-${f.short}, ` : ""}--${n}${f.value ? ` ${f.value}` : ""}`;
  const width = Math.max(10, ...flags.map(([n, f]) => left(n, f).length));
  const flagLines = flags.map(([n, f]) => {
    return `  ${left(n, f).padEnd(width)}  ${f.description}${f.env ? ` [${f.env}]` : ""}`;
  });
  flagLines.push(`  ${"--help".padEnd(width)}  Show this help`);
  return `Usage: ops ${c.name}${c.usage ? ` ${c.usage}` : ""}

${c.summary}.${c.description ? `\n\n${c.description}` : ""}

Flags:
${flagLines.join("\n")}
`;
}

/** Run `argv` (without the executable) and return the exit code. */
export async function runCli(argv: string[], io: CommandIO): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    if (argv[0] === "help" && argv[1]) return runCli([...argv.slice(1), "--help"], io);
    io.stdout(topHelp());
    return argv.length === 0 ? EXIT.usage : EXIT.ok;
  }
  if (argv[0] === "--version" || argv[0] === "-v") {
    io.stdout(`ops ${VERSION}\n`);
    return EXIT.ok;
  }
  const found = findCommand(argv);
  if (!found) {
    const group = COMMANDS.filter((c) => c.name.startsWith(`${argv[0]} `));
    if (group.length > 0 && (argv.length === 1 || argv[1] === "--help")) {
      io.stdout(`Usage: ops ${argv[0]} <command>\n\n${group.map((c) => `  ${c.name.padEnd(28)}  ${c.summary}`).join("\n")}\n`);
      return argv.length === 1 ? EXIT.usage : EXIT.ok;
    }
    const name = group.length > 0 ? `${argv[0]} ${argv[1]}` : argv[0];
    const near = closest(name, COMMANDS.map((c) => c.name));
    io.stderr(`ops: unknown command "${name}".${near ? ` Did you mean 'ops ${near}'?` : ""} Run 'ops --help' for the list.\n`);
    return EXIT.usage;
  }
  const { command, rest } = found;
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(commandHelp(command));
    return EXIT.ok;
  }
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const [name, f] of Object.entries(command.flags ?? {})) {
    options[name] = { type: f.type };
    if (f.short) options[name].short = f.short;
    if (f.multiple) options[name].multiple = true;
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options, strict: true, allowPositionals: true });
  } catch (e) {
    const msg = (e as Error).message.split("\n")[0].replace(/\. To specify a positional argument.*$/, "");
    io.stderr(`ops ${command.name}: ${msg}. Run 'ops ${command.name} --help'.\n`);
    return EXIT.usage;
  }
  if (parsed.positionals.length > (command.maxArgs ?? 0)) {
    io.stderr(`ops ${command.name}: unexpected argument "${parsed.positionals[command.maxArgs ?? 0]}". Run 'ops ${command.name} --help'.\n`);
    return EXIT.usage;
  }
  try {
    return await command.run({ ...io, flags: parsed.values as Record<string, string | boolean | string[] | undefined>, args: parsed.positionals });
  } catch (e) {
    if (e instanceof ConfigError) {
      io.stderr(`ops: bad configuration: ${e.message}\n`);
      return EXIT.usage;
    }
    if (e instanceof OpsError) {
      io.stderr(`ops ${command.name}: ${e.message}\n`);
      return EXIT.failure;
    }
    io.stderr(`ops ${command.name}: ${(e as Error)?.message ?? String(e)}\n`);
    return EXIT.failure;
  }
}

if (import.meta.main) {
  const code = await runCli(process.argv.slice(2), {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
  });
  // `serve` never returns; every other command ends here.
  process.exit(code);
}
