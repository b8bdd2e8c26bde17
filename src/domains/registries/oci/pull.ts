/**
 * Reading an image out of the embedded registry, in-process: the manifest of a repository by tag
 * or digest (an index is resolved to the host's platform), the image config that matters to a
 * runtime (Entrypoint, Cmd, Env, WorkingDir, ExposedPorts, Labels, User) and the layers in order,
 * each readable from the blob store. Nothing goes over HTTP and no token is needed: the caller
 * (the deployments domain) has already decided that the image may run.
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import { OpsError } from "../../../core/errors";
import { packageFiles } from "../shared/tables";
import { findRepository } from "./blobs";
import { findManifest } from "./manifests";

/** What a runtime needs from an image's config (the OCI `config` object). */
export interface ImageConfig {
  entrypoint: string[];
  cmd: string[];
  /** `NAME=value` entries, in the image's order. */
  env: string[];
  /** Absolute; "/" when the image names none. */
  workingDir: string;
  /** Ports the image declares, e.g. `["8080/tcp"]`. */
  exposedPorts: string[];
  labels: Record<string, string>;
  /** The image's `User`, or "" (the process runtime always runs as its own unprivileged user). */
  user: string;
}

export interface ImageLayer {
  digest: string;
  mediaType: string;
  size: number;
  /** The layer's bytes as stored (compressed as its media type says). */
  open(): Blob;
}

export interface PulledImage {
  repository: string;
  /** The digest of the image manifest (a platform's manifest when the reference named an index). */
  digest: string;
  /** The digest the reference resolved to (the index's own when it was one). */
  resolvedFrom: string;
  config: ImageConfig;
  /** Lowest first, as they are applied. */
  layers: ImageLayer[];
}

const INDEX_TYPES = new Set(["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"]);
/** Configs and manifests are small; anything larger is not an image we wrote or expect. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;

interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  platform?: { os?: string; architecture?: string };
}

/** The architecture name OCI uses for this host. */
export function hostArchitecture(): string {
  const map: Record<string, string> = { x64: "amd64", arm64: "arm64", arm: "arm", ia32: "386", ppc64: "ppc64le", s390x: "s390x", riscv64: "riscv64" };
  return map[process.arch] ?? process.arch;
}

function notFound(message: string): OpsError {
  return new OpsError("not_found", message);
}

async function readJson(core: Core, hex: string, what: string): Promise<Record<string, unknown>> {
  const blob = core.blobs.open(hex);
  if (!blob) throw notFound(`The ${what} sha256:${hex} is missing from the blob store.`);
  if (blob.size > MAX_JSON_BYTES) throw new OpsError("refused", `The ${what} is ${blob.size} bytes; at most ${MAX_JSON_BYTES} are read.`);
  try {
    const doc = JSON.parse(await blob.text()) as unknown;
    if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw new Error("not an object");
    return doc as Record<string, unknown>;
  } catch {
    throw new OpsError("refused", `The ${what} sha256:${hex} is not a JSON object.`);
  }
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

/** The runtime's view of an OCI image config document. */
export function parseImageConfig(doc: Record<string, unknown>): ImageConfig {
  const c = (doc.config && typeof doc.config === "object" ? doc.config : {}) as Record<string, unknown>;
  const labels: Record<string, string> = {};
  if (c.Labels && typeof c.Labels === "object") {
    for (const [k, v] of Object.entries(c.Labels as Record<string, unknown>)) if (typeof v === "string") labels[k] = v;
  }
  const wd = typeof c.WorkingDir === "string" && c.WorkingDir.startsWith("/") ? c.WorkingDir : "/";
  return {
    entrypoint: strings(c.Entrypoint),
    cmd: strings(c.Cmd),
    env: strings(c.Env).filter((e) => e.includes("=")),
    workingDir: wd,
    exposedPorts: c.ExposedPorts && typeof c.ExposedPorts === "object" ? Object.keys(c.ExposedPorts as object).sort() : [],
    labels,
    user: typeof c.User === "string" ? c.User : "",
  };
}

function manifestHexOf(core: Core, versionId: number): string | null {
  const row = core.db
    .select({ digest: packageFiles.digest })
    .from(packageFiles)
    .where(and(eq(packageFiles.versionId, versionId), eq(packageFiles.role, "manifest")))
    .get();
  return row?.digest ?? null;
}

/**
 * Read `<repository>` at `reference` (a tag or `sha256:` digest). An index resolves to its
 * linux manifest for this host's architecture. 404 when the repository, reference or a blob is
 * missing; 422 `refused` for a manifest that is not an image (or an index without this platform).
 */
export async function readImage(core: Core, repository: string, reference: string): Promise<PulledImage> {
  const repo = findRepository(core.db, repository);
  if (!repo) throw notFound(`The registry has no repository ${repository}.`);
  const top = findManifest(core, repo, reference);
  const topHex = top ? manifestHexOf(core, top.id) : null;
  if (!top || !topHex) throw notFound(`${repository} has no manifest ${reference}.`);
  let hex = topHex;
  let doc = await readJson(core, hex, "manifest");
  const isIndex = (typeof doc.mediaType === "string" && INDEX_TYPES.has(doc.mediaType)) || (Array.isArray(doc.manifests) && !doc.config);
  if (isIndex) {
    const arch = hostArchitecture();
    const children = (doc.manifests as Descriptor[]).filter((d) => d && typeof d.digest === "string");
    const pick = children.find((d) => d.platform?.os === "linux" && d.platform?.architecture === arch) ?? (children.length === 1 && !children[0].platform ? children[0] : undefined);
    if (!pick) throw new OpsError("refused", `${repository}@${top.version} is an index with no linux/${arch} image.`);
    const child = findManifest(core, repo, pick.digest);
    const childHex = child ? manifestHexOf(core, child.id) : null;
    if (!child || !childHex) throw notFound(`${repository} has no manifest ${pick.digest} (named by the index ${top.version}).`);
    hex = childHex;
    doc = await readJson(core, hex, "manifest");
  }
  const config = doc.config as Descriptor | undefined;
  if (!config || typeof config.digest !== "string" || !Array.isArray(doc.layers)) {
    throw new OpsError("refused", `${repository}@sha256:${hex} is not an image manifest (no config or layers).`);
  }
  const configDoc = await readJson(core, config.digest.replace(/^sha256:/, ""), "image config");
  const layers: ImageLayer[] = (doc.layers as Descriptor[]).map((d, i) => {
    if (!d || typeof d.digest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(d.digest)) throw new OpsError("refused", `Layer ${i} of ${repository}@sha256:${hex} has no usable digest.`);
    const layerHex = d.digest.slice(7);
    return {
      digest: d.digest,
      mediaType: d.mediaType ?? "application/vnd.oci.image.layer.v1.tar+gzip",
      size: d.size,
      open: () => {
        const blob = core.blobs.open(layerHex);
        if (!blob) throw notFound(`Layer ${d.digest} of ${repository} is missing from the blob store.`);
        return blob;
      },
    };
  });
  return { repository, digest: `sha256:${hex}`, resolvedFrom: top.version, config: parseImageConfig(configDoc), layers };
}
