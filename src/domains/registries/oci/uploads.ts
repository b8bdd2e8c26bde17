/**
 * Blob uploads (distribution spec "push"): monolithic (POST with `?digest=` or PUT with the whole
 * body), streamed (one PATCH, then an empty PUT: Docker, skopeo, crane) and chunked (several
 * PATCHes with `Content-Range`, resumable: `GET <location>` says how much arrived).
 *
 * Bytes never sit in memory. The first PATCH of a session (and any monolithic body) streams
 * straight into the blob store, which hashes as it writes; a later chunk turns the session into
 * an append file under `blobs/uploads/<id>`, which the closing PUT streams into the store. A
 * digest mismatch, a cancelled or an expired session leaves no blob and no row behind.
 */
import { createReadStream } from "node:fs";
import { open, rm, mkdir } from "node:fs/promises";
import { Readable } from "node:stream";
import path from "node:path";
import { eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import { isUuid, uuidv7 } from "../../../core/ids";
import { OpsError } from "../../../core/errors";
import { putBlob, discardBlob } from "../shared/blobs";
import { bodyTooLarge } from "../shared/body";
import type { PackageRow } from "../shared/claims";
import { ociUploads } from "./tables";
import { ociError } from "./access";
import { digestHex, linkBlob, linkedBlob, findRepository } from "./blobs";
import type { RegistryGrant } from "./token";
import { withKeyLock } from "../../../core/locks";

type UploadRow = typeof ociUploads.$inferSelect;

export function uploadsDir(core: Core): string {
  return path.join(core.config.dataDir, "blobs", "uploads");
}

function uploadFile(core: Core, id: string): string {
  if (!isUuid(id)) throw new Error("upload id is not a uuid");
  return path.join(uploadsDir(core), id);
}

function findUpload(core: Core, repo: PackageRow, id: string): UploadRow {
  const row = isUuid(id) ? core.db.select().from(ociUploads).where(eq(ociUploads.id, id)).get() : undefined;
  if (!row || row.packageId !== repo.id) throw ociError(404, "BLOB_UPLOAD_UNKNOWN", "No such upload in progress.", { upload: id });
  return row;
}

/** Response headers describing a session's progress. */
export function uploadHeaders(repo: PackageRow, row: Pick<UploadRow, "id" | "size">): Record<string, string> {
  return {
    location: `/v2/${repo.name}/blobs/uploads/${row.id}`,
    range: `0-${Math.max(0, row.size - 1)}`,
    "docker-upload-uuid": row.id,
    "docker-distribution-api-version": "registry/2.0",
  };
}

function hasBody(request: Request): boolean {
  const len = request.headers.get("content-length");
  if (len !== null) return Number(len) > 0;
  return request.body !== null && request.headers.get("transfer-encoding") !== null;
}

/** Append the request body to a file, never past `limit` bytes in total. Returns the bytes added. */
async function appendBody(file: string, request: Request, already: number, limit: number): Promise<number> {
  if (!request.body) return 0;
  const fh = await open(file, "a", 0o600);
  let added = 0;
  try {
    for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
      added += chunk.byteLength;
      if (already + added > limit) throw bodyTooLarge(limit);
      let off = 0;
      while (off < chunk.byteLength) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  return added;
}

/** Copy a stored blob into the session's append file (a second chunk arrived). */
async function materialise(core: Core, row: UploadRow): Promise<void> {
  const file = uploadFile(core, row.id);
  await mkdir(uploadsDir(core), { recursive: true });
  const fh = await open(file, "w", 0o600);
  try {
    const blob = row.blobDigest ? core.blobs.open(row.blobDigest) : null;
    if (blob) for await (const chunk of blob.stream() as unknown as AsyncIterable<Uint8Array>) await fh.write(chunk);
    await fh.sync();
  } finally {
    await fh.close();
  }
  const digest = row.blobDigest;
  core.db.update(ociUploads).set({ inFile: true, blobDigest: null, updatedAt: core.clock.now() }).where(eq(ociUploads.id, row.id)).run();
  // The intermediate blob is no longer the session's; drop it unless something else uses it.
  if (digest) await discardBlob(core, { digest, created: true });
}

/** Start a session (202), or finish at once: a mount (201) or a monolithic POST with `?digest=` (201). */
export async function startUpload(
  core: Core,
  repo: PackageRow,
  grant: RegistryGrant,
  query: { digest?: string; mount?: string; from?: string },
  request: Request,
): Promise<Response> {
  if (query.mount && query.from) {
    const from = findRepository(core.db, query.from);
    const hex = /^sha256:[0-9a-f]{64}$/.test(query.mount) ? query.mount.slice(7) : null;
    const link = from && hex && grant.access.get(query.from)?.has("pull") ? linkedBlob(core.db, from.id, hex) : null;
    if (link && hex && core.blobs.open(hex)) {
      linkBlob(core, core.db, repo.id, hex, link.size);
      return created(repo, query.mount);
    }
  }
  if (query.digest && hasBody(request)) {
    const hex = digestHex(query.digest);
    await storeStream(core, request.body!, hex, repo);
    return created(repo, query.digest);
  }
  const now = core.clock.now();
  const row = core.db.insert(ociUploads).values({ id: uuidv7(now), packageId: repo.id, size: 0, createdAt: now, updatedAt: now }).returning().get();
  return new Response(null, { status: 202, headers: { ...uploadHeaders(repo, row), "content-length": "0" } });
}

function created(repo: PackageRow, digest: string): Response {
  return new Response(null, {
    status: 201,
    headers: { location: `/v2/${repo.name}/blobs/${digest}`, "docker-content-digest": digest, "content-length": "0", "docker-distribution-api-version": "registry/2.0" },
  });
}

/** Stream a body into the store expecting `hex`; 400 DIGEST_INVALID (and nothing kept) on a mismatch. */
async function storeStream(core: Core, body: ReadableStream<Uint8Array>, hex: string, repo: PackageRow): Promise<void> {
  let put;
  try {
    put = await putBlob(core, body, { expectDigest: hex, maxBytes: core.config.maxBlobBytes });
  } catch (e) {
    if (e instanceof OpsError && e.code === "bad_request") throw ociError(400, "DIGEST_INVALID", "The uploaded content does not match the digest.", { digest: `sha256:${hex}` });
    if (e instanceof OpsError && e.code === "payload_too_large") throw ociError(413, "SIZE_INVALID", e.message);
    throw e;
  }
  linkBlob(core, core.db, repo.id, put.digest, put.size);
}

/** PATCH: append a chunk (202), 416 when `Content-Range` does not continue where the session is. */
export async function patchUpload(core: Core, repo: PackageRow, id: string, request: Request): Promise<Response> {
  return withKeyLock(core, "registries.uploads", id, async () => {
    const row = findUpload(core, repo, id);
    const cr = request.headers.get("content-range");
    if (cr !== null) {
      const m = /^(?:bytes[ =])?(\d+)-(\d+)$/.exec(cr.trim());
      if (!m || Number(m[1]) !== row.size || Number(m[2]) < Number(m[1])) {
        throw ociError(416, "RANGE_INVALID", `The chunk must start at byte ${row.size}.`, { range: cr }, uploadHeaders(repo, row));
      }
    }
    let size = row.size;
    if (row.size === 0 && !row.inFile && !row.blobDigest) {
      // The common case: the whole blob in one PATCH streams straight into the store.
      if (request.body) {
        let put;
        try {
          put = await putBlob(core, request.body, { maxBytes: core.config.maxBlobBytes });
        } catch (e) {
          if (e instanceof OpsError && e.code === "payload_too_large") throw ociError(413, "SIZE_INVALID", e.message);
          throw e;
        }
        size = put.size;
        core.db.update(ociUploads).set({ blobDigest: put.size > 0 ? put.digest : null, size, updatedAt: core.clock.now() }).where(eq(ociUploads.id, row.id)).run();
        if (put.size === 0) await discardBlob(core, put);
      }
    } else {
      if (!row.inFile) await materialise(core, row);
      try {
        size += await appendBody(uploadFile(core, row.id), request, row.size, core.config.maxBlobBytes);
      } catch (e) {
        if (e instanceof OpsError && e.code === "payload_too_large") throw ociError(413, "SIZE_INVALID", e.message);
        throw e;
      }
      core.db.update(ociUploads).set({ size, updatedAt: core.clock.now() }).where(eq(ociUploads.id, row.id)).run();
    }
    if (cr !== null) {
      const m = /(\d+)-(\d+)$/.exec(cr)!;
      if (size - row.size !== Number(m[2]) - Number(m[1]) + 1) throw ociError(400, "SIZE_INVALID", "The chunk's length does not match its Content-Range.", { range: cr });
    }
    return new Response(null, { status: 202, headers: { ...uploadHeaders(repo, { id: row.id, size }), "content-length": "0" } });
  });
}

/** PUT `?digest=`: close the session with an optional last chunk; 201, or 400 DIGEST_INVALID (nothing kept). */
export async function finishUpload(core: Core, repo: PackageRow, id: string, digest: string | undefined, request: Request): Promise<Response> {
  return withKeyLock(core, "registries.uploads", id, async () => {
    const row = findUpload(core, repo, id);
    if (!digest) throw ociError(400, "DIGEST_INVALID", "The closing PUT needs ?digest=sha256:…");
    const hex = digestHex(digest);
    const body = hasBody(request);
    try {
      if (!row.inFile && !row.blobDigest) {
        // Monolithic PUT (or an empty blob).
        await storeStream(core, body ? request.body! : new Blob([]).stream(), hex, repo);
      } else if (row.blobDigest && !body) {
        if (row.blobDigest !== hex) {
          await dropUpload(core, row);
          throw ociError(400, "DIGEST_INVALID", "The uploaded content does not match the digest.", { digest });
        }
        linkBlob(core, core.db, repo.id, hex, row.size);
      } else {
        if (!row.inFile) await materialise(core, row);
        const file = uploadFile(core, row.id);
        if (body) await appendBody(file, request, row.size, core.config.maxBlobBytes);
        await storeStream(core, Readable.toWeb(createReadStream(file)) as unknown as ReadableStream<Uint8Array>, hex, repo);
      }
    } catch (e) {
      if (e instanceof OpsError && e.details?.oci === "DIGEST_INVALID") await dropUpload(core, findUploadOrNull(core, row.id));
      throw e;
    }
    await dropUpload(core, findUploadOrNull(core, row.id), false);
    return created(repo, digest);
  });
}

function findUploadOrNull(core: Core, id: string): UploadRow | null {
  return core.db.select().from(ociUploads).where(eq(ociUploads.id, id)).get() ?? null;
}

/** Remove a session, its append file and (when `discard`) a blob only it referred to. */
export async function dropUpload(core: Core, row: UploadRow | null, discard = true): Promise<void> {
  if (!row) return;
  core.db.delete(ociUploads).where(eq(ociUploads.id, row.id)).run();
  await rm(uploadFile(core, row.id), { force: true });
  if (discard && row.blobDigest) await discardBlob(core, { digest: row.blobDigest, created: true });
}

/** GET on the upload URL: 204 with how much has arrived (to resume after a 416 or a break). */
export function uploadStatus(core: Core, repo: PackageRow, id: string): Response {
  const row = findUpload(core, repo, id);
  return new Response(null, { status: 204, headers: uploadHeaders(repo, row) });
}

/** DELETE on the upload URL: cancel (204). */
export async function cancelUpload(core: Core, repo: PackageRow, id: string): Promise<Response> {
  return withKeyLock(core, "registries.uploads", id, async () => {
    const row = findUpload(core, repo, id);
    await dropUpload(core, row);
    return new Response(null, { status: 204, headers: { "docker-distribution-api-version": "registry/2.0" } });
  });
}
