/**
 * Manifests and tags. A manifest is a version of the repository's package (version = its digest
 * `sha256:…`), stored byte for byte as a blob; its config, layers (or, for an index, its child
 * manifests) are the version's files, so the orphan GC sees every blob a manifest needs. Tags are
 * the shared `package_tags`. Pushing a manifest is the image's publish: audited as
 * `packages.publish` with the digest and tag.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import { auditAllowed, type AuditActor } from "../../../core/audit";
import { tx } from "../../../core/db/client";
import { sha256Hex, type PutResult } from "../../../core/blobs/store";
import { packages, packageVersions, packageFiles, packageTags } from "../shared/tables";
import type { PackageRow, VersionRow } from "../shared/claims";
import { recordBlob, discardBlob } from "../shared/blobs";
import { setTagIn } from "../shared/publish";
import { readBodyWithLimit } from "../shared/body";
import { ociError } from "./access";
import { digestHex, linkBlob, linkedBlob } from "./blobs";
import type { RegistryGrant } from "./token";

export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const TAG = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;

const IMAGE_TYPES = new Set(["application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"]);
const INDEX_TYPES = new Set(["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"]);

interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

interface ManifestDoc {
  schemaVersion?: number;
  mediaType?: string;
  config?: Descriptor;
  layers?: Descriptor[];
  manifests?: Descriptor[];
  annotations?: Record<string, string>;
}

const REVISION = "org.opencontainers.image.revision";

function checkDescriptor(d: unknown, where: string): Descriptor {
  const desc = d as Descriptor;
  if (!desc || typeof desc !== "object" || typeof desc.digest !== "string" || typeof desc.size !== "number" || desc.size < 0) {
    throw ociError(400, "MANIFEST_INVALID", `${where} is not a valid descriptor (digest and size).`);
  }
  if (!/^sha256:[0-9a-f]{64}$/.test(desc.digest)) throw ociError(400, "MANIFEST_INVALID", `${where} has an unsupported digest "${desc.digest}".`);
  return desc;
}

/** The source revision of an image: the manifest's annotation, else the config's label. */
async function revisionOf(core: Core, doc: ManifestDoc): Promise<string> {
  const a = doc.annotations?.[REVISION];
  if (typeof a === "string") return a;
  if (!doc.config || doc.config.size > 1024 * 1024) return "";
  const blob = core.blobs.open(doc.config.digest.slice(7));
  if (!blob) return "";
  try {
    const cfg = JSON.parse(await blob.text()) as { config?: { Labels?: Record<string, string> } };
    const label = cfg.config?.Labels?.[REVISION];
    return typeof label === "string" ? label : "";
  } catch {
    return "";
  }
}

/** Find a manifest version by tag or digest, or null. */
export function findManifest(core: Core, repo: PackageRow, reference: string): VersionRow | null {
  if (reference.startsWith("sha256:")) {
    return core.db.select().from(packageVersions).where(and(eq(packageVersions.packageId, repo.id), eq(packageVersions.versionKey, reference))).get() ?? null;
  }
  const tagged = core.db.select({ versionId: packageTags.versionId }).from(packageTags).where(and(eq(packageTags.packageId, repo.id), eq(packageTags.tag, reference))).get();
  if (!tagged) return null;
  return core.db.select().from(packageVersions).where(eq(packageVersions.id, tagged.versionId)).get() ?? null;
}

/** GET or HEAD a manifest: the stored bytes with their media type and digest; 404 MANIFEST_UNKNOWN. */
export function manifestResponse(core: Core, repo: PackageRow, reference: string, request: Request): Response {
  const v = findManifest(core, repo, reference);
  const file = v ? core.db.select().from(packageFiles).where(and(eq(packageFiles.versionId, v.id), eq(packageFiles.role, "manifest"))).get() : null;
  const blob = file ? core.blobs.open(file.digest) : null;
  if (!v || !file || !blob) throw ociError(404, "MANIFEST_UNKNOWN", `Manifest ${reference} is not in ${repo.name}.`, { reference });
  const headers = {
    "content-type": file.mediaType,
    "content-length": String(file.size),
    "docker-content-digest": v.version,
    etag: `"${v.version}"`,
    "docker-distribution-api-version": "registry/2.0",
  };
  return new Response(request.method === "HEAD" ? null : blob, { status: 200, headers });
}

