/**
 * The compiled server publishes itself as the CLI release for its own target when that target has
 * none, so the install line works on a fresh estate without `ops admin publish-cli`
 * (docs/decisions/0361). A source checkout (`bun src/main.ts`) has no binary to publish.
 */
import { statSync } from "node:fs";
import type { Core } from "../../core/core";
import { SYSTEM_ACTOR } from "../../core/audit";
import { VERSION } from "../../version";
import { cliReleases } from "./tables";
import { eq } from "drizzle-orm";
import { hostTarget, isKnownTarget, publishRelease, VERSION_PATTERN } from "./releases";
import type { CliReleaseResponse } from "./model";

/** The path of the running ops executable, or null when ops runs from source under bun. */
export function runningBinary(): string | null {
  // A compiled Bun executable serves its own modules from the embedded /$bunfs/ file system.
  if (!import.meta.url.includes("$bunfs")) return null;
  return process.execPath;
}

/**
 * Publish `binary` (default: the running executable) as `version` for this host's target, unless
 * a release for that target exists. Returns what was published, or null when nothing was.
 */
export async function publishOwnBinary(core: Core, binary: string | null = runningBinary(), version = VERSION): Promise<CliReleaseResponse | null> {
  const target = hostTarget();
  if (!binary || !isKnownTarget(target) || !VERSION_PATTERN.test(version)) return null;
  if (core.db.select({ id: cliReleases.id }).from(cliReleases).where(eq(cliReleases.target, target)).limit(1).get()) return null;
  const size = statSync(binary).size;
  if (size > core.config.maxReleaseBytes) {
    core.log.warn("the ops binary is larger than OPS_MAX_RELEASE_BYTES; not publishing it as the CLI release", { size, max: core.config.maxReleaseBytes });
    return null;
  }
  return publishRelease(core, { version, target, body: Bun.file(binary).stream() }, { ...SYSTEM_ACTOR, context: { op: "cli.self-publish" } });
}
