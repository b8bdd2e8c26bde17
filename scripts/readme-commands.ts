/**
 * The README's command table follows the command table (src/commands.ts): one row per command,
 * grouped by side in the order `ops --help` uses, each with its side. The prose of each row is the
 * README's own; `bun scripts/readme-commands.ts` rewrites the rows' order and side column (a new
 * command gets its summary as a starting text) and test/readme.test.ts fails when they differ.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { COMMANDS } from "../src/commands";
import { SIDES } from "../src/commands/types";
import { README } from "./readme-config";

export const BEGIN = "<!-- commands-table:begin (rows follow src/commands.ts; scripts/readme-commands.ts) -->";
export const END = "<!-- commands-table:end -->";

/** The commands in table order: by side (as SIDES lists them), then as src/commands.ts lists them. */
export function commandsInOrder() {
  return SIDES.flatMap(({ side }) => COMMANDS.filter((c) => c.side === side));
}

/** The rows of the README's table: command name, side, and what it does. */
export function readmeRows(readme: string): { name: string; side: string; text: string }[] {
  const a = readme.indexOf(BEGIN);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README.md has no ${BEGIN} … ${END} block`);
  const rows: { name: string; side: string; text: string }[] = [];
  for (const line of readme.slice(a + BEGIN.length, b).split("\n")) {
    const m = /^\| `ops ([^`]+)` \| (\w+) \| (.*) \|$/.exec(line);
    if (m) rows.push({ name: m[1], side: m[2], text: m[3] });
  }
  return rows;
}

/** README text with the table's rows in the command table's order and sides. */
export function withCurrentCommands(readme: string): string {
  const known = new Map(readmeRows(readme).map((r) => [r.name, r.text]));
  const rows = commandsInOrder().map((c) => `| \`ops ${c.name}\` | ${c.side} | ${known.get(c.name) ?? `${c.summary}.`} |`);
  const table = ["| Command | Side | What it does |", "| --- | --- | --- |", ...rows].join("\n");
  return `${readme.slice(0, readme.indexOf(BEGIN) + BEGIN.length)}\n${table}\n${readme.slice(readme.indexOf(END))}`;
}

if (import.meta.main) {
  writeFileSync(README, withCurrentCommands(readFileSync(README, "utf8")));
  console.log("README.md command table updated");
}
