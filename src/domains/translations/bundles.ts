/**
 * Bundles: creating one (own, estate-shared, or the package bundle of a name the project
 * claimed), and the summaries the project page and `GET /api/v1/tms/bundles` list.
 *
 * What a project "uses" of a shared bundle: every live key of an estate-shared bundle; the keys
 * of the attached version of a package bundle. Its overrides of keys outside that set are the
 * `removed` ones: kept, shown, never composed.
 */
import type { Core, ProjectRef } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import type { AuditActor } from "../../core/audit";
import { and, eq, or } from "drizzle-orm";
import { tx, type Queryable, type Tx } from "../../core/db/client";
import { evaluate } from "../../core/authz/effective";
import { OpsError, invalid } from "../../core/errors";
import { findPackageByKey, isClaimRegistry, type ClaimRegistry } from "../registries/service";
import { tmsBundles } from "./tables";
import { assertBundleName, localeOf } from "./shapes";
import { assertWritable, auditWrite, estateChanged, findBundleById, packageRef, slugOf, type BundleRow } from "./store";
import type { BundleSummary, OwnBundleSummary, ProjectTranslationsResponse, SharedBundleSummary } from "./model";

export interface CreateBundleInput {
  name: string;
  estate?: boolean;
  package?: string | null;
  source_locale?: string;
}

/** `<registry>:<name>` → its parts, or 422. */
export function parsePackageRef(ref: string): { registry: ClaimRegistry; name: string } {
  const i = ref.indexOf(":");
  const registry = i > 0 ? ref.slice(0, i) : "";
  const name = i > 0 ? ref.slice(i + 1) : "";
  if (!isClaimRegistry(registry) || name === "") throw invalid("package", "must be <registry>:<name> with registry npm or cargo (like npm:@ops/ui-kit)");
  return { registry, name };
}

/**
 * Create a bundle whose home is `project` (audited). 404 when `package` names a claim the project
 * does not hold; 409 when the name (or the package's bundle, or an estate-shared bundle of that
 * name) exists; 422 for a malformed name, locale or package reference.
 */
export function createBundle(core: Core, project: ProjectRef, input: CreateBundleInput, actor: AuditActor): BundleRow {
  assertWritable(project);
  const sourceLocale = localeOf(input.source_locale ?? "en", "source_locale");
  if (input.package !== undefined && input.package !== null && input.package !== "") {
    if (input.estate) throw new OpsError("refused", "A package bundle follows its package's versions; it cannot also be estate-shared.");
    const { registry, name } = parsePackageRef(input.package);
    return tx(core.db, (t) => {
      const claim = findPackageByKey(t, registry, name);
      if (!claim || claim.projectId !== project.id) throw new OpsError("not_found", `Project "${project.slug}" holds no claim on the ${registry} name "${name}"; claim it first (PUT /api/v1/projects/${project.slug}/packages/${registry}/…).`);
      const existing = findPackageBundle(t, registry, claim.name);
      if (existing) throw new OpsError("already_exists", `The package ${registry}:${claim.name} already has a bundle (id ${existing.id}).`, { id: existing.id });
      return insertBundle(core, t, project, { kind: "package", name: claim.name, sourceLocale, packageRegistry: registry, packageName: claim.name }, actor);
    });
  }
  assertBundleName(input.name);
  const kind = input.estate ? "estate" : "own";
  return tx(core.db, (t) => {
    const clash = t
      .select()
      .from(tmsBundles)
      .where(or(and(eq(tmsBundles.projectId, project.id), eq(tmsBundles.name, input.name)), kind === "estate" ? and(eq(tmsBundles.kind, "estate"), eq(tmsBundles.name, input.name)) : undefined))
      .get();
    if (clash) {
      const where = clash.projectId === project.id ? `in project "${project.slug}"` : `estate-wide (home: ${slugOf(core, clash.projectId)})`;
      throw new OpsError("already_exists", `A bundle named "${input.name}" already exists ${where}.`, { id: clash.id });
    }
    return insertBundle(core, t, project, { kind, name: input.name, sourceLocale, packageRegistry: null, packageName: null }, actor);
  });
}

type NewBundle = Pick<BundleRow, "kind" | "name" | "sourceLocale" | "packageRegistry" | "packageName">;

/** The bundle following `<registry>:<name>`, or null. */
export function findPackageBundle(q: Queryable, registry: ClaimRegistry, name: string): BundleRow | null {
  return q.select().from(tmsBundles).where(and(eq(tmsBundles.packageRegistry, registry), eq(tmsBundles.packageName, name))).get() ?? null;
}

