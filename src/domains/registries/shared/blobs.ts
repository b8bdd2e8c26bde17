/**
 * The domain's side of the blob store. Order (STYLE.md rule 8): write the blob first, then the
 * rows; a failed transaction deletes the blob it created unless something else refers to it; the
 * orphan GC (`registries.gc`) sweeps whatever a crash left behind.
 *
 * `registry_blobs` records every blob this domain wrote, so the GC only ever considers those: the
 * blob store is shared with other domains, whose blobs it never touches.
 */
import { eq, sql } from "drizzle-orm";
import type { Core } from "../../../core/core";
import type { Queryable } from "../../../core/db/client";
import type { BlobSource, PutOptions, PutResult } from "../../../core/blobs/store";
import { registryBlobs } from "./tables";

/** Put bytes into the blob store and record them in the ledger. */
export async function putBlob(core: Core, source: BlobSource, opts: PutOptions = {}): Promise<PutResult> {
  const res = await core.blobs.put(source, opts);
  recordBlob(core, res.digest, res.size);
  return res;
}

/** Record a blob in the ledger (idempotent); `q` is the transaction to do it in, if any. */
export function recordBlob(core: Core, digest: string, size: number, q: Queryable = core.db): void {
  q.insert(registryBlobs).values({ digest, size, createdAt: core.clock.now() }).onConflictDoNothing().run();
}

/** True when any row of this domain refers to `digest`. */
export function isBlobReferenced(q: Queryable, digest: string): boolean {
  const row = q.get<{ n: number }>(sql`SELECT
      (SELECT count(*) FROM package_files WHERE digest = ${digest}) +
      (SELECT count(*) FROM oci_blob_links WHERE digest = ${digest}) +
      (SELECT count(*) FROM oci_uploads WHERE blob_digest = ${digest}) AS n`);
  return (row?.n ?? 0) > 0;
}

/**
 * Undo a blob write after a failed transaction: delete it when this write created it and no row
 * refers to it. A blob that existed before (dedup) is left alone.
 */
export async function discardBlob(core: Core, put: Pick<PutResult, "digest" | "created">): Promise<void> {
  if (!put.created) return;
  if (isBlobReferenced(core.db, put.digest)) return;
  core.db.delete(registryBlobs).where(eq(registryBlobs.digest, put.digest)).run();
  await core.blobs.delete(put.digest);
}
