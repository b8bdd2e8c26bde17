/**
 * The translations domain's surface for other domains. The publish pipeline, which ships a
 * tagged package's `locales/<locale>.json`, calls these in-process with a system actor
 * (`SYSTEM_ACTOR`): they validate and audit exactly as the HTTP routes do.
 *
 *   const bundle = ensurePackageBundle(core, project, "npm", "@ops/ui-kit", SYSTEM_ACTOR);
 *   registerVersion(core, project, String(bundle.id), { locale: "en", tree, version: "1.1.0" }, SYSTEM_ACTOR);
 *
 * Register the source locale's tree (it defines the keys the version ships), then the others.
 */
export { ensurePackageBundle, createBundle, findPackageBundle, type CreateBundleInput } from "./bundles";
export { registerVersion, flattenTree, type RegisterVersionInput } from "./versions";
export { exportLocale, compose, type ExportQuery, type ExportResult } from "./compose";
export type { BundleRow } from "./store";
export { listEntries, setEntry } from "./entries";
