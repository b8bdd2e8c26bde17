/**
 * In-process image push: what a client's HTTP push does, for images ops writes itself (builds,
 * signatures). The blobs go into the blob store and are linked into the repository, then the
 * manifest goes through the same `storeManifest` as `PUT /v2/<name>/manifests/<ref>`, so the
 * validation (schema, media type, every blob present with its declared size), the version row,
 * the tag and the `packages.publish` audit row are the HTTP push's, in one code path.
 *
 * The repository must be `<project>/<service>` of an existing, unarchived project, as a registry
 * token would require; the caller has already decided the push is allowed (a build of the
 * project's own service). `storedManifest` and `storedBlob` read back what was pushed, byte for
 * byte, for pushes that read, modify and write (a signature manifest gaining a signature).
 */
import { OpsError } from "../../../core/errors";
import type { Core } from "../../../core/core";
import type { BlobSource } from "../../../core/blobs/store";
import { recordBlob, discardBlob } from "../shared/blobs";
import { tx } from "../../../core/db/client";
import { isValidOciName } from "../shared/names";
import { and, eq } from "drizzle-orm";
import { packageFiles } from "../shared/tables";
import { digestHex, ensureRepository, findRepository, linkBlob, linkedBlob } from "./blobs";
import { findManifest, storeManifest, type ManifestPusher } from "./manifests";

export type { ManifestPusher };

export interface PushBlob {
  digest: string;
  size: number;
  /**
   * The bytes, a file to stream them from, or `mount`: a repository the blob is already in (a
   * base image's layer), linked without being read or stored again, as a cross-repository mount.
   */
  source: { bytes: Uint8Array } | { file: string } | { mount: string };
}

export interface ImagePush {
  /** `<project>/<service>`. */
  repository: string;
  /** Config and layers (any order); blobs already in the repository are not copied again. */
  blobs: readonly PushBlob[];
  manifest: Uint8Array;
  mediaType: string;
  /** Tag to point at the manifest; null pushes by digest only. */
  tag: string | null;
  pusher: ManifestPusher;
}

export interface PushedImage {
  repository: string;
  /** The manifest's digest. */
  digest: string;
  /** Config plus layers, in bytes. */
  sizeBytes: number;
}

/** The project a repository name belongs to; 422 for a bad name, 404 unknown, 409 archived. */
function checkRepository(core: Core, repository: string): void {
  if (!isValidOciName(repository) || repository.split("/").length !== 2) {
    throw new OpsError("validation_failed", `"${repository}" is not a repository name of the form <project>/<service>.`);
  }
  const slug = repository.split("/")[0];
  const project = core.access.findProject(slug);
  if (!project) throw new OpsError("not_found", `There is no project "${slug}" for repository ${repository}.`);
  if (project.archived) throw new OpsError("archived", `Project "${slug}" is archived: nothing can be pushed to it.`);
}

function sourceOf(blob: PushBlob): BlobSource {
  if ("mount" in blob.source) throw new Error(`blob ${blob.digest} is mounted, not written`);
  return "bytes" in blob.source ? blob.source.bytes : Bun.file(blob.source.file);
}

/** A mounted blob's link in the repository it comes from; 404 unless it is there, with its size, and in the store. */
function mountable(core: Core, blob: PushBlob & { source: { mount: string } }): string {
  const from = findRepository(core.db, blob.source.mount);
  const hex = digestHex(blob.digest);
  const link = from ? linkedBlob(core.db, from.id, hex) : null;
  if (!link || link.size !== blob.size || !core.blobs.open(hex)) throw new OpsError("not_found", `Blob ${blob.digest} (${blob.size} bytes) is not in ${blob.source.mount}.`);
  return hex;
}

/**
 * Push an image into the embedded registry (see the file comment); returns its manifest digest.
 *
 * The blobs the repository lacks and the manifest's own bytes are written together, so their
 * fsyncs overlap (each `put` is durable when it resolves); then one transaction records them in
 * the ledger and links the blobs, and only then does `storeManifest` commit the version that
 * refers to them. A blob is thus on disk before any row names it, as with an HTTP push.
 */