function insertBundle(core: Core, t: Tx, project: ProjectRef, b: NewBundle, actor: AuditActor): BundleRow {
  const now = core.clock.now();
  const row = t
    .insert(tmsBundles)
    .values({ ...b, projectId: project.id, owner: actor.actor, generation: 1, createdAt: now, updatedAt: now })
    .returning()
    .get();
  auditWrite(core, t, actor, project, `tms-bundle:${row.id}`, "bundle.create", { kind: b.kind, name: b.name, package: packageRef(b) });
  estateChanged(core, t);
  return row;
}

/**
 * The package bundle of `<registry>:<name>` claimed by `project`, created (audited) when absent.
 * For the publish pipeline, which registers versions as a tag ships locale files.
 */
export function ensurePackageBundle(core: Core, project: ProjectRef, registry: ClaimRegistry, name: string, actor: AuditActor, sourceLocale = "en"): BundleRow {
  const claim = findPackageByKey(core.db, registry, name);
  const existing = claim ? findPackageBundle(core.db, registry, claim.name) : null;
  if (existing) {
    if (existing.projectId !== project.id) throw new OpsError("conflict", `The bundle of ${registry}:${name} belongs to another project.`);
    return existing;
  }
  return createBundle(core, project, { name, package: `${registry}:${name}`, source_locale: sourceLocale }, actor);
}

interface Stats {
  strings: number;
  namespaces: number;
  /** Locales with at least one value among the counted keys, sorted. */
  locales: string[];
  latest: string | null;
}

/** Per bundle: keys and namespaces (live keys; a package bundle's newest version) and the locales with a value. */
function stats(core: Core, bundles: readonly BundleRow[]): Map<number, Stats> {
  const out = new Map<number, Stats>();
  if (bundles.length === 0) return out;
  const latest = latestVersions(core, bundles);
  const liveCounts = core.sqlite.query<{ strings: number; namespaces: number }, [number]>(
    "SELECT count(*) AS strings, count(DISTINCT namespace) AS namespaces FROM tms_keys WHERE bundle_id = ? AND deleted_at IS NULL",
  );
  const liveLocales = core.sqlite.query<{ locale: string }, [number]>(
    "SELECT DISTINCT v.locale FROM tms_keys k JOIN tms_values v ON v.key_id = k.id WHERE k.bundle_id = ? AND k.deleted_at IS NULL ORDER BY v.locale",
  );
  const versionCounts = core.sqlite.query<{ strings: number; namespaces: number }, [number]>(
    "SELECT count(*) AS strings, count(DISTINCT k.namespace) AS namespaces FROM tms_version_keys vk JOIN tms_keys k ON k.id = vk.key_id WHERE vk.version_id = ?",
  );
  const versionLocales = core.sqlite.query<{ locale: string }, [number]>(
    "SELECT DISTINCT v.locale FROM tms_version_keys vk JOIN tms_values v ON v.key_id = vk.key_id WHERE vk.version_id = ? ORDER BY v.locale",
  );
  for (const b of bundles) {
    const l = latest.get(b.id) ?? null;
    if (b.kind === "package") {
      const counts = l ? versionCounts.get(l.id)! : { strings: 0, namespaces: 0 };
      out.set(b.id, { ...counts, locales: l ? versionLocales.all(l.id).map((r) => r.locale) : [], latest: l?.version ?? null });
    } else {
      out.set(b.id, { ...liveCounts.get(b.id)!, locales: liveLocales.all(b.id).map((r) => r.locale), latest: null });
    }
  }
  return out;
}

/** The newest registered version (SemVer precedence) of each package bundle. */
export function latestVersions(core: Core, bundles: readonly BundleRow[]): Map<number, { id: number; version: string }> {
  const out = new Map<number, { id: number; version: string }>();
  const q = core.sqlite.query<{ id: number; version: string }, [number]>("SELECT id, version FROM tms_versions WHERE bundle_id = ?");
  for (const b of bundles) {
    if (b.kind !== "package") continue;
    let best: { id: number; version: string } | null = null;
    for (const v of q.all(b.id)) if (!best || Bun.semver.order(v.version, best.version) > 0) best = v;
    if (best) out.set(b.id, best);
  }
  return out;
}

/** A shared bundle as one project uses it: estate-shared (no version) or attached at a version. */
export interface Usage {
  bundle: BundleRow;
  versionId: number | null;
  version: string | null;
}

/** Every shared bundle `projectId` composes: estate-shared ones by name, then its attachments by name. */
export function usagesOf(core: Core, projectId: string): Usage[] {
  const estate = core.db
    .select()
    .from(tmsBundles)
    .where(eq(tmsBundles.kind, "estate"))
    .all()
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((bundle) => ({ bundle, versionId: null, version: null }));
  const attached = core.sqlite
    .query<{ bundle_id: number; version_id: number; version: string }, [string]>(
      "SELECT a.bundle_id, a.version_id, v.version FROM tms_attachments a JOIN tms_versions v ON v.id = a.version_id WHERE a.project_id = ?",
    )
    .all(projectId)
    .map((a) => ({ bundle: findBundleById(core, a.bundle_id) as BundleRow, versionId: a.version_id, version: a.version }))
    .sort((a, b) => a.bundle.name.localeCompare(b.bundle.name));
  return [...estate, ...attached];
}

