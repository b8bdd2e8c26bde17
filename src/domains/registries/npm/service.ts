/**
 * npm publish and dist-tags on the shared package model.
 *
 * A publish body (libnpmpublish) carries exactly one version and one base64 tarball attachment;
 * anything else (deprecate and unpublish rewrite the whole document) is 422. The tarball is
 * decoded, its SHA-1/SHA-512 checked against what the client declared, inspected (shared/archive)
 * and its `package.json` compared with the manifest: a manifest that disagrees with the tarball
 * on name, version or dependencies is refused, so what installers resolve is what they unpack.
 */
import { createHash } from "node:crypto";
import type { Core, ProjectRef } from "../../../core/core";
import type { AuditActor } from "../../../core/audit";
import { OpsError, refused } from "../../../core/errors";
import type { PackageRow } from "../shared/claims";
import { publishVersion, findVersion, changeTag, tagsOf, type Publisher } from "../shared/publish";
import { inspectTarGz, ArchiveError } from "../shared/archive";
import { isSemver } from "../shared/semver";
import { renderNpm, tarballName } from "./render";

export interface NpmPublishBody {
  _id?: string;
  name?: string;
  "dist-tags"?: Record<string, string>;
  versions: Record<string, Record<string, unknown>>;
  _attachments: Record<string, { data: string; length?: number; content_type?: string }>;
}

const TAG = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;

/** Refuse tag names npm would read as a version or range. */
export function assertTagName(tag: string): void {
  if (!TAG.test(tag) || /^v\d/i.test(tag)) throw refused(`"${tag}" is not a valid dist-tag (a letter, then letters, digits, '.', '_' or '-'; not a version).`);
}

type DepMap = Record<string, string>;

function depMap(v: unknown): DepMap {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as DepMap) : {};
}

function sameMap(a: DepMap, b: DepMap): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && String(a[k]) === String(b[k]));
}

/**
 * Compare the publish manifest with the tarball's package.json. npm normalises a manifest before
 * publishing (it drops optional dependencies from `dependencies`, rewrites `bin`), so only the
 * install-relevant maps are compared, with that one normalisation applied.
 */
function assertManifestMatches(manifest: Record<string, unknown>, pj: Record<string, unknown>): void {
  if (pj.name !== manifest.name) throw refused(`The tarball's package.json names "${String(pj.name)}", the publish manifest "${String(manifest.name)}".`);
  if (pj.version !== manifest.version) throw refused(`The tarball's package.json has version "${String(pj.version)}", the publish manifest "${String(manifest.version)}".`);
  const optional = depMap(pj.optionalDependencies);
  const pjDeps = { ...depMap(pj.dependencies) };
  for (const k of Object.keys(optional)) delete pjDeps[k];
  const mDeps = { ...depMap(manifest.dependencies) };
  for (const k of Object.keys(depMap(manifest.optionalDependencies))) delete mDeps[k];
  const checks: Array<[string, DepMap, DepMap]> = [
    ["dependencies", mDeps, pjDeps],
    ["optionalDependencies", depMap(manifest.optionalDependencies), optional],
    ["peerDependencies", depMap(manifest.peerDependencies), depMap(pj.peerDependencies)],
  ];
  for (const [field, m, p] of checks) {
    if (!sameMap(m, p)) throw refused(`The publish manifest's ${field} do not match the tarball's package.json.`);
  }
}

const DROP_FROM_MANIFEST = new Set(["_attachments", "dist", "readme", "readmeFilename", "_resolved", "_integrity", "_from", "_rev", "_npmUser", "_id"]);

