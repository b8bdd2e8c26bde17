/**
 * In-process publishing. ops itself publishes too: a publish build packages a tag's modules and
 * hands the result to the same protocol code a `cargo publish` or `npm publish` reaches over HTTP
 * (body parsing, archive inspection, manifest checks, the version row, the re-rendered documents,
 * the audit row and the `package.published` event). What the HTTP routes' resolvers decide before
 * that — the npm scope, the claim and its project — is decided here the same way, and a refusal is
 * audited as denied.
 *
 * Above the protocols (it composes cargo's and npm's publish), so the shared publish code below
 * them never imports a protocol.
 */
import type { Core, ProjectRef } from "../../core/core";
import { writeAudit, type AuditActor } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { findPackageByLookup, type PackageRow } from "./shared/claims";
import { findVersion, type Publisher } from "./shared/publish";
import { npmScopeOf, type ClaimRegistry } from "./shared/names";
import { withoutBuild } from "./shared/semver";
import { parsePublishBody, publishCrate } from "./cargo/service";
import { publishNpm, type NpmPublishBody } from "./npm/service";

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
