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
import { auditAllowed, writeAudit, type AuditActor } from "../../../core/audit";
import { OpsError } from "../../../core/errors";
import { packages, packageVersions, packageFiles, packageTags } from "./tables";
import { findPackageById, findPackageByLookup, type PackageRow, type VersionRow } from "./claims";
import { storeDocuments, type Renderer } from "./documents";
import { putBlob, discardBlob } from "./blobs";
import { packagePublished } from "./events";
import { npmScopeOf, type ClaimRegistry } from "./names";
import { withoutBuild } from "./semver";
import { parsePublishBody, publishCrate } from "../cargo/service";
import { publishNpm, type NpmPublishBody } from "../npm/service";

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

// ---- In-process publishing ---------------------------------------------------------------------
// ops itself publishes too: a publish build packages a tag's modules and hands the result to the
// same protocol code a `cargo publish` or `npm publish` reaches over HTTP (body parsing, archive
// inspection, manifest checks, the version row, the re-rendered documents, the audit row and the
// `package.published` event). What the HTTP routes' resolvers decide before that — the npm scope,
// the claim and its project — is decided here the same way, and a refusal is audited as denied.

/** Who publishes in-process: the project the claims must belong to, the publisher shown, the audit actor. */
export interface InProcessPublisher {
  project: ProjectRef;
  publisher: Publisher;
  actor: AuditActor;
}

/**
 * Why `project` may not publish `name` in `registry` (out of the npm scope, unclaimed, or claimed
 * by another project), or null when it may. Nothing is written.
 */
export function claimProblem(core: Core, project: ProjectRef, registry: ClaimRegistry, name: string): string | null {
  if (registry === "npm" && npmScopeOf(name) !== core.config.npmScope) return `"${name}" is out of the ${core.config.npmScope} scope`;
  const pkg = findPackageByLookup(core, registry, name);
  if (!pkg) return `the ${registry} name "${name}" is not claimed; claim it first (PUT /api/v1/projects/${project.slug}/packages/${registry}/${encodeURIComponent(name)})`;
  if (pkg.projectId !== project.id) return `the ${registry} name "${name}" is claimed by another project`;
  if (registry === "cargo" && pkg.name !== name) return `the crate is claimed as "${pkg.name}", not "${name}"`;
  return null;
}

/** True when `name@version` is in the registry (cargo ignores `+build` metadata). */
export function isPublished(core: Core, registry: ClaimRegistry, name: string, version: string): boolean {
  const pkg = findPackageByLookup(core, registry, name);
  return !!pkg && findVersion(core.db, pkg.id, registry === "cargo" ? withoutBuild(version) : version) !== null;
}

function inProcessClaim(core: Core, by: InProcessPublisher, registry: ClaimRegistry, name: string): PackageRow {
  const problem = claimProblem(core, by.project, registry, name);
  if (problem) {
    writeAudit(core, core.db, { ...by.actor, action: "packages.publish", target: `package:${registry}:${name}`, outcome: "denied", reason: problem, project: by.project.slug });
    throw new OpsError(registry === "npm" && npmScopeOf(name) !== core.config.npmScope ? "out_of_scope" : "forbidden", `${problem}.`);
  }
  return findPackageByLookup(core, registry, name)!;
}

/** The publish body limit the HTTP routes enforce (OPS_MAX_PUBLISH_BYTES), enforced in-process too. */
function assertPublishSize(core: Core, bytes: number, what: string): void {
  if (bytes > core.config.maxPublishBytes) throw new OpsError("payload_too_large", `${what} is ${bytes} bytes; publishes are limited to ${core.config.maxPublishBytes} bytes (OPS_MAX_PUBLISH_BYTES).`);
}

/** Publish a crate from cargo's publish body (length-prefixed metadata and `.crate`), in-process. */
export async function publishCargoInProcess(core: Core, by: InProcessPublisher, body: Uint8Array): Promise<{ name: string; version: string }> {
  assertPublishSize(core, body.byteLength, "The cargo publish body");
  const parsed = parsePublishBody(body);
  const pkg = inProcessClaim(core, by, "cargo", parsed.metadata.name);
  await publishCrate(core, pkg, by.project, parsed, by.publisher, by.actor);
  return { name: pkg.name, version: parsed.metadata.vers };
}

/** Publish one npm version from npm's publish document, in-process. */
export async function publishNpmInProcess(core: Core, by: InProcessPublisher, name: string, body: NpmPublishBody): Promise<{ name: string; version: string }> {
  // The HTTP body is base64 in JSON: about 4/3 of the tarball, which the limit applies to there.
  const attached = Object.values(body._attachments ?? {}).reduce((n, a) => n + (typeof a?.data === "string" ? a.data.length : 0), 0);
  assertPublishSize(core, attached, "The npm publish body");
  const pkg = inProcessClaim(core, by, "npm", name);
  const res = await publishNpm(core, pkg, by.project, name, body, by.publisher, by.actor);
  return { name: pkg.name, version: res.version };
}

/**
 * A published version as stored: the protocol's JSON for it (a cargo index line, an npm version
 * manifest) and its archive's bytes. For ops's own tools that package against what the registry
 * holds (a publish build resolves sibling crates from it). Null when not published.
 */
export async function storedVersion(core: Core, registry: ClaimRegistry, name: string, version: string): Promise<{ name: string; manifest: string; archive: Uint8Array } | null> {
  const pkg = findPackageByLookup(core, registry, name);
  const v = pkg ? findVersion(core.db, pkg.id, registry === "cargo" ? withoutBuild(version) : version) : null;
  const blob = v ? core.blobs.open(v.digest) : null;
  if (!pkg || !v || !blob) return null;
  return { name: pkg.name, manifest: v.manifest, archive: new Uint8Array(await blob.arrayBuffer()) };
}
