/**
 * Package reads and name claims under `/api/v1` (document 3, Package reads; DESIGN.md §3 claims).
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../../core/core";
import { authzPlugin } from "../../../core/authz/plugin";
import { actorOf } from "../../../core/authz/principal";
import { errors, NoContent } from "../../../core/http-schemas";
import { OpsError } from "../../../core/errors";
import { registryModels, type PackageSummary } from "./model";
import { estatePackages, projectPackages, projectRegistryPackages, packageDetail, projectImages } from "./reads";
import { claimPackage, releaseClaim } from "./claims";
import { isClaimRegistry, type ClaimRegistry } from "./names";

const TAG = ["packages"];

function registryParam(registry: string): ClaimRegistry {
  if (!isClaimRegistry(registry)) throw new OpsError("not_found", `No such registry "${registry}" (npm or cargo).`);
  return registry;
}

export function packageRoutes(core: Core) {
  const slugRegistryName = t.Object({ slug: t.String(), registry: t.String(), name: t.String() });
  return new Elysia({ name: "registries-packages", prefix: "/api/v1" })
    .use(authzPlugin(core))
    .model(registryModels)
    .get("/packages", ({ auth }) => estatePackages(core, auth.principal), {
      // Any caller: the list is narrowed to the projects where it holds packages.read, so a person
      // in no such project gets empty lists, as the spec says, not a 403 (decision 0536).
      permission: "authenticated",
      detail: { tags: TAG, summary: "Every claimed name in the caller's projects (those where it holds packages.read)" },
      response: { 200: t.Ref("EstatePackagesResponse"), ...errors(401, 403) },
    })
    .get(
      "/projects/:slug/packages",
      ({ auth }) => {
        const project = auth.project!;
        const base = core.config.publicUrl;
        return {
          ...projectPackages(core, project),
          images: projectImages(core, project),
          cargo_index_url: `sparse+${base}/cargo/`,
          npm_registry_url: `${base}/npm/`,
          registry_host: core.config.registry ?? "",
        };
      },
      {
        permission: { key: "packages.read", environment: "none" },
        params: t.Object({ slug: t.String() }),
        detail: { tags: TAG, summary: "The project's npm and cargo packages and images, with the registry URLs" },
        response: { 200: t.Ref("ProjectPackagesResponse"), ...errors(401, 403, 404) },
      },
    )
    .get("/projects/:slug/packages/:registry", ({ auth, params }) => projectRegistryPackages(core, auth.project!, registryParam(params.registry)), {
      permission: { key: "packages.read", environment: "none" },
      params: t.Object({ slug: t.String(), registry: t.String() }),
      detail: { tags: TAG, summary: "The project's packages in one registry" },
      response: { 200: t.Array(t.Ref("PackageSummary")), ...errors(401, 403, 404) },
    })
    .get("/projects/:slug/packages/:registry/:name", ({ auth, params }) => packageDetail(core, auth.project!, registryParam(params.registry), params.name), {
      permission: { key: "packages.read", environment: "none" },
      params: slugRegistryName,
      detail: { tags: TAG, summary: "One package with its versions, newest first" },
      response: { 200: t.Ref("PackageDetailResponse"), ...errors(401, 403, 404) },
    })
    .put(
      "/projects/:slug/packages/:registry/:name",
      ({ auth, params, set }) => {
        const registry = registryParam(params.registry);
        const res = claimPackage(core, auth.project!, registry, params.name, actorOf(auth.principal, auth.meta));
        set.status = res.created ? 201 : 200;
        const summary: PackageSummary = projectRegistryPackages(core, auth.project!, registry).find((s) => s.name === res.package.name)!;
        return summary;
      },
      {
        permission: { key: "packages.publish", environment: "none" },
        params: slugRegistryName,
        detail: { tags: TAG, summary: "Claim a package name for the project: 201 new, 200 already this project's, 409 another project's" },
        response: { 200: t.Ref("PackageSummary"), 201: t.Ref("PackageSummary"), ...errors(401, 403, 404, 409, 422) },
      },
    )
    .delete(
      "/projects/:slug/packages/:registry/:name",
      ({ auth, params, set }) => {
        releaseClaim(core, auth.project!, registryParam(params.registry), params.name, actorOf(auth.principal, auth.meta));
        set.status = 204;
        return undefined;
      },
      {
        permission: { key: "packages.publish", environment: "none" },
        params: slugRegistryName,
        detail: { tags: TAG, summary: "Release a claim that has no versions" },
        response: { 204: NoContent, ...errors(401, 403, 404, 409) },
      },
    );
}
