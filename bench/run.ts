/**
 * `npm run bench` runs every bench/<name>.bench.ts; `npm run bench -- health` runs one (several
 * names allowed). Options: --duration S (default 10), --connections N (default 50),
 * --threads N (default 2). Each benchmark prints one line of figures.
 */
import { parseArgs } from "node:util";
import { readdirSync } from "node:fs";
import path from "node:path";
import { createContext, type Benchmark } from "./lib";

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  options: {
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    threads: { type: "string", default: "2" },
  },
  allowPositionals: true,
  strict: true,
});

const all: Benchmark[] = [];
for (const file of readdirSync(import.meta.dir).filter((f) => f.endsWith(".bench.ts")).sort()) {
  const mod = (await import(path.join(import.meta.dir, file))) as Partial<Benchmark>;
  if (typeof mod.name !== "string" || typeof mod.run !== "function") throw new Error(`bench/${file} must export name, description and run(ctx)`);
  all.push(mod as Benchmark);
}

const unknown = positionals.filter((p) => !all.some((b) => b.name === p));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(", ")}; there are: ${all.map((b) => b.name).join(", ")}`);
  process.exit(2);
}
const chosen = positionals.length > 0 ? all.filter((b) => positionals.includes(b.name)) : all;
const load = { duration: Number(values.duration), connections: Number(values.connections), threads: Number(values.threads) };
for (const [k, v] of Object.entries(load)) {
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${k} must be a whole number of at least 1`);
    process.exit(2);
  }
}

const { ctx, cleanup } = createContext(load);
let failed = false;
try {
  for (const b of chosen) {
    try {
      console.log(await b.run(ctx));
    } catch (e) {
      failed = true;
      console.error(`${b.name}: failed: ${(e as Error).message}`);
    }
  }
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);
