/**
 * The native image of a build as it is pushed: its base resolved at clone time and read again by
 * digest at push time (image-base.ts, decision 0620), the output packed on top of it (image.ts),
 * and the size cap (decision 0228) applied to what the push stores, so a base's layers, which
 * the push links from the base's repository and never stores again, count only once: in the base.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import type { PushBlob } from "../registries/service";
import { packImage, packedBlobs, ImageRefused } from "./image";
import { baseImageAt, resolveBaseImage, type BaseImage, type BaseRef } from "./image-base";
import { StepFailure, type BuildPlan } from "./plan";
import type { BuildRow } from "./rows";

/** The clone's look at a base: resolved to its digest, said in the log (which base, by digest). */
export async function resolveBase(core: Core, project: string, ref: string, say: (text: string) => void): Promise<BaseRef> {
  const base = await resolveBaseImage(core, project, ref);
  say(`base ${ref} is ${base.repository}@${base.digest} (${base.layers.length} layer(s), ${base.os}/${base.architecture})`);
  return { ref, repository: base.repository, digest: base.digest };
}

/** Pack the output under /app, on the plan's base when it has one; the blobs and manifest to push. */
export async function packNative(core: Core, row: BuildRow, plan: BuildPlan, outputDir: string, imageDir: string, say: (text: string) => void): Promise<{ blobs: PushBlob[]; manifest: { bytes: Uint8Array; mediaType: string } }> {
  mkdirSync(imageDir, { recursive: true, mode: 0o700 });
  let base: BaseImage | null = null;
  if (plan.base) base = await baseImageAt(core, row.project, plan.base);
  let packed;
  try {
    packed = await packImage({ outputDir, layerFile: path.join(imageDir, "layer.tar.gz"), start: plan.start!, port: plan.port, commit: row.commitSha, commitTime: row.commitTime, source: row.repo, base });
  } catch (e) {
    if (e instanceof ImageRefused) throw new StepFailure("build", e.message);
    throw e;
  }
  say(`packed ${packed.entries} entries into one layer (${packed.layer.size} bytes)`);
  if (base) say(`on base ${base.repository}@${base.digest}: its ${base.layers.length} layer(s) reused by digest, the app's layer on top; labelled dev.ops.runtime=engine`);
  return { blobs: packedBlobs(packed), manifest: packed.manifest };
}

/** An image above `OPS_IMAGE_MAX_MB` (the layers and config the push stores, compressed) is refused before it reaches the registry (decision 0228). */
export function refuseOversized(core: Core, blobs: readonly PushBlob[]): void {
  const cap = core.config.imageMaxMb;
  const total = blobs.filter((b) => !("mount" in b.source)).reduce((n, b) => n + b.size, 0);
  if (cap > 0 && total > cap * 1024 * 1024) {
    throw new StepFailure("build", `the image is ${(total / 1024 / 1024).toFixed(1)} MiB, above the limit of ${cap} MiB (OPS_IMAGE_MAX_MB): make the build's output smaller`);
  }
}
