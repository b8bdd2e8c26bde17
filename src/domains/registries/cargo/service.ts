/**
 * cargo publish on the shared package model.
 *
 * The body is cargo's framing: `u32 LE json_len, json metadata, u32 LE crate_len, .crate bytes`
 * (no Content-Type; never dispatch on it). Both lengths are checked against the buffer; metadata
 * and archive problems are 400 (the spec's "body or metadata malformed"). The crate is inspected
 * (shared/archive: single `<name>-<version>/` directory, no links, no `.cargo-ok`, no bomb) and
 * its Cargo.toml must name the same package and version. The index line is built from the
 * metadata as cargo's registry-index reference describes and stored with the version.
 */
import type { Core, ProjectRef } from "../../../core/core";
import type { AuditActor } from "../../../core/audit";
import { OpsError } from "../../../core/errors";
import type { PackageRow } from "../shared/claims";
import { publishVersion, findVersion, type Publisher } from "../shared/publish";
import { inspectTarGz, ArchiveError } from "../shared/archive";
import { isSemver, withoutBuild } from "../shared/semver";
import { isValidCargoName } from "../shared/names";
import { renderCargo } from "./render";

export interface CargoDep {
  name: string;
  version_req: string;
  features?: string[];
  optional?: boolean;
  default_features?: boolean;
  target?: string | null;
  kind?: string;
  registry?: string | null;
  explicit_name_in_toml?: string | null;
  artifact?: unknown;
  bindep_target?: unknown;
  lib?: unknown;
}

export interface CargoMetadata {
  name: string;
  vers: string;
  deps: CargoDep[];
  features: Record<string, string[]>;
  links?: string | null;
  rust_version?: string | null;
  [k: string]: unknown;
}

export interface ParsedPublish {
  metadata: CargoMetadata;
  crate: Uint8Array;
}

const bad = (message: string) => new OpsError("bad_request", message);

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/** Validate the metadata JSON's shape (400 on anything cargo would never send). */
function checkMetadata(m: unknown): CargoMetadata {
  if (!m || typeof m !== "object" || Array.isArray(m)) throw bad("The publish metadata is not a JSON object.");
  const md = m as Record<string, unknown>;
  if (typeof md.name !== "string" || !isValidCargoName(md.name)) throw bad("metadata.name is not a valid crate name (ASCII letters, digits, '-' and '_', starting with a letter, at most 64).");
  if (typeof md.vers !== "string" || !isSemver(md.vers)) throw bad("metadata.vers is not a SemVer version.");
  if (!Array.isArray(md.deps)) throw bad("metadata.deps must be an array.");
  for (const [i, d] of (md.deps as unknown[]).entries()) {
    const dep = d as Record<string, unknown>;
    if (!dep || typeof dep !== "object" || typeof dep.name !== "string" || typeof dep.version_req !== "string") throw bad(`metadata.deps[${i}] needs a name and a version_req.`);
    if (dep.features !== undefined && !isStringArray(dep.features)) throw bad(`metadata.deps[${i}].features must be a list of strings.`);
    if (dep.kind !== undefined && !["normal", "dev", "build"].includes(dep.kind as string)) throw bad(`metadata.deps[${i}].kind must be normal, dev or build.`);
  }
  const features = md.features ?? {};
  if (typeof features !== "object" || Array.isArray(features) || !Object.values(features as object).every(isStringArray)) throw bad("metadata.features must map names to lists of strings.");
  if (md.links !== undefined && md.links !== null && typeof md.links !== "string") throw bad("metadata.links must be a string or null.");
  if (md.rust_version !== undefined && md.rust_version !== null && typeof md.rust_version !== "string") throw bad("metadata.rust_version must be a string or null.");
  return { ...(md as CargoMetadata), features: features as Record<string, string[]> };
}

/** Frame metadata and a .crate as cargo does for a publish (what `parsePublishBody` reads). */
export function cargoPublishBody(metadata: Record<string, unknown>, crate: Uint8Array): Uint8Array<ArrayBuffer> {
  const json = new TextEncoder().encode(JSON.stringify(metadata));
  const out = new Uint8Array(8 + json.byteLength + crate.byteLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, json.byteLength, true);
  out.set(json, 4);
  view.setUint32(4 + json.byteLength, crate.byteLength, true);
  out.set(crate, 8 + json.byteLength);
  return out;
}