/** PUT a manifest by tag or digest (see the file comment); 201 with its digest. */
export async function putManifest(core: Core, repo: PackageRow, reference: string, request: Request, grant: RegistryGrant, ip: string): Promise<Response> {
  if (!reference.startsWith("sha256:") && !TAG.test(reference)) throw ociError(400, "TAG_INVALID", `"${reference}" is not a valid tag.`, { tag: reference });
  let bytes: Uint8Array;
  try {
    bytes = await readBodyWithLimit(request, MAX_MANIFEST_BYTES);
  } catch {
    throw ociError(413, "SIZE_INVALID", `A manifest may be at most ${MAX_MANIFEST_BYTES} bytes.`);
  }
  const pusher: ManifestPusher = {
    subject: grant.subject,
    audit: { actor: grant.actor, operatorId: grant.operatorId, via: grant.via, ip, context: grant.tokenId ? { token: grant.tokenId } : {} },
  };
  const digest = await storeManifest(core, repo, reference, bytes, request.headers.get("content-type") ?? "", pusher);
  return new Response(null, {
    status: 201,
    headers: { location: `/v2/${repo.name}/manifests/${digest}`, "docker-content-digest": digest, "content-length": "0", "docker-distribution-api-version": "registry/2.0" },
  });
}

/** Who pushes a manifest: the version's publisher and the audit row's actor. */
export interface ManifestPusher {
  subject: string;
  audit: AuditActor;
  /** More ids for the audit row's context (a build id …). */
  context?: Record<string, string | number | boolean | null>;
}

export interface StoreManifestOptions {
  /**
   * The manifest's bytes are already durable in the blob store (an in-process push writes them
   * beside its layers, so their fsyncs overlap): recorded with the version, not written again.
   * The caller discards them when this throws.
   */
  written?: PutResult;
}

/**
 * Validate and store a manifest's bytes as a version of `repo`, tagged when `reference` is a tag,
 * audited as `packages.publish` in the same transaction; returns its digest. Shared by the HTTP
 * push and the in-process push (push.ts), so both validate and audit alike.
 */
