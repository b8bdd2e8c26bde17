/**
 * Package reads: summaries per project and across the caller's projects, one package's detail,
 * the images of a project (its OCI repositories), and file lookups for downloads.
 */
import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import type { Core, ProjectRef } from "../../../core/core";
import type { Principal } from "../../../core/authz/principal";
import { evaluate } from "../../../core/authz/effective";
import { iso, isoOrNull } from "../../../core/clock";
import { OpsError } from "../../../core/errors";
import { packages, packageVersions } from "./tables";
import { statements } from "./statements";
import { findPackageByKey, type PackageRow } from "./claims";
import { tagsOf } from "./publish";
import type { ClaimRegistry } from "./names";
import type { ImageRepoSummary, PackageDetailResponse, PackageSummary } from "./model";
import { environmentsRunning } from "./placement";

interface SummaryRow {
  id: number;
  registry: string;
  name: string;
  project_id: string;
  bytes: number;
  versions: number;
  yanked: number;
  latest: string | null;
  published_at: number | null;
  publisher: string | null;
}

/** The file of `pkg` named `fileName` (any version), or null. */
export function findFile(core: Core, pkg: PackageRow, fileName: string): { digest: string; size: number; versionId: number } | null {
  const r = statements(core).fileByName.get(pkg.id, fileName);
  return r ? { digest: r.digest, size: r.size, versionId: r.version_id } : null;
}

/** True when `pkg` has at least one version. */
export function hasVersions(core: Core, pkg: PackageRow): boolean {
  return statements(core).anyVersion.get(pkg.id) !== null;
}

function summaries(core: Core, projectIds: readonly string[], registries: readonly ClaimRegistry[]): PackageSummary[] {
  if (projectIds.length === 0) return [];
  const rows = core.db.all<SummaryRow>(sql`
    SELECT p.id, p.registry, p.name, p.project_id,
      coalesce((SELECT sum(size_bytes) FROM package_versions v WHERE v.package_id = p.id), 0) AS bytes,
      (SELECT count(*) FROM package_versions v WHERE v.package_id = p.id) AS versions,
      (SELECT count(*) FROM package_versions v WHERE v.package_id = p.id AND v.yanked = 1) AS yanked,
      lv.version AS latest, lv.published_at AS published_at, lv.publisher AS publisher
    FROM packages p
    LEFT JOIN package_versions lv ON lv.id = (SELECT id FROM package_versions v WHERE v.package_id = p.id ORDER BY v.published_at DESC, v.id DESC LIMIT 1)
    WHERE p.registry IN (${sql.join(registries.map((r) => sql`${r}`), sql`, `)})
      AND p.project_id IN (${sql.join(projectIds.map((id) => sql`${id}`), sql`, `)})
    ORDER BY p.name`);
  const slugs = new Map<string, string>();
  const slugOf = (id: string) => {
    let s = slugs.get(id);
    if (s === undefined) {
      s = core.access.findProjectById(id)?.slug ?? "";
      slugs.set(id, s);
    }
    return s;
  };
  return rows.map((r) => ({
    bytes: r.bytes,
    latest: r.latest,
    name: r.name,
    project: slugOf(r.project_id),
    published_at: isoOrNull(r.published_at),
    publisher: r.publisher,
    registry: r.registry,
    versions: r.versions,
    yanked: r.yanked,
  }));
}

/** The npm and cargo packages of one project. */
export function projectPackages(core: Core, project: ProjectRef): { npm: PackageSummary[]; cargo: PackageSummary[] } {
  const all = summaries(core, [project.id], ["npm", "cargo"]);
  return { npm: all.filter((s) => s.registry === "npm"), cargo: all.filter((s) => s.registry === "cargo") };
}

/** One registry's packages of a project. */
export function projectRegistryPackages(core: Core, project: ProjectRef, registry: ClaimRegistry): PackageSummary[] {
  return summaries(core, [project.id], [registry]);
}

/** Every claimed name in the projects where `principal` may read packages. */
export function estatePackages(core: Core, principal: Principal): { npm: PackageSummary[]; cargo: PackageSummary[] } {
  const grants = core.access.grants(principal);
  const projectIds = core.db
    .selectDistinct({ id: packages.projectId })
    .from(packages)
    .all()
    .map((r) => r.id)
    .filter((id) => evaluate(principal, grants, { kind: "project", projectId: id, environment: null }).permissions.has("packages.read"));
  const all = summaries(core, projectIds, ["npm", "cargo"]);
  return { npm: all.filter((s) => s.registry === "npm"), cargo: all.filter((s) => s.registry === "cargo") };
}

/** One package of a project, with its versions newest first. 404 when the project holds no such name. */
export function packageDetail(core: Core, project: ProjectRef, registry: ClaimRegistry, name: string): PackageDetailResponse {
  const pkg = findPackageByKey(core.db, registry, name);
  if (!pkg || pkg.projectId !== project.id) throw new OpsError("not_found", `Project "${project.slug}" has no ${registry} package "${name}".`);
  const versions = core.db.select().from(packageVersions).where(eq(packageVersions.packageId, pkg.id)).orderBy(desc(packageVersions.publishedAt), desc(packageVersions.id)).all();
  return {
    dist_tags: registry === "npm" ? tagsOf(core.db, pkg.id) : {},
    name: pkg.name,
    project: project.slug,
    registry,
    shared_with: [],
    versions: versions.map((v) => ({
      digest: v.digest,
      integrity: v.integrity,
      published_at: iso(v.publishedAt),
      publisher: v.publisher,
      size_bytes: v.sizeBytes,
      version: v.version,
      yanked: v.yanked,
    })),
  };
}

/** The project's image repositories with their newest pushed manifest. */
export function projectImages(core: Core, project: ProjectRef): ImageRepoSummary[] {
  const repos = core.db.select().from(packages).where(and(eq(packages.registry, "oci"), eq(packages.projectId, project.id))).orderBy(asc(packages.name)).all();
  if (repos.length === 0) return [];
  const out: ImageRepoSummary[] = [];
  const newest = core.db
    .select()
    .from(packageVersions)
    .where(inArray(packageVersions.packageId, repos.map((r) => r.id)))
    .orderBy(desc(packageVersions.publishedAt), desc(packageVersions.id))
    .all();
  for (const repo of repos) {
    // The newest image, not the newest signature artifact pushed beside it.
    const v = newest.find((n) => n.packageId === repo.id && !(JSON.parse(n.manifest) as { signature?: boolean }).signature);
    if (!v) continue;
    const meta = JSON.parse(v.manifest) as { commit?: string };
    const service = repo.name.slice(repo.name.indexOf("/") + 1);
    out.push({
      commit: meta.commit ?? "",
      digest: v.version,
      environments: environmentsRunning(core, project.id, service, v.version),
      pushed_at: iso(v.publishedAt),
      repository: repo.name,
      service,
      size_bytes: v.sizeBytes,
    });
  }
  return out;
}
