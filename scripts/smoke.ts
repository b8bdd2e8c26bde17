/**
 * Smoke test of a compiled binary, as CI runs it: `ops serve` on an empty temp data dir, started
 * from another (empty) directory, must become ready, serve OpenAPI listing its routes, and exit 0
 * on SIGTERM with sound databases.
 *
 * Usage: bun scripts/smoke.ts [path/to/ops]   (default dist/ops)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Database } from "bun:sqlite";

const binary = path.resolve(process.argv[2] ?? path.join(import.meta.dir, "..", "dist", "ops"));
const cwd = mkdtempSync(path.join(tmpdir(), "ops-smoke-cwd-"));
const data = mkdtempSync(path.join(tmpdir(), "ops-smoke-data-"));

function fail(message: string): never {
  console.error(`smoke: FAILED: ${message}`);
  process.exit(1);
}

const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
const port = probe.port as number;
probe.stop(true);
const base = `http://127.0.0.1:${port}`;

const child = Bun.spawn([binary, "serve", "--data-dir", path.join(data, "data"), "--listen", `127.0.0.1:${port}`], { cwd, stdout: "ignore", stderr: "pipe" });
try {
  const deadline = Date.now() + 30_000;
  let ready = false;
  while (!ready && Date.now() < deadline) {
    if (child.exitCode !== null) fail(`ops serve exited with ${child.exitCode}: ${await new Response(child.stderr).text()}`);
    try {
      ready = (await fetch(`${base}/readyz`)).status === 200;
    } catch {
      // Not listening yet.
    }
    if (!ready) await Bun.sleep(100);
  }
  if (!ready) fail("/readyz did not answer 200 within 30 s");
  console.log("smoke: /readyz 200");

  const doc = (await (await fetch(`${base}/api/docs/json`)).json()) as { paths?: Record<string, Record<string, unknown>> };
  const routes = Object.entries(doc.paths ?? {}).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
  for (const must of ["GET /health", "GET /readyz"]) if (!routes.includes(must)) fail(`/api/docs/json does not list ${must}`);
  console.log(`smoke: /api/docs/json lists ${routes.length} routes`);
} finally {
  if (child.exitCode === null) child.kill("SIGTERM");
}
const code = await Promise.race([child.exited, Bun.sleep(30_000).then(() => "timeout" as const)]);
if (code === "timeout") {
  child.kill("SIGKILL");
  fail("ops serve did not exit within 30 s of SIGTERM");
}
if (code !== 0) fail(`ops serve exited with ${code} after SIGTERM: ${await new Response(child.stderr).text()}`);
for (const db of ["ops.db", "telemetry.db"]) {
  const d = new Database(path.join(data, "data", db), { readonly: true });
  const r = d.query("PRAGMA integrity_check").get() as { integrity_check: string };
  d.close();
  if (r.integrity_check !== "ok") fail(`${db} integrity_check: ${r.integrity_check}`);
}
console.log("smoke: SIGTERM exit 0, databases sound");
rmSync(cwd, { recursive: true, force: true });
rmSync(data, { recursive: true, force: true });
// Exit explicitly: the child's stderr pipe would otherwise keep the event loop alive.
process.exit(0);
