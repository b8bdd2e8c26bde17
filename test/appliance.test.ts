/**
 * ops on a VM: `ops install --dry-run --root DIR` writes the layout a real install writes and its
 * unit passes `systemd-analyze verify` (in a root holding the OS's own systemd units, as a VM's
 * does); `ops uninstall` removes the unit and keeps the data. `ops restart` re-executes a running
 * `ops serve` in place: same pid, same port, and a request loop fails only while ops's own listener
 * was down.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir } from "./harness";
import { runCli } from "../src/main";
import { readPidFile } from "../src/commands/restart";

const ROOT = path.resolve(import.meta.dir, "..");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function ops(args: string[], env: Record<string, string> = {}) {
  let out = "";
  let err = "";
  const code = await runCli(args, { stdout: (s) => (out += s), stderr: (s) => (err += s), env, cwd: ROOT });
  return { code, out, err };
}

describe("ops install --dry-run --root", () => {
  test("writes the binary, data dir, configuration and unit; systemd-analyze verify passes; uninstall keeps the data", async () => {
    const root = tempDir("ops-install-root-");
    dirs.push(root);
    // A VM's root has the OS's units (sysinit.target, network-online.target …) beside ops's.
    mkdirSync(path.join(root, "usr", "lib"), { recursive: true });
    cpSync("/usr/lib/systemd", path.join(root, "usr", "lib", "systemd"), { recursive: true, verbatimSymlinks: true });
    symlinkSync("usr/lib", path.join(root, "lib"));
    const r = await ops(["install", "--dry-run", "--root", root, "--binary", process.execPath]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const bin = path.join(root, "usr/local/bin/ops");
    expect(statSync(bin).mode & 0o777).toBe(0o755);
    expect(readFileSync(bin).equals(readFileSync(process.execPath))).toBe(true);
    expect(statSync(path.join(root, "var/lib/ops")).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(root, "etc/ops/ops.env")).mode & 0o777).toBe(0o640);
    expect(readFileSync(path.join(root, "etc/ops/ops.env"), "utf8")).toContain("OPS_DATA_DIR=/var/lib/ops");
    const unit = readFileSync(path.join(root, "etc/systemd/system/ops.service"), "utf8");
    for (const line of ["User=root", "RuntimeDirectory=ops-sandbox", "ExecStart=/usr/local/bin/ops serve", "Restart=on-failure", "EnvironmentFile=/etc/ops/ops.env", "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/ops", "Delegate=yes"]) expect(unit).toContain(`${line}\n`);
    // Left out on purpose: they break bubblewrap's namespaces and /proc (docs/decisions/0386).
    for (const bad of ["User=ops", "CapabilityBoundingSet", "RestrictNamespaces", "PrivateUsers", "ProtectKernelTunables", "SystemCallFilter", "MemoryDenyWriteExecute"]) expect(unit).not.toContain(bad);

    const verify = Bun.spawnSync(["systemd-analyze", "verify", `--root=${root}`, "ops.service"], { stdout: "pipe", stderr: "pipe" });
    expect(`${verify.stdout}${verify.stderr}`).toBe("");
    expect(verify.exitCode).toBe(0);
    // The check can fail: a unit naming a binary that is not there does not pass.
    rmSync(bin);
    const broken = Bun.spawnSync(["systemd-analyze", "verify", `--root=${root}`, "ops.service"], { stdout: "pipe", stderr: "pipe" });
    expect(broken.exitCode).not.toBe(0);
    expect(broken.stderr.toString()).toContain("/usr/local/bin/ops");

    // A second install keeps the operator's configuration.
    writeFileSync(path.join(root, "etc/ops/ops.env"), "OPS_LISTEN=0.0.0.0:8080\n");
    const again = await ops(["install", "--dry-run", "--root", root, "--binary", process.execPath]);
    expect(again.out).toContain("kept as it was");
    expect(readFileSync(path.join(root, "etc/ops/ops.env"), "utf8")).toBe("OPS_LISTEN=0.0.0.0:8080\n");

    writeFileSync(path.join(root, "var/lib/ops/ops.db"), "data");
    const un = await ops(["uninstall", "--dry-run", "--root", root]);
    expect(un.code).toBe(0);
    expect(existsSync(path.join(root, "etc/systemd/system/ops.service"))).toBe(false);
    expect(readFileSync(path.join(root, "var/lib/ops/ops.db"), "utf8")).toBe("data");
    expect(existsSync(path.join(root, "etc/ops/ops.env"))).toBe(true);
  }, 60_000);

  test("bad usage: --root without --dry-run; a dry run without --root", async () => {
    expect((await ops(["install", "--root", "/tmp/x", "--binary", process.execPath])).code).toBe(2);
    expect((await ops(["install", "--dry-run", "--binary", process.execPath])).code).toBe(2);
  });
});

describe("ops restart", () => {
  test("re-executes ops serve in place: same pid and port; requests fail only while the listener was down", async () => {
    const dataDir = tempDir("ops-restart-");
    dirs.push(dataDir);
    const port = freePort();
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", OPS_DATA_DIR: dataDir, OPS_LISTEN: `127.0.0.1:${port}`, OPS_INGRESS_LISTEN: "off", OPS_BOOTSTRAP_PASSWORD: "restart-test-password", OPS_LOG_LEVEL: "warn" };
    const server = Bun.spawn([process.execPath, "src/main.ts", "serve"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
    try {
      const url = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 200; i++) {
        const ok = await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false);
        if (ok) break;
        await Bun.sleep(100);
      }
      const before = readPidFile(dataDir)!;
      expect(before.pid).toBe(server.pid);
      // A bounded request loop, one request at a time, each outcome with its time.
      const results: Array<{ at: number; ok: boolean }> = [];
      let stop = false;
      const loop = (async () => {
        while (!stop && results.length < 20_000) {
          const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000), keepalive: false, headers: { connection: "close" } }).then((r) => r.status === 200, () => false);
          results.push({ at: performance.now(), ok });
        }
      })();
      await Bun.sleep(200);
      const r = await ops(["restart", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`]);
      const settled = results.length;
      while (results.length < settled + 50) await Bun.sleep(10);
      stop = true;
      await loop;
      expect(r.err).toBe("");
      expect(r.out).toMatch(new RegExp(`^ops serve \\(pid ${server.pid}\\) restarted and ready in \\d+ ms`));
      const after = readPidFile(dataDir)!;
      expect(after.pid).toBe(server.pid);
      expect(after.startedAt).toBeGreaterThan(before.startedAt);
      const h = await fetch(`${url}/health`);
      expect(h.status).toBe(200);
      // Failures form one stretch (the listener's downtime), with successes before and after it.
      const failed = results.map((x, i) => (x.ok ? -1 : i)).filter((i) => i >= 0);
      expect(results[0].ok).toBe(true);
      expect(results[results.length - 1].ok).toBe(true);
      if (failed.length > 0) {
        expect(failed[failed.length - 1] - failed[0] + 1).toBe(failed.length);
        const down = results[failed[failed.length - 1]].at - results[Math.max(0, failed[0] - 1)].at;
        console.log(`ops restart: ${results.length} requests, ${failed.length} failed during ${Math.round(down)} ms of listener downtime`);
      }
    } finally {
      server.kill("SIGTERM");
      await server.exited;
    }
  }, 60_000);
});
