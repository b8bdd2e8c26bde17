/**
 * The compiled binary (build.ts): built once into a temp dir with its own version, alone in its
 * folder, then run from another working directory on an empty data dir. Kept apart from the other
 * suites because compiling takes a while.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { rmSync, readdirSync, existsSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir, waitFor, integrityOk } from "./harness";

const ROOT = path.resolve(import.meta.dir, "..");
const binDir = tempDir("ops-build-");
const binary = path.join(binDir, "ops");
const dirs = [binDir];
let buildOutput = "";

beforeAll(() => {
  const r = Bun.spawnSync([process.execPath, "build.ts", "--version", "9.8.7-test.1", "--outfile", binary], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  buildOutput = r.stdout.toString() + r.stderr.toString();
  if (r.exitCode !== 0) throw new Error(`build failed:\n${buildOutput}`);
}, 120_000);
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("build.ts", () => {
  test("checks the migration manifest, then writes one executable and prints its path and size", () => {
    expect(buildOutput).toContain("migration manifest is current");
    expect(buildOutput).toMatch(/built .*ops \(ops 9\.8\.7-test\.1, \d+\.\d MiB\)/);
    expect(readdirSync(binDir)).toEqual(["ops"]);
    expect(statSync(binary).mode & 0o111).not.toBe(0);
  });

  test("refuses a malformed --version", () => {
    const r = Bun.spawnSync([process.execPath, "build.ts", "--version", "latest", "--outfile", path.join(binDir, "never")], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain("--version");
    expect(existsSync(path.join(binDir, "never"))).toBe(false);
  });
});

describe("the binary", () => {
  test("`ops version` reports the version it was built with, from any directory", () => {
    const r = Bun.spawnSync([binary, "version"], { cwd: "/", stdout: "pipe", stderr: "pipe" });
    expect(r.stdout.toString()).toBe("ops 9.8.7-test.1\n");
    expect(r.exitCode).toBe(0);
  });

  test("`ops serve` from another directory on an empty data dir: ready, OpenAPI, SIGTERM exits 0, no .env read", async () => {
    const cwd = tempDir("ops-build-cwd-");
    const dataDir = path.join(tempDir("ops-build-data-"), "data");
    dirs.push(cwd, path.dirname(dataDir));
    // A stray .env in the working directory is not configuration: were it read, serve would stop
    // on the bad value.
    writeFileSync(path.join(cwd, ".env"), "OPS_LOG_LEVEL=verbose\n");
    const port = freePort();
    const child = Bun.spawn([binary, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], { cwd, stdout: "pipe", stderr: "pipe" });
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitFor(`${base}/readyz`);
      const health = (await (await fetch(`${base}/health`)).json()) as { version: string };
      expect(health.version).toBe("9.8.7-test.1");
      const doc = (await (await fetch(`${base}/api/docs/json`)).json()) as { info: { version: string }; paths: Record<string, unknown> };
      expect(doc.info.version).toBe("9.8.7-test.1");
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/health", "/readyz"]));
      // The API reference's viewer is in the binary: the page names no other host.
      const page = await (await fetch(`${base}/api/docs`)).text();
      expect(page).toContain('src="/api/docs/viewer.js"');
      expect(page).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
      const viewer = await fetch(`${base}/api/docs/viewer.js`);
      expect(viewer.status).toBe(200);
      expect((await viewer.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    expect(readdirSync(cwd)).toEqual([".env"]);
    expect(integrityOk(path.join(dataDir, "ops.db"))).toBe(true);
    expect(integrityOk(path.join(dataDir, "telemetry.db"))).toBe(true);
  }, 60_000);
});
