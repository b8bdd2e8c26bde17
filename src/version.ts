/**
 * The version ops reports. `build.ts` bakes it in with `--define OPS_BUILD_VERSION`; a source
 * checkout reports the package version with `-dev`.
 */
import pkg from "../package.json";

declare const OPS_BUILD_VERSION: string | undefined;

export const VERSION: string = typeof OPS_BUILD_VERSION === "string" && OPS_BUILD_VERSION !== "" ? OPS_BUILD_VERSION : `${pkg.version}-dev`;

/** What `npm run build` bakes in unless `--version` says otherwise (package.json's version). */
export const PACKAGE_VERSION: string = pkg.version;