/** Publish one npm version (see the file comment). */
export async function publishNpm(core: Core, pkg: PackageRow, project: ProjectRef, routeName: string, body: NpmPublishBody, publisher: Publisher, actor: AuditActor): Promise<{ version: string }> {
  if (body.name !== undefined && body.name !== routeName) throw refused(`The body publishes "${body.name}" but the URL names "${routeName}".`);
  if (body._id !== undefined && body._id !== routeName) throw refused(`The body's _id "${body._id}" does not match "${routeName}".`);
  const versionKeys = Object.keys(body.versions);
  const attachmentKeys = Object.keys(body._attachments);
  if (versionKeys.length !== 1 || attachmentKeys.length !== 1) {
    throw refused(`A publish carries exactly one version with one tarball; this one has ${versionKeys.length} version${versionKeys.length === 1 ? "" : "s"} and ${attachmentKeys.length} attachment${attachmentKeys.length === 1 ? "" : "s"}.`);
  }
  const version = versionKeys[0];
  const manifest = body.versions[version];
  if (!isSemver(version)) throw refused(`"${version}" is not a SemVer version.`);
  if (manifest.version !== version || manifest.name !== routeName) throw refused("The version manifest's name and version must match the package and the version key.");
  if (findVersion(core.db, pkg.id, version)) throw new OpsError("conflict", `${pkg.name}@${version} is already published; versions cannot be republished.`);

  const attachment = body._attachments[attachmentKeys[0]];
  if (typeof attachment.data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(attachment.data)) throw refused("The tarball attachment is not base64.");
  const tarball = new Uint8Array(Buffer.from(attachment.data, "base64"));
  if (attachment.length !== undefined && attachment.length !== tarball.byteLength) throw refused(`The tarball is ${tarball.byteLength} bytes, the attachment says ${attachment.length}.`);
  const shasum = createHash("sha1").update(tarball).digest("hex");
  const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
  const dist = (manifest.dist ?? {}) as { shasum?: string; integrity?: string };
  if (dist.shasum !== undefined && dist.shasum !== shasum) throw refused("The tarball's SHA-1 does not match dist.shasum.");
  if (dist.integrity !== undefined && dist.integrity !== integrity) throw refused("The tarball's SHA-512 does not match dist.integrity.");

  let inspection;
  try {
    inspection = await inspectTarGz(tarball, { root: null, collect: ["package.json"] });
  } catch (e) {
    if (e instanceof ArchiveError) throw refused(e.message);
    throw e;
  }
  const pjBytes = inspection.files.get("package.json");
  if (!pjBytes) throw refused("The tarball has no package.json at its root.");
  let pj: Record<string, unknown>;
  try {
    pj = JSON.parse(new TextDecoder().decode(pjBytes)) as Record<string, unknown>;
  } catch {
    throw refused("The tarball's package.json is not valid JSON.");
  }
  assertManifestMatches(manifest, pj);

  const tags = Object.entries(body["dist-tags"] ?? {})
    .filter(([, v]) => v === version)
    .map(([k]) => k);
  for (const tag of tags) assertTagName(tag);
  if (!("latest" in tagsOf(core.db, pkg.id)) && !tags.includes("latest")) tags.push("latest");

  const stored: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(manifest)) if (!DROP_FROM_MANIFEST.has(k)) stored[k] = v;
  const scripts = depMap(manifest.scripts);
  if (scripts.preinstall || scripts.install || scripts.postinstall) stored.hasInstallScript = true;
  stored._fileCount = inspection.fileCount;
  stored._unpackedSize = inspection.unpackedBytes;

  await publishVersion(core, {
    pkg,
    project,
    version,
    versionKey: version,
    archive: tarball,
    fileName: tarballName(pkg.name, version),
    mediaType: "application/octet-stream",
    integrity,
    shasum,
    manifest: () => JSON.stringify(stored),
    tags,
    publisher,
    actor,
    render: renderNpm,
  });
  return { version };
}

/** Point a dist-tag at a version (`npm dist-tag add`). */
export function addDistTag(core: Core, pkg: PackageRow, project: ProjectRef, tag: string, version: unknown, actor: AuditActor): void {
  assertTagName(tag);
  if (typeof version !== "string" || !isSemver(version)) throw refused("The body must be the version as a JSON string, like \"1.2.0\".");
  changeTag(core, pkg, project, tag, version, actor, renderNpm);
}

/** Remove a dist-tag (`npm dist-tag rm`); `latest` stays. */
export function removeDistTag(core: Core, pkg: PackageRow, project: ProjectRef, tag: string, actor: AuditActor): void {
  if (tag === "latest") throw refused("The latest tag cannot be removed; point it at another version instead.");
  changeTag(core, pkg, project, tag, null, actor, renderNpm);
}
