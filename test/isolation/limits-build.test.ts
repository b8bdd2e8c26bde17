/**
 * The hostile repository, limits (DESIGN §6 "Limits"; issue 19 finding 5): build commands that try
 * to take the host's processes, fill /tmp, escape through syscalls a build has no use for, or
 * push an oversized image. Pushed with the real `git` CLI, built for real with ops as root (as CI
 * runs), with small limits set for the test.
 *
 * The fork bomb's processes are looked for at the moment its build is recorded ended (issue 40),
 * by a marker on their command line that no other suite's process carries. `OPS_ISOLATION_REPEAT=N`
 * runs the whole file N times over, each round on an app of its own, to show that holds under
 * load rather than by luck.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { attachDisk, mountsUnder } from "../../src/adapters/sandbox/disk";
import { sweepBuildDisks } from "../../src/domains/builds/disk";
import type { TestApp } from "../harness";
import { buildsApp, buildWorld, drain, getBuild, logText, manualBuild, SAMPLE_APP, type BuildWorld } from "../builds-fixtures";
import { pushTree } from "./files-support";
import { processesRunning } from "../support/host-processes";
import { sandboxArgv } from "../../src/adapters/sandbox/bwrap";
import { findSandboxTools } from "../../src/adapters/sandbox/users";
import { memoryHierarchies } from "../../src/adapters/sandbox/cgroups";
import { pidsHierarchy } from "../../src/adapters/sandbox/pids";
import { builds } from "../../src/domains/builds/tables";
import { FINAL_STATES } from "../../src/domains/builds/model";

const PIDS = 64;
const PTRACE_NR = process.arch === "arm64" ? 117 : 101;
const MOUNT_NR = process.arch === "arm64" ? 40 : 165;
/** io_uring_setup ("fd" when it made a ring), then io_uring_enter and io_uring_register on fd -1 (EBADF when allowed): the same numbers on x86_64 and aarch64. */
const IO_URING = `perl -e '$p = "\\0" x 120; $r = syscall(425, 4, $p); print "io_uring_setup=" . ($r < 0 ? "-1 errno=" . ($!+0) : "fd") . "\\n"; $r = syscall(426, -1, 0, 0, 0, 0, 0); print "io_uring_enter errno=" . ($!+0) . "\\n"; $r = syscall(427, -1, 0, 0, 0); print "io_uring_register errno=" . ($!+0) . "\\n"'`;
const TMP_MB = 16;
const DISK_MB = 64;

const REPEAT = Math.max(1, Number(process.env.OPS_ISOLATION_REPEAT ?? 1));

const toml = (build: string[]) => `[services.web]\nbuild = ${JSON.stringify(build)}\noutput = "dist"\nstart = "node server.js"\nport = 3000\n`;
const dist = ["mkdir -p dist", "cp server.js dist/"];

/** Each branch's build commands; `marker` is the fork bomb's sleep, a number of seconds no other process on the host sleeps. */
const branches = (marker: string): Record<string, string[]> => ({
  // A fork bomb probe: thousands of long-lived processes, far past the cap.
  "fork-bomb": [`n=0; while [ $n -lt 3000 ]; do sleep ${marker} & n=$((n+1)); done; echo started $n`],
  // Within the cap: a few dozen processes are fine.
  "some-processes": [...dist, "n=0; while [ $n -lt 20 ]; do sleep 1 & n=$((n+1)); done; wait; echo started $n"],
  // Past the /tmp tmpfs (OPS_SANDBOX_TMP_MB=16), then within it.
  "tmp-full": [...dist, `head -c ${TMP_MB * 2 * 1024 * 1024} /dev/zero > /tmp/fill.bin || { echo "write failed"; exit 7; }`],
  "tmp-fits": [...dist, `head -c ${(TMP_MB / 2) * 1024 * 1024} /dev/zero > /tmp/fill.bin && echo "wrote $(stat -c %s /tmp/fill.bin)"`],
  // Syscalls a build has no use for: a user namespace (root-like powers inside it), ptrace, mount.
  seccomp: [
    ...dist,
    "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status",
    "unshare -r true; echo unshare=$?",
    "unshare -r mount -t tmpfs none /tmp; echo unshare-mount=$?",
    `perl -e '$r = syscall(${PTRACE_NR}, 0, 0, 0, 0); print "ptrace=$r errno=" . ($!+0) . "\\n"'`,
    `perl -e 'my ($s, $t, $f) = ("none", "/tmp", "tmpfs"); $r = syscall(${MOUNT_NR}, $s, $t, $f, 0, 0); print "mount=$r errno=" . ($!+0) . "\\n"'`,
    IO_URING,
  ],
  // 100 MiB into the checkout with OPS_BUILD_MAX_DISK_MB=64.
  "disk-full": [...dist, "head -c 104857600 /dev/zero > big.bin"],
  // 3 MiB that do not compress, with OPS_IMAGE_MAX_MB=1.
  "big-image": [...dist, "head -c 3145728 /dev/urandom > dist/blob.bin"],
});