export async function storeManifest(core: Core, repo: PackageRow, reference: string, bytes: Uint8Array, contentType: string, pusher: ManifestPusher, opts: StoreManifestOptions = {}): Promise<string> {
  const isDigestRef = reference.startsWith("sha256:");
  if (isDigestRef) digestHex(reference);
  else if (!TAG.test(reference)) throw ociError(400, "TAG_INVALID", `"${reference}" is not a valid tag.`, { tag: reference });
  if (bytes.byteLength > MAX_MANIFEST_BYTES) throw ociError(413, "SIZE_INVALID", `A manifest may be at most ${MAX_MANIFEST_BYTES} bytes.`);
  let doc: ManifestDoc;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as ManifestDoc;
  } catch {
    throw ociError(400, "MANIFEST_INVALID", "The manifest is not valid JSON.");
  }
  if (!doc || typeof doc !== "object" || doc.schemaVersion !== 2) throw ociError(400, "MANIFEST_INVALID", "Only schemaVersion 2 manifests are accepted.");
  const headerType = contentType.split(";")[0].trim();
  const mediaType = doc.mediaType ?? headerType;
  if (doc.mediaType && headerType && headerType !== doc.mediaType && headerType !== "application/json") {
    throw ociError(400, "MANIFEST_INVALID", `Content-Type ${headerType} disagrees with the manifest's mediaType ${doc.mediaType}.`);
  }
  const isIndex = INDEX_TYPES.has(mediaType) || (!IMAGE_TYPES.has(mediaType) && Array.isArray(doc.manifests));
  if (!IMAGE_TYPES.has(mediaType) && !INDEX_TYPES.has(mediaType)) throw ociError(400, "MANIFEST_INVALID", `Unsupported manifest media type "${mediaType}".`);

  const hex = sha256Hex(bytes);
  const digest = `sha256:${hex}`;
  if (isDigestRef && reference !== digest) throw ociError(400, "DIGEST_INVALID", "The manifest does not hash to the digest in the URL.", { digest: reference });

  const files: Array<{ name: string; role: string; digest: string; size: number; mediaType: string }> = [];
  let size = 0;
  if (isIndex) {
    if (!Array.isArray(doc.manifests)) throw ociError(400, "MANIFEST_INVALID", "An index needs a manifests list.");
    for (const [i, d] of doc.manifests.entries()) {
      const desc = checkDescriptor(d, `manifests[${i}]`);
      const child = findManifest(core, repo, desc.digest);
      if (!child) throw ociError(400, "MANIFEST_BLOB_UNKNOWN", `Manifest ${desc.digest} is not in ${repo.name}.`, { digest: desc.digest });
      files.push({ name: desc.digest, role: "child", digest: desc.digest.slice(7), size: desc.size, mediaType: desc.mediaType ?? "" });
      size += child.sizeBytes;
    }
  } else {
    if (!doc.config || !Array.isArray(doc.layers)) throw ociError(400, "MANIFEST_INVALID", "An image manifest needs a config and a layers list.");
    const descs = [{ d: checkDescriptor(doc.config, "config"), role: "config" }, ...doc.layers.map((l, i) => ({ d: checkDescriptor(l, `layers[${i}]`), role: "layer" }))];
    for (const { d, role } of descs) {
      const link = linkedBlob(core.db, repo.id, d.digest.slice(7));
      if (!link) throw ociError(400, "MANIFEST_BLOB_UNKNOWN", `Blob ${d.digest} is not in ${repo.name}.`, { digest: d.digest });
      if (link.size !== d.size) throw ociError(400, "MANIFEST_INVALID", `${d.digest} is ${link.size} bytes, the manifest says ${d.size}.`);
      if (files.some((f) => f.name === d.digest)) continue;
      files.push({ name: d.digest, role, digest: d.digest.slice(7), size: d.size, mediaType: d.mediaType ?? "application/octet-stream" });
      size += d.size;
    }
  }
  const commit = await revisionOf(core, doc);
  // A cosign signature (tag sha256-<hex>.sig) is an artifact of an image, not an image: reads skip it.
  const isSignature = !isIndex && (doc.layers ?? []).length > 0 && (doc.layers ?? []).every((l) => l.mediaType === "application/vnd.dev.cosign.simplesigning.v1+json");
  if (opts.written && opts.written.digest !== hex) throw new Error(`storeManifest: the written blob ${opts.written.digest} is not the manifest ${hex}`);
  const put = opts.written ?? (await core.blobs.put(bytes));
  try {
    tx(core.db, (t) => {
      const now = core.clock.now();
      recordBlob(core, hex, bytes.byteLength, t);
      let version = t.select().from(packageVersions).where(and(eq(packageVersions.packageId, repo.id), eq(packageVersions.versionKey, digest))).get();
      if (!version) {
        version = t
          .insert(packageVersions)
          .values({
            packageId: repo.id,
            version: digest,
            versionKey: digest,
            publisher: pusher.subject,
            publisherId: pusher.audit.operatorId,
            publishedAt: now,
            sizeBytes: size,
            digest: hex,
            manifest: JSON.stringify(isSignature ? { mediaType, commit, signature: true } : { mediaType, commit }),
          })
          .returning()
          .get();
        t.insert(packageFiles).values({ versionId: version.id, name: "manifest", role: "manifest", digest: hex, size: bytes.byteLength, mediaType }).run();
        for (const f of files) t.insert(packageFiles).values({ versionId: version.id, ...f }).run();
      }
      linkBlob(core, t, repo.id, hex, bytes.byteLength);
      if (!isDigestRef) setTagIn(t, repo.id, reference, version.id, now);
      t.update(packages).set({ updatedAt: now }).where(eq(packages.id, repo.id)).run();
      const project = core.access.findProjectById(repo.projectId);
      auditAllowed(
        core,
        t,
        pusher.audit,
        "packages.publish",
        `image:${repo.name}@${digest}`,
        { project: project?.slug ?? null },
        { ...pusher.context, op: "image.push", tag: isDigestRef ? null : reference },
      );
    });
  } catch (e) {
    if (!opts.written) await discardBlob(core, put);
    throw e;
  }
  return digest;
}

/** Tags of a repository, sorted, paginated by `n` and `last` (exclusive) with a `Link` to the next page. */
export function listTags(core: Core, repo: PackageRow, n: number | null, last: string | null): Response {
  const all = core.db.select({ tag: packageTags.tag }).from(packageTags).where(eq(packageTags.packageId, repo.id)).orderBy(asc(packageTags.tag)).all().map((r) => r.tag);
  let tags = last ? all.filter((t) => t > last) : all;
  const headers: Record<string, string> = { "content-type": "application/json", "docker-distribution-api-version": "registry/2.0" };
  if (n !== null) {
    const more = tags.length > n;
    tags = tags.slice(0, n);
    if (more && n > 0) headers.link = `</v2/${repo.name}/tags/list?n=${n}&last=${encodeURIComponent(tags[tags.length - 1])}>; rel="next"`;
  }
  return new Response(JSON.stringify({ name: repo.name, tags }), { status: 200, headers });
}
