/**
 * `bun run build` → `dist/ops`: one self-contained executable (scripts/compile.ts: migrations and
 * the console bundle embedded). Migrations
 * are embedded through src/core/db/migrations.generated.ts, so the build first checks that the
 * manifest is current and stops if it is not.
 *
 *   bun build.ts [--version 1.2.3] [--outfile path/to/ops] [--target bun-linux-arm64] [--release-key release.pub.pem]
 *
 * The version baked in (OPS_BUILD_VERSION, printed by `ops version`) is package.json's unless
 * `--version` says otherwise. The binary reads no .env or bunfig.toml from the directory it runs
 * in: its configuration is OPS_* variables and flags only.
 */
import { parseArgs } from "node:util";
import { statSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import pkg from "./package.json";
import { compileOps } from "./scripts/compile";

const root = import.meta.dir;
const bun = process.execPath;

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    version: { type: "string" },
    outfile: { type: "string" },
    target: { type: "string" },
    "release-key": { type: "string" },
  },
  strict: true,
});

const version = values.version ?? pkg.version;
if (!/^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$/.test(version)) {
  console.error(`build: --version must look like 1.2.3 or 1.2.3-rc.1, got "${version}"`);
  process.exit(2);
}
const outfile = path.resolve(process.cwd(), values.outfile ?? path.join(root, "dist", "ops"));

function run(args: string[]): void {
  const r = Bun.spawnSync([bun, ...args], { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (r.exitCode !== 0) {
    console.error(`build: \`bun ${args.join(" ")}\` failed (exit ${r.exitCode})`);
    process.exit(1);
  }
}

run(["scripts/embed-migrations.ts", "--check"]);

mkdirSync(path.dirname(outfile), { recursive: true });
const started = performance.now();
try {
  // The release key `ops self-update` pins (docs/decisions/0388).
  const releaseKey = values["release-key"] ? readFileSync(path.resolve(process.cwd(), values["release-key"]), "utf8") : undefined;
  await compileOps({ outfile, version, target: values.target, releaseKey });
} catch (e) {
  console.error(`build: ${(e as Error).message}`);
  process.exit(1);
}

const size = statSync(outfile).size;
console.log(`built ${path.relative(process.cwd(), outfile) || outfile} (ops ${version}, ${(size / (1024 * 1024)).toFixed(1)} MiB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
