/**
 * Packages as the Packages pages show them: the shapes of the package reads (document 3,
 * Packages), the addresses of a package's and an image's pages and of the API routes behind them,
 * and an image digest's signature state as the builds that pushed it report it.
 */
import { when } from "../ui";
import type { Build } from "./builds";

export interface PackageSummary {
  name: string;
  registry: string;
  latest?: string | null;
  versions: number;
  yanked: number;
  bytes: number;
  published_at?: string | null;
  publisher?: string | null;
}

export interface ImageRepo {
  repository: string;
  service: string;
  digest: string;
  commit: string;
  environments: string[];
  pushed_at?: string | null;
  size_bytes?: number | null;
}

export interface ProjectPackages {
  npm: PackageSummary[];
  cargo: PackageSummary[];
  images: ImageRepo[];
  npm_registry_url: string;
  cargo_index_url: string;
  registry_host: string;
}

export interface PackageVersion {
  version: string;
  digest: string;
  integrity?: string | null;
  published_at: string;
  publisher: string;
  size_bytes: number;
  yanked: boolean;
}

export interface PackageDetail {
  name: string;
  registry: string;
  dist_tags: Record<string, string>;
  versions: PackageVersion[];
}

/** The registries a project claims names in (images need no claim: a service's name is its repository). */
export const CLAIM_REGISTRIES = ["npm", "cargo"] as const;

/** The console path of a package's page. */
export function packagePage(slug: string, registry: string, name: string): string {
  return `/projects/${slug}/packages/${registry}/${encodeURIComponent(name)}`;
}

/** The console path of an image repository's page (a service's images). */
export function imagePage(slug: string, service: string): string {
  return `/projects/${slug}/packages/images/${encodeURIComponent(service)}`;
}

/** The API path of a package (its detail; PUT claims the name, DELETE releases an empty claim). */
export function packageApi(slug: string, registry: string, name: string): string {
  return `/api/v1/projects/${slug}/packages/${encodeURIComponent(registry)}/${encodeURIComponent(name)}`;
}

export type Signature = { state: "signed" | "failed" | "unsigned" | "unknown"; text: string };

/** The signature state of a digest as its builds report it (decision 0302). */
export function signatureOf(builds: readonly Build[]): Signature {
  for (const b of builds) {
    const sign = b.step_timings.find((s) => s.step === "sign" && s.ok === true);
    if (sign) return { state: "signed", text: `signed with the estate key by build ${b.id}${sign.finished_at ? `, ${when(sign.finished_at)}` : ""}` };
  }
  const failed = builds.find((b) => b.step_timings.some((s) => s.step === "sign" && s.ok === false) || b.failure_kind === "sign");
  if (failed) return { state: "failed", text: `signing failed in build ${failed.id}${failed.error ? `: ${failed.error}` : ""}` };
  if (builds.length > 0) return { state: "unsigned", text: `not signed: build ${builds[0]?.id} stopped before its sign step` };
  return { state: "unknown", text: "pushed outside a build: no build reports a signature; deploying it verifies one" };
}
