/**
 * OCI repositories on the shared model, and blob reads. A repository `<project>/<service>` is a
 * package of registry `oci` in that project, created by its first push. Blobs are served only
 * through repositories they were pushed to or mounted into (`oci_blob_links`).
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import type { Queryable } from "../../../core/db/client";
import { packages } from "../shared/tables";
import { findPackageByKey, type PackageRow } from "../shared/claims";
import { isValidOciName } from "../shared/names";
import { ociBlobLinks } from "./tables";
import { ociError } from "./access";

const DIGEST = /^sha256:([0-9a-f]{64})$/;

/** The hex of a `sha256:<hex>` digest; 400 DIGEST_INVALID otherwise. */
export function digestHex(digest: string): string {
  const m = DIGEST.exec(digest);
  if (!m) throw ociError(400, "DIGEST_INVALID", `"${digest}" is not a sha256 digest (sha256: and 64 lowercase hex).`, { digest });
  return m[1];
}

/** `<project>/<service>` from route params; 400 NAME_INVALID when it breaks the grammar. */
export function repositoryName(project: string, service: string): string {
  const name = `${project}/${service}`;
  if (!isValidOciName(name)) throw ociError(400, "NAME_INVALID", `"${name}" is not a valid repository name.`, { name });
  return name;
}

/** The repository's package row, or null. */
export function findRepository(q: Queryable, name: string): PackageRow | null {
  return findPackageByKey(q, "oci", name);
}

/** The repository's package row; 404 NAME_UNKNOWN when it was never pushed. */
export function requireRepository(core: Core, name: string): PackageRow {
  const repo = findRepository(core.db, name);
  if (!repo) throw ociError(404, "NAME_UNKNOWN", `Repository ${name} is not known to this registry.`, { name });
  return repo;
}

/** The repository, created on first push in the project its name starts with. */
export function ensureRepository(core: Core, name: string, pushedBy: string): PackageRow {
  const existing = findRepository(core.db, name);
  if (existing) return existing;
  const slug = name.split("/")[0];
  const project = core.access.findProject(slug);
  if (!project) throw ociError(404, "NAME_UNKNOWN", `There is no project "${slug}" for repository ${name}.`, { name });
  const now = core.clock.now();
  core.db
    .insert(packages)
    .values({ registry: "oci", name, nameKey: name, lookup: name, projectId: project.id, claimedBy: pushedBy, createdAt: now, updatedAt: now })
    .onConflictDoNothing()
    .run();
  return findRepository(core.db, name)!;
}

/** The link of `hex` in `repo`, or null. */
export function linkedBlob(q: Queryable, repoId: number, hex: string): { size: number } | null {
  return q.select({ size: ociBlobLinks.size }).from(ociBlobLinks).where(and(eq(ociBlobLinks.packageId, repoId), eq(ociBlobLinks.digest, hex))).get() ?? null;
}

/** Make `hex` readable through `repo` (idempotent). */
export function linkBlob(core: Core, q: Queryable, repoId: number, hex: string, size: number): void {
  q.insert(ociBlobLinks).values({ packageId: repoId, digest: hex, size, createdAt: core.clock.now() }).onConflictDoNothing().run();
}

/** A blob response (GET or HEAD, with single-range support). 404 BLOB_UNKNOWN when not in the repository. */
export function blobResponse(core: Core, repo: PackageRow, digest: string, request: Request): Response {
  const hex = digestHex(digest);
  const link = linkedBlob(core.db, repo.id, hex);
  const file = link ? core.blobs.open(hex) : null;
  if (!link || !file) throw ociError(404, "BLOB_UNKNOWN", `Blob ${digest} is not in ${repo.name}.`, { digest });
  const headers: Record<string, string> = {
    "content-type": "application/octet-stream",
    "docker-content-digest": digest,
    etag: `"${digest}"`,
    "accept-ranges": "bytes",
    "docker-distribution-api-version": "registry/2.0",
  };
  const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers.get("range") ?? "");
  if (range && request.method === "GET" && (range[1] !== "" || range[2] !== "")) {
    let start = range[1] === "" ? link.size - Number(range[2]) : Number(range[1]);
    let end = range[1] === "" || range[2] === "" ? link.size - 1 : Number(range[2]);
    if (start < 0) start = 0;
    if (end >= link.size) end = link.size - 1;
    if (start > end || start >= link.size) {
      return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${link.size}` } });
    }
    return new Response(file.slice(start, end + 1), { status: 206, headers: { ...headers, "content-range": `bytes ${start}-${end}/${link.size}`, "content-length": String(end - start + 1) } });
  }
  headers["content-length"] = String(link.size);
  return new Response(request.method === "HEAD" ? null : file, { status: 200, headers });
}
