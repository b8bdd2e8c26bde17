/**
 * Base images of native builds (docs/decisions/0620). A service's `base` names an image in ops's
 * embedded registry; the build's image is that image's layers, reused by digest, with the app's
 * layer on top and the base's config merged under ops's, so it carries what it runs and starts on
 * an engine with no toolchain (`dev.ops.runtime=engine`).
 *
 * Which images a build may name (decision 0620): only ops's registry (these machines reach no
 * other), and there only its own project's repositories or those of the estate's shared base
 * project (`OPS_BASE_IMAGES_PROJECT`). A base's layers become readable through the project's own
 * repository, so naming another project's image would copy that project's files out of it: it is
 * refused before anything is looked up, so the refusal says nothing of what the other project holds.
 *
 * The clone step resolves the reference once, to the platform manifest's digest (an index is
 * resolved to linux and this host's architecture); the plan keeps that digest, the input key
 * includes it (reuse.ts), and the push step reads the base again by that digest, never by its tag.
 */
import type { Core } from "../../core/core";
import { hostArchitecture, registryService, storedBlob, storedManifest } from "../registries/service";
import { StepFailure, type BuildPlan } from "./plan";

const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
const LABEL_RUNTIME = "dev.ops.runtime";

/**
 * Layer media types a base may have, and what its layer is written as in ops's OCI manifest
 * (Docker's gzip layers are the same bytes as OCI's). Foreign (non-distributable) layers are not
 * in ops's registry, so a base with one is refused.
 */
const LAYER_TYPES: Record<string, string> = {
  "application/vnd.oci.image.layer.v1.tar+gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
  "application/vnd.oci.image.layer.v1.tar": "application/vnd.oci.image.layer.v1.tar",
  "application/vnd.oci.image.layer.v1.tar+zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
  "application/vnd.docker.image.rootfs.diff.tar.gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
};

/** What a build's plan keeps of its base: the reference as written, its repository and the platform image manifest's digest. */
export type BaseRef = NonNullable<BuildPlan["base"]>;

export interface BaseLayer {
  mediaType: string;
  digest: string;
  size: number;
}

/** A base image read out of the registry, ready to go under an app's layer. */
export type BaseImage = BaseRef & {
  /** The fully qualified name, for the `org.opencontainers.image.base.name` annotation. */
  name: string;
  layers: BaseLayer[];
  diffIds: string[];
  /** The base config's `config` object (Env, User, Labels …). */
  config: Record<string, unknown>;
  history: unknown[];
  architecture: string;
  os: string;
  variant?: string;
};

interface Parsed {
  host: string | null;
  repository: string;
  tag: string | null;
  digest: string | null;
}

/** A reference split into its parts (the grammar is checked where it was written: ops.toml, the spec). */
function parseRef(ref: string): Parsed {
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const parts = rest.split("/");
  const first = parts[0]!;
  const host = parts.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost") ? first : null;
  if (host) parts.shift();
  let path = parts.join("/");
  let tag: string | null = null;
  const colon = path.lastIndexOf(":");
  if (colon >= 0) {
    tag = path.slice(colon + 1);
    path = path.slice(0, colon);
  }
  return { host, repository: path, tag, digest };
}

const refused = (ref: string, why: string) => new StepFailure("build", `base "${ref}" ${why}`);

/** The repository a reference may name for `project`, or a StepFailure saying why not (see the file comment). */
function allowedRepository(core: Core, project: string, ref: string): Parsed {
  const p = parseRef(ref);
  const ops = registryService(core);
  const own = new Set([ops, new URL(core.config.publicUrl).host]);
  if (p.host !== null && !own.has(p.host)) {
    throw refused(ref, `names the registry ${p.host}; builds reach no registry but ops's own (${ops}): copy the image into it first (skopeo copy docker://${p.host}/${p.repository}:<tag> docker://${ops}/${project}/<name>:<tag>) and name it as ${project}/<name>:<tag> (docs/guide/recipes.md)`);
  }
  const segments = p.repository.split("/");
  if (segments.length !== 2 || !/^[a-z0-9]/.test(segments[0]!)) {
    throw refused(ref, `names no repository of ops's registry (${ops}): its repositories are <project>/<name>; copy the image into it first (skopeo copy … docker://${ops}/${project}/<name>:<tag>)`);
  }
  const owner = segments[0]!;
  const shared = core.config.baseImagesProject;
  if (owner !== project && owner !== shared) {
    const estate = shared ? `OPS_BASE_IMAGES_PROJECT=${shared}` : "OPS_BASE_IMAGES_PROJECT, not set here";
    throw refused(ref, `is an image of project ${owner}: a build may use its own project's images (${project}/…) or the estate's shared base images (${estate})`);
  }
  return p;
}

function parseJson(bytes: Uint8Array | string, what: string, ref: string): Record<string, unknown> {
  try {
    const doc = JSON.parse(typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes)) as unknown;
    if (doc && typeof doc === "object" && !Array.isArray(doc)) return doc as Record<string, unknown>;
  } catch {
    // Said below.
  }
  throw refused(ref, `has a ${what} that is not a JSON object`);
}

