/**
 * `ops restart`: ask the `ops serve` of a data dir to re-execute its binary (SIGHUP) and wait until
 * the new image answers /readyz. The server writes `run/ops.pid` ("<pid> <started-at ms>") at
 * start; the pid stays the same across the exec, the start time changes. Running replicas are
 * handed to the new image and keep answering (docs/decisions/0390).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../core/config";
import { EXIT, SERVER_FLAGS, envOverrides, type Command } from "./types";

export function pidFile(dataDir: string): string {
  return path.join(dataDir, "run", "ops.pid");
}

export function writePidFile(dataDir: string, startedAt: number): void {
  mkdirSync(path.join(dataDir, "run"), { recursive: true });
  writeFileSync(pidFile(dataDir), `${process.pid} ${startedAt}\n`);
}

export function readPidFile(dataDir: string): { pid: number; startedAt: number } | null {
  const f = pidFile(dataDir);
  if (!existsSync(f)) return null;
  const [pid, startedAt] = readFileSync(f, "utf8").trim().split(" ").map(Number);
  return Number.isInteger(pid) && pid > 1 ? { pid, startedAt } : null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Send SIGHUP to the server of `dataDir` and wait (up to `timeoutMs`) for its new image to be ready. */
export async function restartServer(dataDir: string, readyUrl: string, timeoutMs = 60_000): Promise<{ pid: number; ms: number }> {
  const before = readPidFile(dataDir);
  if (!before || !alive(before.pid)) throw new Error(`no ops serve is running on ${dataDir} (no live pid in ${pidFile(dataDir)})`);
  const t0 = performance.now();
  process.kill(before.pid, "SIGHUP");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await Bun.sleep(50);
    const now = readPidFile(dataDir);
    if (!now || now.startedAt === before.startedAt) {
      if (!alive(before.pid)) throw new Error(`ops serve (pid ${before.pid}) exited instead of restarting; see its log`);
      continue;
    }
    try {
      const r = await fetch(readyUrl, { signal: AbortSignal.timeout(2000) });
      if (r.status === 200) return { pid: now.pid, ms: Math.round(performance.now() - t0) };
    } catch {
      // not listening yet
    }
  }
  throw new Error(`ops serve did not come back within ${timeoutMs / 1000} s`);
}

export const restartCommand: Command = {
  name: "restart",
  side: "server",
  summary: "Restart the running ops serve in place (SIGHUP: drain, re-exec the binary, same ports)",
  usage: "[--data-dir DIR] [--listen HOST:PORT]",
  description:
    "Signals the ops serve of the data dir (its pid is in run/ops.pid) to drain and re-execute the binary at its path, which is how a new binary (ops self-update, a package upgrade) takes over; waits until /readyz answers. The process id stays the same, so systemd sees no restart (systemctl reload ops runs this). Running apps are handed to the new image and keep running; only ops's own listeners are down while it starts.",
  flags: { "data-dir": SERVER_FLAGS["data-dir"], listen: SERVER_FLAGS.listen },
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    const host = config.listen.host === "0.0.0.0" ? "127.0.0.1" : config.listen.host === "::" ? "[::1]" : config.listen.host.includes(":") ? `[${config.listen.host}]` : config.listen.host;
    const r = await restartServer(config.dataDir, `http://${host}:${config.listen.port}/readyz`);
    ctx.stdout(`ops serve (pid ${r.pid}) restarted and ready in ${r.ms} ms\n`);
    return EXIT.ok;
  },
};
