/**
 * The unpacker's path rules (unpack.ts): where an image's root goes, which tar paths and link
 * targets stay inside it, and the modes files and directories get. Pure functions, tested through
 * the unpacker (test/runtime-unpack.test.ts).
 */
import { writeSync } from "node:fs";
import path from "node:path";

/** The unpack failed as a whole (a bad digest, a corrupt or oversized layer): nothing was left behind. */
export class UnpackError extends Error {}

/** The directory an image's root is (or will be) unpacked into. */
export function imageRoot(imagesDir: string, digest: string): string {
  const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
  if (!m) throw new UnpackError(`"${digest}" is not a sha256 digest`);
  return path.join(imagesDir, `sha256-${m[1]}`);
}

/** Root-relative parts of a tar path, or null when it climbs out (`..`) or holds a NUL. */
export function safeParts(p: string): string[] | null {
  if (p.includes("\0")) return null;
  const parts = p.split("/").filter((s) => s !== "" && s !== ".");
  if (parts.some((s) => s === "..")) return null;
  return parts;
}

/**
 * The symlink target to create for a link at `parts` pointing to `target`, or null when it
 * leaves the root. Absolute targets are made relative to the link's directory.
 */
export function safeLinkTarget(parts: string[], target: string): string | null {
  if (target === "" || target.includes("\0")) return null;
  const dir = parts.slice(0, -1);
  const resolved: string[] = target.startsWith("/") ? [] : [...dir];
  for (const seg of target.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (resolved.length === 0) return null;
      resolved.pop();
    } else resolved.push(seg);
  }
  if (!target.startsWith("/")) return target;
  const rel = path.posix.relative(dir.join("/") || ".", resolved.join("/") || ".");
  return rel === "" ? "." : rel;
}

export const fileMode = (mode: number | undefined) => ((mode ?? 0o644) & 0o777) | 0o444 | ((mode ?? 0) & 0o100 ? 0o111 : 0);
export const dirMode = (mode: number | undefined) => ((mode ?? 0o755) & 0o777) | 0o755;

/** Write all of `bytes` (writeSync may write less than asked). */
export function writeFully(fd: number, bytes: Buffer): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
}
