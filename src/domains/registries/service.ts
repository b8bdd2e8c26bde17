/**
 * The registries domain's public surface for other domains: package claims (translations create
 * package bundles for claimed names), image repositories (builds push to `<project>/<service>`),
 * the registry's addresses, and the hook through which deployments says where an image runs.
 */
export { findPackageByKey, claimPackage, releaseClaim, type PackageRow, type VersionRow } from "./shared/claims";
export { projectPackages, projectImages, packageDetail, estatePackages } from "./shared/reads";
export { isClaimRegistry, type ClaimRegistry, type Registry } from "./shared/names";
export { registryService, tokenRealm } from "./oci/keys";
export { issueRegistryToken, issueRuntimePullToken } from "./oci/token";
export { collectGarbage, GC_TASK } from "./shared/gc";
export { readImage, parseImageConfig, hostArchitecture, type PulledImage, type ImageConfig, type ImageLayer } from "./oci/pull";
export { pushImage, storedManifest, storedBlob, type ImagePush, type PushBlob, type PushedImage, type ManifestPusher } from "./oci/push";
export { installImagePlacement, type ImagePlacement } from "./shared/placement";
export { claimProblem, isPublished, publishCargoInProcess, publishNpmInProcess, storedVersion, type InProcessPublisher } from "./in-process";
export { cargoPublishBody } from "./cargo/service";
export type { NpmPublishBody } from "./npm/service";
