/**
 * Packages as the Packages pages show them: the shapes of the package reads (document 3,
 * Packages), the addresses of a package's and an image's pages and of the API routes behind them.
 */

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
