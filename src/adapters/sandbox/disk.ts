/**
 * A build dir's disk cap (DESIGN §6, Limits; decision 0230): when ops is root, the build dir is
 * the mount point of an ext4 file system of its own, made in a sparse image file of the cap's size
 * on a loop device, so a build that writes past `OPS_BUILD_MAX_DISK_MB` gets ENOSPC and the data
 * disk keeps the rest. The image grows only as the build writes; it is unmounted and deleted when
 * the build ends, and a start-up sweep removes what a stopped ops left. Mounted `nosuid,nodev`.
 * Not root, or no mkfs.ext4 / loop device: no cap, and the caller names it as not enforced.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync } from "node:fs";
import path from "node:path";
import { parseMountinfo } from "./cgroups";
import { runsAsRoot } from "./users";
import { DEFAULT_PATH } from "../runtime/process";

export type DiskAttempt = { how: "ext4-loop"; reason: null } | { how: null; reason: string };

/** Why this host cannot cap a build dir's disk use, or null when it can. */
export function diskCapUnsupported(): string | null {
  if (!runsAsRoot()) return "ops does not run as root (a loop mount needs root)";
  for (const tool of ["mkfs.ext4", "mount", "umount", "losetup"]) if (!Bun.which(tool, { PATH: DEFAULT_PATH })) return `${tool} is not installed (apt-get install e2fsprogs mount)`;
  if (!existsSync("/dev/loop-control")) return "this host has no loop devices (/dev/loop-control is missing)";
  return null;
}

async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const p = Bun.spawn(argv, { env: { PATH: DEFAULT_PATH, LC_ALL: "C" }, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out: (out + err).trim() };
}

/** Mount points at or under `dir` (deepest first). */
export function mountsUnder(dir: string): string[] {
  const abs = path.resolve(dir);
  return parseMountinfo(readFileSync("/proc/self/mountinfo", "utf8"))
    .map((m) => m.mountPoint)
    .filter((p) => p === abs || p.startsWith(`${abs}/`))
    .sort((a, b) => b.length - a.length);
}

/**
 * Make `image` (sparse, `capMb` MiB) an ext4 file system and mount it on `dir` (an existing,
 * empty directory). With `reuse`, an existing image is mounted as it is (a build that survived a
 * restart of ops, a project's dependency caches). `options` are mount options beside
 * `nosuid,nodev` (`discard` gives deleted blocks back to the data disk).
 */
export async function attachDisk(dir: string, image: string, capMb: number, opts: { reuse?: boolean; options?: readonly string[] } = {}): Promise<DiskAttempt> {
  const unsupported = diskCapUnsupported();
  if (unsupported) return { how: null, reason: unsupported };
  mkdirSync(path.dirname(image), { recursive: true, mode: 0o700 });
  if (!(opts.reuse && existsSync(image))) {
    rmSync(image, { force: true });
    // 256-byte inodes (mke2fs picks 128 below 512 MiB): nanosecond times, which the caches' trim orders by.
    const made = await run(["mkfs.ext4", "-q", "-F", "-m", "0", "-I", "256", "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard", image, `${capMb}M`]);
    if (made.code !== 0) {
      rmSync(image, { force: true });
      return { how: null, reason: `mkfs.ext4 failed: ${made.out}` };
    }
  }
  const mounted = await run(["mount", "-t", "ext4", "-o", ["loop", "nosuid", "nodev", ...(opts.options ?? [])].join(","), image, dir]);
  if (mounted.code !== 0) {
    if (!opts.reuse) rmSync(image, { force: true });
    return { how: null, reason: `the loop mount failed: ${mounted.out}` };
  }
  rmSync(path.join(dir, "lost+found"), { recursive: true, force: true });
  return { how: "ext4-loop", reason: null };
}

/** Unmount whatever is mounted at or under `dir` (lazily when busy) and delete `image`. */
export async function detachDisk(dir: string, image: string | null): Promise<void> {
  if (existsSync(dir)) {
    for (const m of mountsUnder(dir)) {
      if ((await run(["umount", m])).code !== 0) await run(["umount", "-l", m]);
    }
  }
  if (image) rmSync(image, { force: true });
}

/** True when the file system holding `dir` has less than 1 MiB left (a build that hit its cap). */
export function diskFull(dir: string): boolean {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize < 1024 * 1024;
  } catch {
    return false;
  }
}

/** Image files in `disksDir` by the build id they are named after (`<id>.img`). */
export function diskImages(disksDir: string): Map<string, string> {
  if (!existsSync(disksDir)) return new Map();
  return new Map(readdirSync(disksDir).filter((n) => n.endsWith(".img")).map((n) => [n.slice(0, -4), path.join(disksDir, n)]));
}
