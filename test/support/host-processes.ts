/**
 * The host's processes as the isolation suites look at them: the live ones running a given command
 * line (what a sandbox left behind), and a process held in the kernel, deaf to SIGKILL, as a hung
 * disk or NFS server holds one in uninterruptible sleep (state D). To hold one, the test moves it
 * into a group of the cgroup v1 freezer and freezes that group (a frozen task sits in D state and
 * a pending SIGKILL waits until it is thawed), then lets it go with `release`. Needs root and a v1
 * freezer hierarchy, as CI's machine has; `freezerMissing()` says why not otherwise.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Live processes whose command line is exactly `argv` (a zombie's is empty), read synchronously. */
export function processesRunning(argv: readonly string[]): number[] {
  const want = argv.map((a) => `${a}\0`).join("");
  const out: number[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8") === want) out.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

const FREEZER = "/sys/fs/cgroup/freezer";

/** Why processes cannot be held here, or null. */
export function freezerMissing(): string | null {
  const mounted = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((l) => l.includes(` ${FREEZER} `) && / - cgroup \S+ \S*\bfreezer\b/.test(l));
  return mounted ? null : `no cgroup v1 freezer is mounted at ${FREEZER}`;
}

function pidsIn(dir: string): number[] {
  try {
    return readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Freeze `pid` in a freezer group of its own; `release` thaws it, kills it if it lives on, and removes the group. */
export async function holdInKernel(pid: number): Promise<{ release(): Promise<void> }> {
  const dir = path.join(FREEZER, `ops-test-held-${process.pid}-${pid}`);
  const state = path.join(dir, "freezer.state");
  mkdirSync(dir);
  writeFileSync(path.join(dir, "cgroup.procs"), String(pid));
  writeFileSync(state, "FROZEN");
  for (let i = 0; i < 200 && readFileSync(state, "utf8").trim() !== "FROZEN"; i++) await Bun.sleep(10);
  if (readFileSync(state, "utf8").trim() !== "FROZEN") throw new Error(`pid ${pid} did not freeze`);
  return {
    async release() {
      writeFileSync(state, "THAWED");
      for (let i = 0; i < 200 && pidsIn(dir).length > 0; i++) {
        for (const p of pidsIn(dir)) {
          try {
            process.kill(p, "SIGKILL");
          } catch {
            // Gone meanwhile.
          }
        }
        await Bun.sleep(10);
      }
      if (existsSync(dir)) rmdirSync(dir);
    },
  };
}