/** The usage of bundle `bundleId` by `projectId`, or null when the project does not share it. */
export function usageOf(core: Core, projectId: string, bundleId: number): Usage | null {
  return usagesOf(core, projectId).find((u) => u.bundle.id === bundleId) ?? null;
}

/** SQL condition "key k is in the usage's key set" (`k` aliases tms_keys), and its parameters. */
export function shippedCondition(u: Usage): { sql: string; params: number[] } {
  return u.versionId === null ? { sql: "k.deleted_at IS NULL", params: [] } : { sql: "k.id IN (SELECT key_id FROM tms_version_keys WHERE version_id = ?)", params: [u.versionId] };
}

/** A project's view of one shared bundle: key count, overridden keys, and those no longer shipped. */
export function sharedSummary(core: Core, projectId: string, u: Usage): SharedBundleSummary {
  const cond = shippedCondition(u);
  const keys = core.sqlite.query<{ n: number }, number[]>(`SELECT count(*) AS n FROM tms_keys k WHERE k.bundle_id = ? AND ${cond.sql}`).get(u.bundle.id, ...cond.params)?.n ?? 0;
  const counts = core.sqlite
    .query<{ overrides: number; removed: number }, Array<string | number>>(
      `SELECT count(DISTINCT o.key_id) AS overrides, count(DISTINCT CASE WHEN NOT (${cond.sql}) THEN o.key_id END) AS removed
       FROM tms_overrides o JOIN tms_keys k ON k.id = o.key_id WHERE o.project_id = ? AND o.bundle_id = ?`,
    )
    .get(...cond.params, projectId, u.bundle.id) ?? { overrides: 0, removed: 0 };
  return {
    id: u.bundle.id,
    keys,
    name: u.bundle.name,
    overrides: counts.overrides,
    owner: u.bundle.owner,
    project: slugOf(core, u.bundle.projectId),
    removed: counts.removed,
    version: u.version,
    kind: u.bundle.kind,
    source_locale: u.bundle.sourceLocale,
  };
}

/** `GET …/translations`: the project's own bundles, then the shared ones it composes. */
export function projectTranslations(core: Core, project: ProjectRef): ProjectTranslationsResponse {
  const own = core.db
    .select()
    .from(tmsBundles)
    .where(eq(tmsBundles.projectId, project.id))
    .all()
    .sort((a, b) => a.name.localeCompare(b.name));
  const s = stats(core, own);
  return {
    own: own.map((b): OwnBundleSummary => {
      const st = s.get(b.id)!;
      return {
        id: b.id,
        languages: st.locales.length,
        name: b.name,
        namespaces: st.namespaces,
        strings: st.strings,
        locales: st.locales,
        kind: b.kind,
        source_locale: b.sourceLocale,
        package: packageRef(b),
        latest_version: st.latest,
      };
    }),
    shared: usagesOf(core, project.id).map((u) => sharedSummary(core, project.id, u)),
  };
}

const KIND_ORDER = { estate: 0, package: 1, own: 2 } as const;

/**
 * `GET /api/v1/tms/bundles`: every bundle the caller may see — estate-shared and package bundles
 * (anyone who reads translations somewhere may compose or attach them), then the own bundles of
 * the projects where the caller holds translations.read. Shared, then package, then project ones.
 */
export function visibleBundles(core: Core, principal: Principal): BundleSummary[] {
  const grants = core.access.grants(principal);
  const readable = new Map<string, boolean>();
  const canRead = (projectId: string) => {
    let ok = readable.get(projectId);
    if (ok === undefined) {
      ok = evaluate(principal, grants, { kind: "project", projectId, environment: null }).permissions.has("translations.read");
      readable.set(projectId, ok);
    }
    return ok;
  };
  const rows = core.db
    .select()
    .from(tmsBundles)
    .all()
    .filter((b) => b.kind !== "own" || canRead(b.projectId))
    .sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || a.name.localeCompare(b.name) || a.id - b.id);
  const s = stats(core, rows);
  return rows.map((b) => {
    const st = s.get(b.id)!;
    return {
      id: b.id,
      languages: st.locales.length,
      latest_version: st.latest,
      name: b.name,
      owner: b.owner,
      package: packageRef(b),
      project: slugOf(core, b.projectId),
      strings: st.strings,
      kind: b.kind,
      source_locale: b.sourceLocale,
    };
  });
}