/** Parse cargo's publish framing (see the file comment). */
export function parsePublishBody(body: Uint8Array): ParsedPublish {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (body.byteLength < 4) throw bad("The publish body is too short to hold the metadata length.");
  const jsonLen = view.getUint32(0, true);
  if (4 + jsonLen + 4 > body.byteLength) throw bad("The metadata length runs past the end of the publish body.");
  let metadata: unknown;
  try {
    metadata = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body.subarray(4, 4 + jsonLen)));
  } catch {
    throw bad("The publish metadata is not valid UTF-8 JSON.");
  }
  const crateLen = view.getUint32(4 + jsonLen, true);
  const start = 8 + jsonLen;
  if (start + crateLen !== body.byteLength) throw bad("The crate length does not match the rest of the publish body.");
  if (crateLen === 0) throw bad("The publish body carries an empty crate.");
  return { metadata: checkMetadata(metadata), crate: body.subarray(start, start + crateLen) };
}

/** cargo's `pubtime`: RFC 3339 to the second (cargo ≥ 1.94 parses exactly 20 characters). */
function pubtime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The index line for a version (without `cksum`, which the stored archive provides). */
function indexLine(m: CargoMetadata, cksum: string, now: number): Record<string, unknown> {
  const deps = m.deps.map((d) => {
    const renamed = typeof d.explicit_name_in_toml === "string" && d.explicit_name_in_toml !== "";
    const dep: Record<string, unknown> = {
      name: renamed ? d.explicit_name_in_toml : d.name,
      req: d.version_req,
      features: d.features ?? [],
      optional: d.optional ?? false,
      default_features: d.default_features ?? true,
      target: d.target ?? null,
      kind: d.kind ?? "normal",
      registry: d.registry ?? null,
      package: renamed ? d.name : null,
    };
    for (const k of ["artifact", "bindep_target", "lib"] as const) if (d[k] !== undefined) dep[k] = d[k];
    return dep;
  });
  const line: Record<string, unknown> = { name: m.name, vers: m.vers, deps, cksum, features: m.features, yanked: false, links: m.links ?? null, v: 1 };
  if (m.rust_version) line.rust_version = m.rust_version;
  line.pubtime = pubtime(now);
  return line;
}

/** Publish one crate version (see the file comment). */
export async function publishCrate(core: Core, pkg: PackageRow, project: ProjectRef, parsed: ParsedPublish, publisher: Publisher, actor: AuditActor): Promise<void> {
  const m = parsed.metadata;
  if (m.name !== pkg.name) throw new OpsError("forbidden", `"${m.name}" is not claimed; the claimed crate name is "${pkg.name}".`);
  if (findVersion(core.db, pkg.id, withoutBuild(m.vers))) throw new OpsError("conflict", `crate version \`${m.vers}\` is already uploaded`);
  const root = `${m.name}-${m.vers}`;
  let inspection;
  try {
    inspection = await inspectTarGz(parsed.crate, { root, collect: ["Cargo.toml"], forbidNames: [".cargo-ok"] });
  } catch (e) {
    if (e instanceof ArchiveError) throw bad(e.message);
    throw e;
  }
  const toml = inspection.files.get("Cargo.toml");
  if (!toml) throw bad(`The crate has no ${root}/Cargo.toml.`);
  let manifest: { package?: { name?: unknown; version?: unknown } };
  try {
    manifest = Bun.TOML.parse(new TextDecoder().decode(toml)) as typeof manifest;
  } catch {
    throw bad("The crate's Cargo.toml is not valid TOML.");
  }
  if (manifest.package?.name !== m.name || manifest.package?.version !== m.vers) {
    throw bad(`The crate's Cargo.toml describes ${String(manifest.package?.name)} ${String(manifest.package?.version)}, the metadata ${m.name} ${m.vers}.`);
  }
  await publishVersion(core, {
    pkg,
    project,
    version: m.vers,
    versionKey: withoutBuild(m.vers),
    archive: parsed.crate,
    fileName: `${m.name}-${m.vers}.crate`,
    mediaType: "application/x-tar",
    manifest: (digest) => JSON.stringify(indexLine(m, digest, core.clock.now())),
    publisher,
    actor,
    render: renderCargo,
  });
}