/** The platform manifest of `repository` at `reference` (an index resolved to this host's platform). */
async function platformManifest(core: Core, repository: string, reference: string, ref: string): Promise<{ digest: string; doc: Record<string, unknown> }> {
  const top = await storedManifest(core, repository, reference);
  if (!top) throw refused(ref, `cannot be used: ops's registry has no image ${repository}${reference.startsWith("sha256:") ? "@" : ":"}${reference}: push it there first (skopeo copy … docker://${registryService(core)}/${repository}:<tag>)`);
  const doc = parseJson(top.bytes, "manifest", ref);
  const type = typeof doc.mediaType === "string" ? doc.mediaType : top.mediaType;
  if (type !== OCI_INDEX && type !== DOCKER_LIST) return { digest: top.digest, doc };
  const arch = hostArchitecture();
  const children = Array.isArray(doc.manifests) ? (doc.manifests as Array<{ digest?: string; platform?: { os?: string; architecture?: string } }>) : [];
  const pick = children.find((c) => c.platform?.os === "linux" && c.platform?.architecture === arch && typeof c.digest === "string");
  if (!pick) throw refused(ref, `is an index with no linux/${arch} image`);
  const child = await storedManifest(core, repository, pick.digest!);
  if (!child) throw refused(ref, `names ${pick.digest} for linux/${arch}, which is not in ${repository}`);
  return { digest: child.digest, doc: parseJson(child.bytes, "manifest", ref) };
}

/** The base at `reference` of an allowed repository, read and checked (see the file comment). */
async function readBase(core: Core, p: Parsed, reference: string, ref: string): Promise<BaseImage> {
  const { digest, doc } = await platformManifest(core, p.repository, reference, ref);
  const type = typeof doc.mediaType === "string" ? doc.mediaType : OCI_MANIFEST;
  if (type !== OCI_MANIFEST && type !== DOCKER_MANIFEST) throw refused(ref, `is a ${type}, not an image manifest`);
  const cfgDesc = doc.config as { digest?: string } | undefined;
  const rawLayers = Array.isArray(doc.layers) ? (doc.layers as Array<{ mediaType?: string; digest?: string; size?: number }>) : null;
  if (!cfgDesc?.digest || !rawLayers) throw refused(ref, "is not an image manifest (no config or layers)");
  const cfgBlob = storedBlob(core, p.repository, cfgDesc.digest);
  if (!cfgBlob) throw refused(ref, `has no config ${cfgDesc.digest} in ${p.repository}`);
  const cfg = parseJson(await cfgBlob.text(), "config", ref);
  const layers = rawLayers.map((l, i): BaseLayer => {
    const mediaType = LAYER_TYPES[l.mediaType ?? ""];
    if (!mediaType) throw refused(ref, `has layer ${i} of type ${l.mediaType ?? "(none)"}; a base's layers must be tar, gzip or zstd layers stored in ops's registry`);
    if (typeof l.digest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(l.digest) || typeof l.size !== "number") throw refused(ref, `has layer ${i} without a usable digest and size`);
    // Linked into the base's repository, so it can be linked into the app's (registries' mount).
    if (!storedBlob(core, p.repository, l.digest)) throw refused(ref, `has layer ${l.digest}, which is not in ${p.repository}`);
    return { mediaType, digest: l.digest, size: l.size };
  });
  const rootfs = (cfg.rootfs ?? {}) as { diff_ids?: unknown };
  const diffIds = Array.isArray(rootfs.diff_ids) ? rootfs.diff_ids.filter((d): d is string => typeof d === "string") : [];
  if (diffIds.length !== layers.length) throw refused(ref, `has ${layers.length} layer(s) but its config lists ${diffIds.length} diff id(s)`);
  const os = typeof cfg.os === "string" ? cfg.os : "";
  const architecture = typeof cfg.architecture === "string" ? cfg.architecture : "";
  if (os !== "linux" || architecture !== hostArchitecture()) throw refused(ref, `is for ${os || "?"}/${architecture || "?"}; this machine and its nodes run linux/${hostArchitecture()}`);
  const config = (cfg.config && typeof cfg.config === "object" && !Array.isArray(cfg.config) ? cfg.config : {}) as Record<string, unknown>;
  const labels = (config.Labels ?? {}) as Record<string, unknown>;
  if (labels[LABEL_RUNTIME] === "process") throw refused(ref, `is itself a native image without a base (${LABEL_RUNTIME}=process): it carries no system to run on; name an image with one (busybox, Debian …)`);
  const name = `${registryService(core)}/${p.repository}${p.tag ? `:${p.tag}` : ""}`;
  return {
    ref,
    repository: p.repository,
    digest,
    name,
    layers,
    diffIds,
    config,
    history: Array.isArray(cfg.history) ? cfg.history : [],
    architecture,
    os,
    ...(typeof cfg.variant === "string" ? { variant: cfg.variant } : {}),
  };
}

/**
 * The base `ref` names for a build of `project`, resolved to its platform manifest's digest; a
 * StepFailure (`build`) naming why it cannot be used (see the file comment).
 */
export async function resolveBaseImage(core: Core, project: string, ref: string): Promise<BaseImage> {
  const p = allowedRepository(core, project, ref);
  return readBase(core, p, p.digest ?? p.tag!, ref);
}

/** The base a plan resolved, read again by its digest for the push (its tag may have moved since). */
export async function baseImageAt(core: Core, project: string, base: BaseRef): Promise<BaseImage> {
  const p = allowedRepository(core, project, base.ref);
  const image = await readBase(core, p, base.digest, base.ref);
  if (image.digest !== base.digest) throw refused(base.ref, `resolved to ${base.digest} when the build started, but that manifest is now an index`);
  return image;
}

/** The base's environment with ops's variables over it (a variable ops sets replaces the base's). */
export function mergedEnv(base: unknown, own: readonly string[]): string[] {
  const ownNames = new Set(own.map((e) => e.slice(0, e.indexOf("="))));
  const kept = Array.isArray(base) ? base.filter((e): e is string => typeof e === "string" && e.includes("=") && !ownNames.has(e.slice(0, e.indexOf("=")))) : [];
  return [...kept, ...own];
}
