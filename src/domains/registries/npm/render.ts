/**
 * npm package documents ("packuments"), rendered once per change (see shared/documents.ts):
 * - `npm.full` (`application/json`): every version's manifest with `dist`, `dist-tags`, `time`,
 *   `_rev`, maintainers; what `npm install`, `npm view` and publish's pre-check read;
 * - `npm.abbreviated` (`application/vnd.npm.install-v1+json`, "corgi"): the install-relevant
 *   fields only.
 *
 * `dist.tarball` is built from OPS_PUBLIC_URL in the form of the spec's tarball route
 * (`/npm/@scope%2fname/-/name-1.0.0.tgz`): npm downloads it verbatim.
 */
import { asc, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import type { Queryable } from "../../../core/db/client";
import { iso } from "../../../core/clock";
import { sha256Hex } from "../../../core/blobs/store";
import { packageVersions } from "../shared/tables";
import type { PackageRow } from "../shared/claims";
import { tagsOf } from "../shared/publish";
import { npmBaseName } from "../shared/names";

export const FULL = "npm.full";
export const ABBREVIATED = "npm.abbreviated";
export const CORGI_TYPE = "application/vnd.npm.install-v1+json";

/** Fields of a version manifest kept in the abbreviated document. */
const ABBREVIATED_FIELDS = [
  "name",
  "version",
  "dependencies",
  "optionalDependencies",
  "devDependencies",
  "bundleDependencies",
  "peerDependencies",
  "peerDependenciesMeta",
  "bin",
  "directories",
  "engines",
  "os",
  "cpu",
  "deprecated",
  "funding",
  "license",
  "_hasShrinkwrap",
  "hasInstallScript",
] as const;

/** The tarball file name a version is served under. */
export function tarballName(name: string, version: string): string {
  return `${npmBaseName(name)}-${version}.tgz`;
}

/** Absolute tarball URL of a version. */
export function tarballUrl(core: Core, name: string, version: string): string {
  return `${core.config.publicUrl}/npm/${encodeURIComponent(name).replace(/^%40/, "@")}/-/${tarballName(name, version)}`;
}

/** Render both npm documents of `pkg`. */
export function renderNpm(core: Core, q: Queryable, pkg: PackageRow): Record<string, string> {
  const versions = q.select().from(packageVersions).where(eq(packageVersions.packageId, pkg.id)).orderBy(asc(packageVersions.publishedAt), asc(packageVersions.id)).all();
  const tags = tagsOf(q, pkg.id);
  const full: Record<string, unknown> = {};
  const abbreviated: Record<string, unknown> = {};
  const time: Record<string, string> = {};
  const maintainers = new Map<string, { name: string }>();
  let description: string | undefined;
  for (const v of versions) {
    const manifest = JSON.parse(v.manifest) as Record<string, unknown>;
    const dist = { tarball: tarballUrl(core, pkg.name, v.version), shasum: v.shasum ?? "", integrity: v.integrity ?? "", fileCount: manifest._fileCount, unpackedSize: manifest._unpackedSize };
    delete manifest._fileCount;
    delete manifest._unpackedSize;
    const doc = { ...manifest, _id: `${pkg.name}@${v.version}`, _npmUser: { name: v.publisher }, dist };
    full[v.version] = doc;
    const small: Record<string, unknown> = {};
    for (const k of ABBREVIATED_FIELDS) if (doc[k as keyof typeof doc] !== undefined) small[k] = doc[k as keyof typeof doc];
    small.dist = dist;
    abbreviated[v.version] = small;
    time[v.version] = iso(v.publishedAt);
    maintainers.set(v.publisher, { name: v.publisher });
    if (typeof manifest.description === "string") description = manifest.description;
  }
  const modified = iso(pkg.updatedAt);
  const body: Record<string, unknown> = {
    _id: pkg.name,
    name: pkg.name,
    "dist-tags": tags,
    versions: full,
    time: { created: iso(versions[0]?.publishedAt ?? pkg.createdAt), modified, ...time },
    maintainers: [...maintainers.values()],
  };
  if (description !== undefined) body.description = description;
  body._rev = `${versions.length + 1}-${sha256Hex(JSON.stringify(body)).slice(0, 32)}`;
  return {
    [FULL]: JSON.stringify(body),
    [ABBREVIATED]: JSON.stringify({ name: pkg.name, modified, "dist-tags": tags, versions: abbreviated }),
  };
}
