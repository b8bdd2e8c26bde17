/**
 * `registries.gc`: the orphan sweep (STYLE.md rule 8). Hourly it
 * - ends blob upload sessions idle for a day (rows, append files, their lone blobs);
 * - deletes append files no session owns (left by a crash);
 * - deletes blobs from the ledger that no row refers to any more, once they are an hour old, so a
 *   publish that has written its blob but not yet its rows is never swept.
 */
import { readdirSync, statSync, rmSync } from "node:fs";
import path from "node:path";
import { eq, lt, sql } from "drizzle-orm";
import type { Core } from "../../../core/core";
import { isUuid } from "../../../core/ids";
import { registryBlobs } from "./tables";
import { ociUploads } from "../oci/tables";
import { dropUpload, uploadsDir } from "../oci/uploads";

export const GC_TASK = "registries.gc";
export const GC_GRACE_MS = 60 * 60 * 1000;
export const UPLOAD_IDLE_MS = 24 * 60 * 60 * 1000;

export interface GcReport {
  uploadsExpired: number;
  strayFiles: number;
  blobsDeleted: number;
}

export async function collectGarbage(core: Core): Promise<GcReport> {
  const now = core.clock.now();
  const report: GcReport = { uploadsExpired: 0, strayFiles: 0, blobsDeleted: 0 };

  for (const row of core.db.select().from(ociUploads).where(lt(ociUploads.updatedAt, now - UPLOAD_IDLE_MS)).all()) {
    await dropUpload(core, row);
    report.uploadsExpired++;
  }

  const dir = uploadsDir(core);
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // No upload ever needed an append file.
  }
  for (const name of names) {
    const p = path.join(dir, name);
    const owned = isUuid(name) && core.db.select({ id: ociUploads.id }).from(ociUploads).where(eq(ociUploads.id, name)).get();
    if (owned) continue;
    try {
      if (Date.now() - statSync(p).mtimeMs >= GC_GRACE_MS) {
        rmSync(p, { force: true });
        report.strayFiles++;
      }
    } catch {
      // Gone already.
    }
  }

  const orphans = core.db.all<{ digest: string }>(sql`
    SELECT b.digest FROM registry_blobs b
     WHERE b.created_at <= ${now - GC_GRACE_MS}
       AND NOT EXISTS (SELECT 1 FROM package_files f WHERE f.digest = b.digest)
       AND NOT EXISTS (SELECT 1 FROM oci_blob_links l WHERE l.digest = b.digest)
       AND NOT EXISTS (SELECT 1 FROM oci_uploads u WHERE u.blob_digest = b.digest)`);
  for (const { digest } of orphans) {
    core.db.delete(registryBlobs).where(eq(registryBlobs.digest, digest)).run();
    await core.blobs.delete(digest);
    report.blobsDeleted++;
  }
  if (report.uploadsExpired + report.strayFiles + report.blobsDeleted > 0) core.log.info("registries gc", { ...report });
  return report;
}
