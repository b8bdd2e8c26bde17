/**
 * `npm run db:generate -- --name <what>`: drizzle-kit generates the SQL for the schema change
 * (every argument is passed on to `drizzle-kit generate`), then the embedded manifest
 * (src/core/db/migrations.generated.ts) is rewritten so the binary carries the new migration.
 */
import path from "node:path";

const root = path.resolve(import.meta.dir, "..");
const drizzleKit = path.join(root, "node_modules", ".bin", "drizzle-kit");

function run(cmd: string[]): void {
  const r = Bun.spawnSync(cmd, { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (r.exitCode !== 0) process.exit(r.exitCode ?? 1);
}

run([drizzleKit, "generate", ...process.argv.slice(2)]);
run([process.execPath, path.join(root, "scripts", "embed-migrations.ts")]);
