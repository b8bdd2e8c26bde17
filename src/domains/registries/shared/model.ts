/**
 * Schemas of the package reads and claims (the spec's names; document 3, Packages).
 */
import { t } from "elysia";
import { ErrorBody } from "../../../core/http-schemas";

export const PackageSummary = t.Object(
  {
    bytes: t.Integer({ description: "Bytes of every version's archive" }),
    latest: t.Union([t.String(), t.Null()], { description: "Newest version by published_at; null when the name is claimed and empty" }),
    name: t.String(),
    project: t.String(),
    published_at: t.Union([t.String(), t.Null()]),
    publisher: t.Union([t.String(), t.Null()]),
    registry: t.String({ description: "npm or cargo" }),
    versions: t.Integer(),
    yanked: t.Integer(),
  },
  { title: "PackageSummary" },
);
export type PackageSummary = typeof PackageSummary.static;

export const PackageVersionSummary = t.Object(
  {
    digest: t.String({ description: "Archive SHA-256, lowercase hex, no sha256: prefix" }),
    integrity: t.Union([t.String(), t.Null()], { description: "npm only" }),
    published_at: t.String(),
    publisher: t.String(),
    size_bytes: t.Integer(),
    version: t.String(),
    yanked: t.Boolean(),
  },
  { title: "PackageVersionSummary" },
);
export type PackageVersionSummary = typeof PackageVersionSummary.static;

export const PackageDetailResponse = t.Object(
  {
    dist_tags: t.Record(t.String(), t.String(), { description: "npm only; empty for a crate" }),
    name: t.String(),
    project: t.String(),
    registry: t.String(),
    shared_with: t.Array(t.String()),
    versions: t.Array(t.Ref("PackageVersionSummary"), { description: "Newest first" }),
  },
  { title: "PackageDetailResponse" },
);
export type PackageDetailResponse = Omit<typeof PackageDetailResponse.static, "versions"> & { versions: PackageVersionSummary[] };

export const ImageRepoSummary = t.Object(
  {
    commit: t.String({ description: "Source revision of the newest push (org.opencontainers.image.revision); empty when unknown" }),
    digest: t.String({ description: "Newest pushed manifest, sha256: form" }),
    environments: t.Array(t.String(), { description: "Environments running this digest, in environment order" }),
    pushed_at: t.Optional(t.Union([t.String(), t.Null()])),
    repository: t.String({ description: "<project>/<service>" }),
    service: t.String(),
    size_bytes: t.Optional(t.Union([t.Integer(), t.Null()])),
  },
  { title: "ImageRepoSummary" },
);
export type ImageRepoSummary = typeof ImageRepoSummary.static;

export const EstatePackagesResponse = t.Object(
  {
    cargo: t.Array(t.Ref("PackageSummary")),
    npm: t.Array(t.Ref("PackageSummary")),
  },
  { title: "EstatePackagesResponse" },
);

export const ProjectPackagesResponse = t.Object(
  {
    cargo: t.Array(t.Ref("PackageSummary")),
    npm: t.Array(t.Ref("PackageSummary")),
    images: t.Array(t.Ref("ImageRepoSummary")),
    cargo_index_url: t.String({ description: "Absolute cargo index URL (sparse+…/cargo/)" }),
    npm_registry_url: t.String({ description: "Absolute npm registry URL (…/npm/)" }),
    registry_host: t.String({ description: "OPS_REGISTRY; empty when unset" }),
  },
  { title: "ProjectPackagesResponse" },
);

export const registryModels = {
  PackageSummary,
  PackageVersionSummary,
  PackageDetailResponse,
  ImageRepoSummary,
  EstatePackagesResponse,
  ProjectPackagesResponse,
  ErrorBody,
};
