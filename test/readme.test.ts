/** The README stays true: set-up commands, and a configuration table listing every variable. */
import { test, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { CONFIG_VARIABLES } from "../src/core/config";
import { COMMANDS } from "../src/commands";
import { README, renderConfigTable, withCurrentTable } from "../scripts/readme-config";
import { commandsInOrder, readmeRows, withCurrentCommands } from "../scripts/readme-commands";

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

test("the commands table has every command once, with its side, in the order ops --help groups them", () => {
  const rows = readmeRows(readme).map((r) => `${r.name} ${r.side}`);
  expect(rows).toEqual(commandsInOrder().map((c) => `${c.name} ${c.side}`));
  expect(withCurrentCommands(readme)).toBe(readme);
});

test("the CLI guide's command table lists every client command and only those", () => {
  const guide = readFileSync(require("node:path").resolve(import.meta.dir, "../docs/guide/cli.md"), "utf8");
  const rows = guide.split("\n").filter((l) => l.startsWith("| `ops "));
  const listed = new Set<string>();
  for (const row of rows) {
    const cell = row.split(" | ")[0];
    const [first, ...alternatives] = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const words = first.replace(/^ops /, "").split(" ").filter((w) => /^[a-z][a-z-]*$/.test(w));
    listed.add(words.join(" "));
    for (const alt of alternatives) listed.add(`${words[0]} ${alt}`);
  }
  const client = COMMANDS.filter((c) => c.side === "client").map((c) => c.name);
  expect([...listed].sort()).toEqual([...client].sort());
});

test("the user guide and CONTRIBUTING.md name only commands ops has, and link only files that exist", () => {
  const { readdirSync, existsSync } = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  const root = path.resolve(import.meta.dir, "..");
  const docs = [...readdirSync(path.join(root, "docs/guide")).map((f) => path.join(root, "docs/guide", f)), path.join(root, "CONTRIBUTING.md")];
  const names = COMMANDS.map((c) => c.name);
  const unknown: string[] = [];
  for (const file of docs) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/`ops ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g)) {
      const [one, two] = [m[1], m[2]];
      const known = names.includes(`${one} ${two}`) || names.includes(one) || names.some((n) => n.startsWith(`${one} `));
      if (!known) unknown.push(`${path.basename(file)}: ops ${one}${two ? ` ${two}` : ""}`);
    }
    for (const m of text.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)) {
      if (/^https?:/.test(m[1])) continue;
      if (!existsSync(path.resolve(path.dirname(file), m[1]))) unknown.push(`${path.basename(file)}: link ${m[1]}`);
    }
  }
  expect(unknown).toEqual([]);
});

test("the publish-cli lines the README and the CLI guide show name the version npm run build bakes in, and every git push pushes HEAD to a branch", () => {
  const path = require("node:path") as typeof import("node:path");
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dir, "../package.json"), "utf8")) as { version: string };
  const guide = readFileSync(path.resolve(import.meta.dir, "../docs/guide/cli.md"), "utf8");
  const versions = [readme, guide].flatMap((text) => [...text.matchAll(/dist\/ops admin publish-cli --file dist\/ops\s+--version (\S+?)`?\s/g)].map((m) => m[1]));
  expect(versions.length).toBeGreaterThanOrEqual(3);
  expect(new Set(versions)).toEqual(new Set([pkg.version]));
  // A plain `git init` names its branch master (unless configured): `main` alone would not push.
  const pushes = [...readme.matchAll(/`git push (http\S+) (\S+?)`/g)].map((m) => m[2]);
  expect(pushes.length).toBeGreaterThanOrEqual(2);
  for (const refspec of pushes) expect(refspec).toStartWith("HEAD:");
});
