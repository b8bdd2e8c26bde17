/**
 * A build dir's disk cap (`OPS_BUILD_MAX_DISK_MB`, decision 0230) around the builds' life cycle:
 * the clone step mounts a fresh file system of the cap's size as `run/builds/<id>/` before the
 * commit is written (src/adapters/sandbox/disk.ts), the end of a build unmounts it and deletes its
 * image, and the start-up sweep removes the images and mounts of builds that are no longer
 * working (and mounts again the image of one that is, after a reboot). A host that cannot do it
 * gets a line in the build log saying the cap is not enforced.
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { attachDisk, detachDisk, diskFull, diskImages, mountsUnder } from "../../adapters/sandbox/disk";
import { buildsIn } from "./rows";
import { WORKING_STATES } from "./model";

/** The build's work dir (clone, scratch, image files): `run/builds/<id>/`. */
export function buildDirOf(core: Core, buildId: number): string {
  return path.join(core.config.dataDir, "run", "builds", String(buildId));
}

function disksDir(core: Core): string {
  return path.join(core.config.dataDir, "run", "build-disks");
}

const imageOf = (core: Core, buildId: number | string) => path.join(disksDir(core), `${buildId}.img`);

/** Mount a fresh capped file system as the build's (empty) work dir; `log` gets the line saying so, or why not. */
export async function attachBuildDisk(core: Core, buildId: number, log: (level: "info" | "warn", text: string) => void): Promise<void> {
  const cap = core.config.buildMaxDiskMb;
  if (cap <= 0) return log("info", "no disk cap is set for builds (OPS_BUILD_MAX_DISK_MB=0)");
  const dir = buildDirOf(core, buildId);
  mkdirSync(dir, { recursive: true });
  const attempt = await attachDisk(dir, imageOf(core, buildId), cap);
  if (attempt.how) log("info", `disk cap ${cap} MiB on the build dir (an ext4 image on a loop device)`);
  else log("warn", `disk cap ${cap} MiB is NOT enforced: ${attempt.reason}`);
}

/** Unmount the build's file system and delete its image (nothing when it has none). */
export async function releaseBuildDisk(core: Core, buildId: number): Promise<void> {
  const image = imageOf(core, buildId);
  await detachDisk(buildDirOf(core, buildId), existsSync(image) ? image : null);
}

/** A sentence for a failed build whose dir hit the cap, or null. */
export function diskFullNote(core: Core, buildId: number): string | null {
  const dir = buildDirOf(core, buildId);
  if (core.config.buildMaxDiskMb <= 0 || mountsUnder(dir).length === 0 || !diskFull(dir)) return null;
  return `the build dir is full: it may hold ${core.config.buildMaxDiskMb} MiB (OPS_BUILD_MAX_DISK_MB)`;
}

/** At start-up: release the disks of builds that are no longer working; mount again those of working ones. */
export async function sweepBuildDisks(core: Core): Promise<void> {
  const working = new Set(buildsIn(core.db, WORKING_STATES).map((r) => String(r.id)));
  const runDir = path.join(core.config.dataDir, "run", "builds");
  const mounted = new Set(existsSync(runDir) ? mountsUnder(runDir).map((m) => path.relative(runDir, m).split("/")[0]!) : []);
  const images = diskImages(disksDir(core));
  for (const id of new Set([...mounted, ...images.keys()])) {
    if (!/^\d+$/.test(id)) continue;
    if (!working.has(id)) await detachDisk(path.join(runDir, id), images.get(id) ?? null);
    else if (!mounted.has(id) && images.has(id)) {
      mkdirSync(path.join(runDir, id), { recursive: true });
      await attachDisk(path.join(runDir, id), images.get(id)!, core.config.buildMaxDiskMb, { reuse: true });
    }
  }
}