export async function pushImage(core: Core, push: ImagePush): Promise<PushedImage> {
  checkRepository(core, push.repository);
  const repo = ensureRepository(core, push.repository, push.pusher.subject);
  let sizeBytes = 0;
  const missing: PushBlob[] = [];
  const mounts: Array<{ hex: string; size: number }> = [];
  for (const blob of push.blobs) {
    sizeBytes += blob.size;
    const hex = digestHex(blob.digest);
    const link = linkedBlob(core.db, repo.id, hex);
    if (link && link.size === blob.size && core.blobs.open(hex)) continue;
    if ("mount" in blob.source) mounts.push({ hex: mountable(core, blob as PushBlob & { source: { mount: string } }), size: blob.size });
    else missing.push(blob);
  }
  const writes = await Promise.allSettled([
    core.blobs.put(push.manifest),
    ...missing.map((blob) => core.blobs.put(sourceOf(blob), { expectDigest: digestHex(blob.digest), maxBytes: core.config.maxBlobBytes })),
  ]);
  const written = writes.flatMap((w) => (w.status === "fulfilled" ? [w.value] : []));
  const discardAll = async () => {
    for (const put of written) await discardBlob(core, put);
  };
  const failed = writes.find((w) => w.status === "rejected");
  if (failed) {
    await discardAll();
    throw failed.reason;
  }
  const [manifestPut, ...blobPuts] = written;
  const wrongSize = missing.findIndex((blob, i) => blobPuts[i].size !== blob.size);
  if (wrongSize >= 0) {
    await discardAll();
    throw new OpsError("validation_failed", `Blob ${missing[wrongSize].digest} is ${blobPuts[wrongSize].size} bytes, the push says ${missing[wrongSize].size}.`);
  }
  try {
    tx(core.db, (t) => {
      recordBlob(core, manifestPut.digest, manifestPut.size, t);
      for (const put of blobPuts) {
        recordBlob(core, put.digest, put.size, t);
        linkBlob(core, t, repo.id, put.digest, put.size);
      }
      for (const m of mounts) linkBlob(core, t, repo.id, m.hex, m.size);
    });
  } catch (e) {
    await discardAll();
    throw e;
  }
  let digest: string;
  try {
    digest = await storeManifest(core, repo, push.tag ?? `sha256:${manifestPut.digest}`, push.manifest, push.mediaType, push.pusher, { written: manifestPut });
  } catch (e) {
    // The layers stay linked, as after an HTTP push whose manifest was refused; the manifest goes.
    await discardBlob(core, manifestPut);
    throw e;
  }
  return { repository: push.repository, digest, sizeBytes };
}

/** A pushed manifest of `repository` by tag or digest, with its exact bytes; null when absent. */
export async function storedManifest(core: Core, repository: string, reference: string): Promise<{ digest: string; mediaType: string; bytes: Uint8Array } | null> {
  const repo = findRepository(core.db, repository);
  const version = repo ? findManifest(core, repo, reference) : null;
  if (!version) return null;
  const file = core.db.select().from(packageFiles).where(and(eq(packageFiles.versionId, version.id), eq(packageFiles.role, "manifest"))).get();
  const blob = file ? core.blobs.open(file.digest) : null;
  if (!file || !blob) return null;
  return { digest: version.version, mediaType: file.mediaType, bytes: new Uint8Array(await blob.arrayBuffer()) };
}

/** A blob of `repository` (only one pushed or mounted into it); null when absent. */
export function storedBlob(core: Core, repository: string, digest: string): Blob | null {
  const repo = findRepository(core.db, repository);
  const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
  if (!repo || !m || !linkedBlob(core.db, repo.id, m[1])) return null;
  return core.blobs.open(m[1]);
}
