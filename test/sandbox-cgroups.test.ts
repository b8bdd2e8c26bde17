/**
 * Memory controller detection (src/adapters/sandbox/cgroups.ts) from given mount tables: none
 * mounted, v2 without the memory controller, and this machine's own (a writable group must be
 * found here: the runtime test relies on it); the pids hierarchy (pids.ts) found the same way.
 * Emptying a group (group-end.ts): every process killed, those that left the process group too,
 * and a process the kernel will not let die named once the bound ran out.
 */
import { describe, test, expect } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { detectMemoryController, joinArgv, joinFile, type MemoryCgroup } from "../src/adapters/sandbox/cgroups";
import { createPidsGroup, pidsHierarchy, type PidsGroup } from "../src/adapters/sandbox/pids";
import { GroupNotEmptyError } from "../src/adapters/sandbox/group-end";
import { freezerMissing, holdInKernel } from "./support/host-processes";
import { until } from "./runtime-fixtures";

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

/** Live (not zombie) processes among `pids`. */
const alive = (pids: readonly number[]) => pids.filter((pid) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8")));
const procsOf = (g: { dir: string }) => (existsSync(`${g.dir}/cgroup.procs`) ? readFileSync(`${g.dir}/cgroup.procs`, "utf8").split("\n").filter(Boolean).map(Number) : []);

/** 20 processes in sessions of their own (out of the process group's reach) and the shell's own sleep, all in `group`. */
async function populate(group: MemoryCgroup | PidsGroup): Promise<number[]> {
  const file = "procsFile" in group ? group.procsFile : group.joinFile!;
  Bun.spawn([...joinArgv(file), "/bin/sh", "-c", "i=0; while [ $i -lt 20 ]; do setsid sleep 4000 </dev/null >/dev/null 2>&1 & i=$((i+1)); done; exec sleep 4000"], { stdout: "ignore", stderr: "ignore" });
  return until("21 processes in the group", () => procsOf(group).length === 21 && procsOf(group), 10_000, 10);
}

describe("emptying a group (decision 0511)", () => {
  test("empty() kills every process of a memory group and resolves only once none is left; remove() then removes it", async () => {
    const r = detectMemoryController();
    if (!r.ok) throw new Error(r.reason);
    const cg = r.controller.create(`empty-test-${process.pid}`, 1 << 27);
    try {
      const inside = await populate(cg);
      await cg.empty();
      expect(procsOf(cg)).toEqual([]);
      expect(alive(inside)).toEqual([]);
      await cg.remove();
      expect(existsSync(cg.dir)).toBe(false);
    } finally {
      await cg.remove();
    }
  });

  test("the same for a process limit's group of its own", async () => {
    const attempt = createPidsGroup(`empty-test-${process.pid}`, 64, { under: "ops-sandboxes" });
    if (!attempt.group) throw new Error(attempt.reason);
    const g = attempt.group;
    try {
      if (!g.joinFile) throw new Error("a group of its own has a join file");
      const inside = await populate(g);
      await g.empty();
      expect(procsOf(g)).toEqual([]);
      expect(alive(inside)).toEqual([]);
    } finally {
      await g.remove();
    }
    expect(existsSync(g.dir)).toBe(false);
  });

  test.skipIf(freezerMissing() !== null)("a process the kernel keeps alive past the bound: empty() rejects naming it and the group, which stays until it is gone", async () => {
    const r = detectMemoryController();
    if (!r.ok) throw new Error(r.reason);
    const cg = r.controller.create(`empty-held-${process.pid}`, 1 << 27);
    const inside = await populate(cg);
    const held = await holdInKernel(inside[0]!);
    try {
      const started = Date.now();
      const err = await cg.empty().then(() => null, (e: unknown) => e);
      expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
      expect(err).toBeInstanceOf(GroupNotEmptyError);
      expect((err as GroupNotEmptyError).pids).toEqual([inside[0]!]);
      expect((err as Error).message).toBe(`1 process(es) of the sandbox were still alive 5 s after they were killed (pid ${inside[0]}, cgroup ${cg.dir}); a process in uninterruptible sleep (state D) ignores SIGKILL until the kernel wakes it`);
      expect(alive(inside.slice(1))).toEqual([]);
      await cg.remove();
      expect(existsSync(cg.dir)).toBe(true);
    } finally {
      await held.release();
    }
    await cg.empty();
    await cg.remove();
    expect(existsSync(cg.dir)).toBe(false);
  }, 30_000);
});
