/**
 * Memory controller detection (src/adapters/sandbox/cgroups.ts) from given mount tables: none
 * mounted, v2 without the memory controller, and this machine's own (a writable group must be
 * found here: the runtime test relies on it).
 */
import { describe, test, expect } from "bun:test";
import { detectMemoryController } from "../src/adapters/sandbox/cgroups";

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

  test("this machine has a writable memory controller under ops's own group", () => {
    const r = detectMemoryController();
    if (!r.ok) throw new Error(r.reason);
    expect(r.controller.base.endsWith("/ops-replicas")).toBe(true);
  });
});