/** How many live processes on the host sleep for `marker` seconds. */
const sleeping = (marker: string) => processesRunning(["sleep", marker]).length;

/**
 * The cgroups of builds this process started since `since` (epoch ms) that are still there: memory
 * groups below ops's own, pids groups under ops-builds/, both named `…ops-build-work-<pid>-<ms in base 36>`.
 */
function buildGroupsLeft(since: number): string[] {
  const named = new RegExp(`ops-build-work-${process.pid}-([0-9a-z]+)(-pids)?$`);
  const dirs = memoryHierarchies().found.map((h) => h.own);
  const pids = pidsHierarchy();
  if (!("reason" in pids)) dirs.push(path.join(pids.own, "ops-builds"));
  const ours = (name: string) => parseInt(named.exec(name)?.[1] ?? "0", 36) >= since;
  return dirs.flatMap((d) => (existsSync(d) ? readdirSync(d).filter(ours).map((n) => path.join(d, n)) : []));
}

for (let round = 1; round <= REPEAT; round++) describe(REPEAT > 1 ? `round ${round} of ${REPEAT}` : "limits", () => suite());

function suite(): void {
  let t: TestApp;
  let w: BuildWorld;
  const ids: Record<string, number> = {};
  const marker = String(3_000_000 + Math.floor(Math.random() * 6_000_000));
  /** The fork bomb's processes still on the host in the first turn that saw its build recorded ended. */
  let atRecordedEnd: number | null = null;
  const started = Date.now();

  beforeAll(async () => {
    t = await buildsApp({ OPS_SANDBOX_PIDS: String(PIDS), OPS_SANDBOX_TMP_MB: String(TMP_MB), OPS_IMAGE_MAX_MB: "1", OPS_BUILD_MAX_DISK_MB: String(DISK_MB) });
    w = await buildWorld(t);
    for (const [branch, build] of Object.entries(branches(marker))) {
      await pushTree(w.local.remote, branch, { "server.js": SAMPLE_APP["server.js"]!, "ops.toml": toml(build) });
      ids[branch] = (await manualBuild(w, branch)).id;
    }
    // The build's row is read between the builds' own awaits: the first turn that sees it final is its report.
    const watch = setInterval(() => {
      if (atRecordedEnd !== null) return;
      const row = t.core.db.select({ status: builds.status }).from(builds).where(eq(builds.id, ids["fork-bomb"]!)).get();
      if (row && (FINAL_STATES as readonly string[]).includes(row.status)) atRecordedEnd = sleeping(marker);
    }, 1);
    try {
      await drain(t);
    } finally {
      clearInterval(watch);
    }
  }, 300_000);

  afterAll(async () => {
    w?.local.remove();
    await t?.close();
  });

  describe("processes (OPS_SANDBOX_PIDS)", () => {
    test("the default is 512 per sandbox", async () => {
      const { loadConfig } = await import("../../src/core/config");
      expect(loadConfig({}, {}, "/").sandboxPids).toBe(512);
    });

    test("a fork bomb stays under the cap, the build fails saying so, and nothing of it is left on the host when the build is recorded ended", async () => {
      const b = await getBuild(w, ids["fork-bomb"]!);
      const log = await logText(w, b.id);
      expect(b.status).toBe("failed");
      expect(b.failure_kind).toBe("build");
      expect(log).toContain(`process limit ${PIDS} (cgroup-v`);
      expect(b.error).toContain(`hit the process limit of ${PIDS} (OPS_SANDBOX_PIDS)`);
      expect(log).not.toContain("started 3000");
      expect(log).toContain("Cannot fork");
      expect(atRecordedEnd).toBe(0);
      expect(sleeping(marker)).toBe(0);
      // The host still forks.
      const p = Bun.spawn(["true"]);
      expect(await p.exited).toBe(0);
    });

    test("a build under the cap is not disturbed", async () => {
      const b = await getBuild(w, ids["some-processes"]!);
      expect(b.status).toBe("healthy");
      expect(await logText(w, b.id)).toContain("started 20");
    });

    test("every build's cgroups are removed once it ended", () => {
      expect(buildGroupsLeft(started)).toEqual([]);
    });
  });

  describe("/tmp (OPS_SANDBOX_TMP_MB)", () => {
    test("a build's /tmp is a sized tmpfs: writing past it fails with ENOSPC", async () => {
      const b = await getBuild(w, ids["tmp-full"]!);
      const log = await logText(w, b.id);
      expect(b.status).toBe("failed");
      expect(log).toContain("No space left on device");
      expect(log).toContain("write failed");
    });

    test("within the size it works", async () => {
      const b = await getBuild(w, ids["tmp-fits"]!);
      expect(b.status).toBe("healthy");
      expect(await logText(w, b.id)).toContain(`wrote ${(TMP_MB / 2) * 1024 * 1024}`);
    });
  });

  describe("seccomp and no_new_privs", () => {
    test("a build runs with no_new_privs under a filter; unshare -r, ptrace, mount and io_uring fail with EPERM", async () => {
      const b = await getBuild(w, ids.seccomp!);
      const log = await logText(w, b.id);
      expect(b.status).toBe("healthy");
      expect(log).toMatch(/NoNewPrivs:\s+1/);
      expect(log).toMatch(/Seccomp:\s+2/);
      expect(log).toContain("unshare failed: Operation not permitted");
      expect(log).toContain("unshare=1");
      expect(log).toContain("unshare-mount=1");
      expect(log).toContain("ptrace=-1 errno=1");
      expect(log).toContain("mount=-1 errno=1");
      expect(log).toContain("io_uring_setup=-1 errno=1");
      expect(log).toContain("io_uring_enter errno=1");
      expect(log).toContain("io_uring_register errno=1");
    });

    test("control: without the filter, the same sandbox lets unshare -r, ptrace and io_uring through (so the test above can fail)", () => {
      const tools = findSandboxTools();
      if (typeof tools === "string") throw new Error(tools);
      const argv = sandboxArgv(tools, { mounts: [], chdir: "/", seccomp: false }, ["/bin/sh", "-c", `unshare -r true; echo unshare=$?; perl -e '$r = syscall(${PTRACE_NR}, 0, 0, 0, 0); print "ptrace=$r\\n"'; ${IO_URING}`]);
      const p = Bun.spawnSync(argv, { env: { PATH: "/usr/bin:/bin" } });
      expect(p.stdout.toString()).toMatch(/^unshare=0\nptrace=0\nio_uring_setup=fd\nio_uring_enter errno=9\nio_uring_register errno=(9|22)\n$/);
    });
  });

  describe("image size (OPS_IMAGE_MAX_MB)", () => {
    test("an image above the cap is refused before the push, with a clear build error", async () => {
      const b = await getBuild(w, ids["big-image"]!);
      expect(b.status).toBe("failed");
      expect(b.failure_kind).toBe("build");
      expect(b.error).toMatch(/^the image is 3\.\d MiB, above the limit of 1 MiB \(OPS_IMAGE_MAX_MB\)/);
      expect(b.image_digest ?? null).toBeNull();
    });
  });

  describe("build dir disk (OPS_BUILD_MAX_DISK_MB)", () => {
    test("a build writing past the cap fails saying the build dir is full; the data disk is untouched", async () => {
      const b = await getBuild(w, ids["disk-full"]!);
      const log = await logText(w, b.id);
      expect(log).toContain(`disk cap ${DISK_MB} MiB on the build dir (an ext4 image on a loop device)`);
      expect(b.status).toBe("failed");
      expect(log).toContain("No space left on device");
      expect(b.error).toContain(`the build dir is full: it may hold ${DISK_MB} MiB (OPS_BUILD_MAX_DISK_MB)`);
    });

    test("every build's file system is unmounted and its image deleted once it ended", () => {
      const runDir = path.join(t.dataDir, "run");
      expect(mountsUnder(runDir)).toEqual([]);
      const disks = path.join(runDir, "build-disks");
      expect(existsSync(disks) ? readdirSync(disks) : []).toEqual([]);
    });

    test("the start-up sweep removes the disk a stopped ops left to a build that ended", async () => {
      const id = ids["some-processes"]!;
      const dir = path.join(t.dataDir, "run", "builds", String(id));
      const image = path.join(t.dataDir, "run", "build-disks", `${id}.img`);
      mkdirSync(dir, { recursive: true });
      expect(await attachDisk(dir, image, 16)).toEqual({ how: "ext4-loop", reason: null });
      expect(mountsUnder(dir)).toEqual([dir]);
      await sweepBuildDisks(t.core);
      expect(mountsUnder(dir)).toEqual([]);
      expect(existsSync(image)).toBe(false);
    });
  });
}
