/** The README stays true: set-up commands, and a configuration table listing every variable. */
import { test, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { CONFIG_VARIABLES } from "../src/core/config";
import { COMMANDS } from "../src/commands";
import { README, renderConfigTable, withCurrentTable } from "../scripts/readme-config";

const readme = readFileSync(README, "utf8");

test("the configuration table lists every variable, as scripts/readme-config.ts renders it", () => {
  for (const v of CONFIG_VARIABLES) expect(readme).toContain(`| \`${v.name}\` | \`${v.default}\` | ${v.description} |`);
  expect(readme).toContain(renderConfigTable());
  expect(withCurrentTable(readme)).toBe(readme);
});

test("the set-up and test commands are there", () => {
  expect(readme).toContain("npm install && npm start");
  expect(readme).toContain("npm install && npm test");
});

test("every command is in the commands table", () => {
  for (const c of COMMANDS) expect(readme).toContain(`| \`ops ${c.name}\` |`);
});
