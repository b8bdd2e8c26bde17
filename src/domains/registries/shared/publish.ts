/**
 * Publishing, yanking and tagging on the shared model. Each protocol inspects its own upload
 * (framing, archive, manifest) and then calls `publishVersion`, which writes the blob first, then
 * in one transaction the version, its file, its tags, the re-rendered protocol documents, the
 * audit row and the `package.published` event. Versions are immutable: a second publish of the
 * same version (by the registry's notion of "same") is 409.
 */
import { and, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../../core/core";
import type { Tx } from "../../../core/db/client";
import { tx } from "../../../core/db/client";
import { auditAllowed, type AuditActor } from "../../../core/audit";
import { OpsError } from "../../../core/errors";
import { packages, packageVersions, packageFiles, packageTags } from "./tables";
import { findPackageById, type PackageRow, type VersionRow } from "./claims";
import { storeDocuments, type Renderer } from "./documents";
import { putBlob, discardBlob } from "./blobs";
import { packagePublished } from "./events";

export interface Publisher {
  /** Email of a person, handle of a machine. */
  name: string;
  operatorId: string | null;
}

export interface PublishInput {
  pkg: PackageRow;
  project: ProjectRef;
  version: string;
  versionKey: string;
  archive: Uint8Array;
  fileName: string;
  mediaType: string;
  integrity?: string | null;
  shasum?: string | null;
  /** The protocol's JSON for this version, given the archive's SHA-256. */
  manifest: (digest: string) => string;
  /** Tags to point at this version. */
  tags?: readonly string[];
  publisher: Publisher;
  actor: AuditActor;
  render: Renderer;
}

/** Find the version of `pkg` with this uniqueness key, or null. */
export function findVersion(q: Tx | Core["db"], packageId: number, versionKey: string): VersionRow | null {
  return q.select().from(packageVersions).where(and(eq(packageVersions.packageId, packageId), eq(packageVersions.versionKey, versionKey))).get() ?? null;
}

/** Store the archive, then record the version (see the file comment). Returns the new version row. */
export async function publishVersion(core: Core, input: PublishInput): Promise<VersionRow> {
  if (input.project.archived) throw new OpsError("archived", `Project "${input.project.slug}" is archived; it takes no changes.`);
  // Cheap early answer before touching the blob store; the transaction checks again.
  if (findVersion(core.db, input.pkg.id, input.versionKey)) throw alreadyPublished(input.pkg, input.version);
  const put = await putBlob(core, input.archive);
  try {
    return tx(core.db, (t) => {
      const pkg = findPackageById(t, input.pkg.id);
      if (!pkg || pkg.projectId !== input.project.id) throw new OpsError("forbidden", `"${input.pkg.name}" is not claimed by project "${input.project.slug}".`);
      if (findVersion(t, pkg.id, input.versionKey)) throw alreadyPublished(pkg, input.version);
      const now = core.clock.now();
      const version = t
        .insert(packageVersions)
        .values({
          packageId: pkg.id,
          version: input.version,
          versionKey: input.versionKey,
          yanked: false,
          publisher: input.publisher.name,
          publisherId: input.publisher.operatorId,
          publishedAt: now,
          sizeBytes: put.size,
          digest: put.digest,
          integrity: input.integrity ?? null,
          shasum: input.shasum ?? null,
          manifest: input.manifest(put.digest),
        })
        .returning()
        .get();
      t.insert(packageFiles).values({ versionId: version.id, name: input.fileName, role: "archive", digest: put.digest, size: put.size, mediaType: input.mediaType }).run();
      for (const tag of input.tags ?? []) setTagIn(t, pkg.id, tag, version.id, now);
      t.update(packages).set({ updatedAt: now }).where(eq(packages.id, pkg.id)).run();
      storeDocuments(core, t, pkg, input.render);
      auditAllowed(core, t, input.actor, "packages.publish", `package:${pkg.registry}:${pkg.name}@${input.version}`, { project: input.project.slug }, { op: "package.publish", digest: put.digest });
      packagePublished(core, t, { project: input.project, registry: pkg.registry, name: pkg.name, version: input.version });
      return version;
    });
  } catch (e) {
    await discardBlob(core, put);
    throw e;
  }
}

function alreadyPublished(pkg: PackageRow, version: string): OpsError {
  return new OpsError("conflict", `${pkg.name}@${version} is already published; versions cannot be republished.`);
}

/** Point `tag` at `versionId` inside `t`. */
export function setTagIn(t: Tx, packageId: number, tag: string, versionId: number, now: number): void {
  t.insert(packageTags)
    .values({ packageId, tag, versionId, updatedAt: now })
    .onConflictDoUpdate({ target: [packageTags.packageId, packageTags.tag], set: { versionId, updatedAt: now } })
    .run();
}

/**
 * Yank or unyank a version (audited as `packages.publish`; the rendered documents follow).
 * 404 when the version does not exist. Idempotent: yanking a yanked version answers the same.
 */
export function setYanked(core: Core, pkg: PackageRow, project: ProjectRef, versionKey: string, yanked: boolean, actor: AuditActor, render: Renderer): VersionRow {
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
  return tx(core.db, (t) => {
    const v = findVersion(t, pkg.id, versionKey);
    if (!v) throw new OpsError("not_found", `No version ${versionKey} of ${pkg.name}.`);
    if (v.yanked !== yanked) {
      const now = core.clock.now();
      t.update(packageVersions).set({ yanked }).where(eq(packageVersions.id, v.id)).run();
      t.update(packages).set({ updatedAt: now }).where(eq(packages.id, pkg.id)).run();
      storeDocuments(core, t, pkg, render);
    }
    auditAllowed(core, t, actor, "packages.publish", `package:${pkg.registry}:${pkg.name}@${v.version}`, { project: project.slug }, { op: yanked ? "package.yank" : "package.unyank" });
    return { ...v, yanked };
  });
}

/** Point (or with `versionKey` null, remove) a tag, re-rendering the documents; audited. */
export function changeTag(core: Core, pkg: PackageRow, project: ProjectRef, tag: string, versionKey: string | null, actor: AuditActor, render: Renderer): void {
  if (project.archived) throw new OpsError("archived", `Project "${project.slug}" is archived; it takes no changes.`);
  tx(core.db, (t) => {
    const now = core.clock.now();
    if (versionKey === null) {
      const gone = t.delete(packageTags).where(and(eq(packageTags.packageId, pkg.id), eq(packageTags.tag, tag))).returning().all();
      if (gone.length === 0) throw new OpsError("not_found", `${pkg.name} has no tag "${tag}".`);
    } else {
      const v = findVersion(t, pkg.id, versionKey);
      if (!v) throw new OpsError("not_found", `No version ${versionKey} of ${pkg.name}.`);
      setTagIn(t, pkg.id, tag, v.id, now);
    }
    t.update(packages).set({ updatedAt: now }).where(eq(packages.id, pkg.id)).run();
    storeDocuments(core, t, pkg, render);
    auditAllowed(core, t, actor, "packages.publish", `package:${pkg.registry}:${pkg.name}`, { project: project.slug }, { op: versionKey === null ? "package.tag.remove" : "package.tag.set", tag, version: versionKey });
  });
}

/** Tags of a package: tag → version string. */
export function tagsOf(q: Tx | Core["db"], packageId: number): Record<string, string> {
  const rows = q
    .select({ tag: packageTags.tag, version: packageVersions.version })
    .from(packageTags)
    .innerJoin(packageVersions, eq(packageVersions.id, packageTags.versionId))
    .where(eq(packageTags.packageId, packageId))
    .all();
  const out: Record<string, string> = {};
  for (const r of rows.sort((a, b) => a.tag.localeCompare(b.tag))) out[r.tag] = r.version;
  return out;
}
