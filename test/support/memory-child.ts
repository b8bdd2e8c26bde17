/**
 * A real `ops serve` child process whose memory a test measures apart from the test runner (which
 * holds bun's runner, the senders and other suites' leftovers): the data dir is prepared
 * in-process by `prepare` (projects and tokens through the services), then served by the child.
 * `peakSince` resets the child's peak RSS through /proc/<pid>/clear_refs (ops runs as root in CI,
 * and a process may always reset its own children's counter as their owner).
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, freePort, tempDir, waitFor, type TestApp } from "../harness";

const MAIN = path.resolve(import.meta.dir, "../../src/main.ts");

/** A field of /proc/<pid>/status in bytes: the current RSS or its peak since the last reset. */
export function procStatus(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no ${field} for ${pid}`);
  return Number(m[1]) * 1024;
}

export interface MemoryChild<T> {
  base: string;
  pid: number;
  /** What `prepare` returned (tokens, usually). */
  prepared: T;
  /** Reset the peak RSS to the current RSS. */
  resetPeak(): void;
  /** Stop the child (by its pid) and remove its data dir. */
  stop(): Promise<void>;
}

/** Prepare a data dir with `prepare`, then serve it from a child `ops serve` on a loopback port. */
export async function serveMemoryChild<T>(prepare: (t: TestApp) => Promise<T>): Promise<MemoryChild<T>> {
  const dataDir = tempDir("ops-memory-");
  const prep = await createTestApp({ dataDir });
  const prepared = await prepare(prep);
  await prep.close();
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], {
    env: { ...process.env, OPS_LOG_LEVEL: "warn", OPS_INGRESS_LISTEN: "off", OPS_BOOTSTRAP_EMAIL: "owner@ops.test", OPS_BOOTSTRAP_PASSWORD: "owner-password-for-tests" },
    stdout: "ignore",
    stderr: "inherit",
  });
  await waitFor(`${base}/readyz`);
  return {
    base,
    pid: child.pid,
    prepared,
    resetPeak: () => writeFileSync(`/proc/${child.pid}/clear_refs`, "5"),
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
