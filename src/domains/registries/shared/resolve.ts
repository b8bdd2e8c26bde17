/**
 * Project resolvers for the protocol routes. A protocol path names a package, not a project; the
 * `permission` macro asks these for the project slug, which is the project holding the claim.
 *
 * - Reads: an unknown package is the protocol's 404 (after the 401 for a missing credential).
 * - Publishes: a name outside the npm scope or not claimed is 403, audited as a denial like every
 *   other 403 the macro answers.
 *
 * The package row is kept per request so the handler does not look it up again.
 */
import type { Core } from "../../../core/core";
import type { ResolveContext } from "../../../core/authz/plugin";
import { requestMeta } from "../../../core/authz/plugin";
import { actorOf } from "../../../core/authz/principal";
import { writeAudit } from "../../../core/audit";
import { OpsError } from "../../../core/errors";
import { findPackageByLookup, type PackageRow } from "./claims";
import { npmScopeOf, type Registry } from "./names";

const claimByRequest = new WeakMap<Request, PackageRow>();

/** The package a resolver found for this request. */
export function claimOf(request: Request): PackageRow {
  const pkg = claimByRequest.get(request);
  if (!pkg) throw new Error("claimOf: no package was resolved for this request");
  return pkg;
}

function slugOf(core: Core, pkg: PackageRow): string {
  const project = core.access.findProjectById(pkg.projectId);
  if (!project) throw new OpsError("not_found", "No such project.");
  return project.slug;
}

/** Record a denial the resolver answers itself (the macro audits its own). */
export function auditDenied(core: Core, ctx: ResolveContext, action: string, reason: string, project: string | null = null): void {
  writeAudit(core, core.db, {
    ...actorOf(ctx.principal, requestMeta(ctx.request, null)),
    action,
    target: new URL(ctx.request.url).pathname,
    outcome: "denied",
    reason,
    project,
  });
}

/** Resolver for reads: the claim's project, or 404 in the protocol's words. */
export function resolveForRead(core: Core, ctx: ResolveContext, registry: Registry, name: string): string {
  const pkg = findPackageByLookup(core, registry, name, ctx.request);
  if (!pkg) throw new OpsError("not_found", registry === "npm" ? `"${name}" is not in this registry.` : `No such ${registry === "cargo" ? "crate" : "package"} "${name}".`);
  claimByRequest.set(ctx.request, pkg);
  return slugOf(core, pkg);
}

/** Resolver for publishes and other writes: 403 (audited) when out of the npm scope or unclaimed. */
export function resolveForPublish(core: Core, ctx: ResolveContext, registry: Registry, name: string): string {
  if (registry === "npm" && npmScopeOf(name) !== core.config.npmScope) {
    auditDenied(core, ctx, "packages.publish", `npm name out of the ${core.config.npmScope} scope`);
    throw new OpsError("out_of_scope", `npm names here must be in the ${core.config.npmScope} scope; "${name}" is out of scope.`, { scope: core.config.npmScope });
  }
  const pkg = findPackageByLookup(core, registry, name, ctx.request);
  if (!pkg) {
    auditDenied(core, ctx, "packages.publish", "name not claimed");
    throw new OpsError("forbidden", `"${name}" is not claimed by any project; a project claims it first (PUT /api/v1/projects/{slug}/packages/${registry}/{name}).`);
  }
  claimByRequest.set(ctx.request, pkg);
  return slugOf(core, pkg);
}
