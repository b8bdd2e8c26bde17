/**
 * Memory controller detection (src/adapters/sandbox/cgroups.ts) from given mount tables: none
 * mounted, v2 without the memory controller, and this machine's own (a writable group must be
 * found here: the runtime test relies on it); the pids hierarchy (pids.ts) found the same way.
 */
import { describe, test, expect } from "bun:test";
import { detectMemoryController, joinArgv, joinFile } from "../src/adapters/sandbox/cgroups";
import { pidsHierarchy } from "../src/adapters/sandbox/pids";

describe("memory controller detection", () => {
  test("no cgroup mounted: not available, with the reason", () => {
    const r = detectMemoryController({ mountinfo: "22 27 0:21 / /proc rw,relatime - proc proc rw\n", selfCgroup: "0::/\n" });
    expect(r).toEqual({ ok: false, reason: "no cgroup v1 memory controller is mounted" });
  });

  test("a v2 hierarchy that offers no memory controller says so", () => {
    const r = detectMemoryController({ mountinfo: "41 31 0:38 / /nonexistent/cgroup2 rw,relatime - cgroup2 cgroup2 rw\n", selfCgroup: "0::/\n" });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toBe("cgroup v2 at /nonexistent/cgroup2 offers no memory controller; no cgroup v1 memory controller is mounted");
  });

  test("pids: v2 without the controller says so; v1's own pids hierarchy is taken, at ops's group in it", () => {
    const v2 = "41 31 0:38 / /nonexistent/cgroup2 rw,relatime - cgroup2 cgroup2 rw\n";
    expect(pidsHierarchy({ mountinfo: v2, selfCgroup: "0::/\n" })).toEqual({ reason: "cgroup v2 at /nonexistent/cgroup2 offers no pids controller; no cgroup v1 pids controller is mounted" });
    const v1 = v2 + "35 30 0:31 / /nonexistent/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n";
    expect(pidsHierarchy({ mountinfo: v1, selfCgroup: "5:pids:/user.slice/ops\n0::/\n" })).toEqual({ version: 1, own: "/nonexistent/cgroup/pids/user.slice/ops" });
  });

  test("this machine has a writable memory controller under ops's own group", () => {
    const r = detectMemoryController();
    if (!r.ok) throw new Error(r.reason);
    expect(r.controller.base.endsWith("/ops-replicas")).toBe(true);
  });

  test("a replica's join (given its cgroup.procs, as the runtime passes it) puts the shell and what it forks in the group; v1 joins through tasks", async () => {
    const r = detectMemoryController();
    if (!r.ok) throw new Error(r.reason);
    const cg = r.controller.create(`join-test-${process.pid}`, 1 << 27);
    try {
      expect(joinFile(cg.procsFile)).toBe(cg.version === 1 ? `${cg.dir}/tasks` : cg.procsFile);
      expect(joinFile(cg)).toBe(joinFile(cg.procsFile));
      const groupOf = (text: string) => text.split("\n").find((l) => (cg.version === 1 ? /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l) : l.startsWith("0::")))?.replace(/^\d+:[^:]*:/, "");
      const proc = Bun.spawn([...joinArgv(cg.procsFile), "/bin/sh", "-c", "cat /proc/self/cgroup; echo --; /bin/sh -c 'cat /proc/self/cgroup'"], { stdout: "pipe", stderr: "pipe" });
      const out = await new Response(proc.stdout).text();
      expect(await proc.exited).toBe(0);
      const [own, child] = out.split("--\n");
      expect(cg.dir.endsWith(groupOf(own)!)).toBe(true);
      expect(cg.dir.endsWith(groupOf(child)!)).toBe(true);
      const refused = Bun.spawn([...joinArgv("/proc/self/no-such-group/cgroup.procs"), "true"], { stdout: "pipe", stderr: "pipe" });
      expect(await refused.exited).toBe(125);
    } finally {
      await cg.remove();
    }
  });
});
