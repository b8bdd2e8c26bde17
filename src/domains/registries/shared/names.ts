/**
 * Package names per registry: what is valid, what counts as "the same name" (the uniqueness key)
 * and how protocol paths look a name up.
 *
 * - npm: `@scope/name`, lower case, URL-safe, at most 214 characters (npm's own rules). Only the
 *   estate's scope (`OPS_NPM_SCOPE`) may be claimed or published: anything else is 403 out of scope.
 * - cargo: ASCII letters, digits, `-` and `_`, starting with a letter, at most 64 characters
 *   (crates.io's rules; cargo itself is laxer). Unique modulo case and `-`/`_`.
 * - oci: `<project>/<service>`, two components of the distribution-spec name grammar.
 */
import type { Core } from "../../../core/core";
import { OpsError, invalid } from "../../../core/errors";

export type Registry = "npm" | "cargo" | "oci";
/** The registries whose names are claimed through the API (OCI repositories follow their project). */
export type ClaimRegistry = "npm" | "cargo";
export const CLAIM_REGISTRIES: readonly ClaimRegistry[] = ["npm", "cargo"];

export function isClaimRegistry(s: string): s is ClaimRegistry {
  return s === "npm" || s === "cargo";
}

const NPM_PART = /^[a-z0-9~-][a-z0-9._~-]*$/;
const CARGO_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const OCI_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;

/** The scope of an npm name (`@ops`), or null for an unscoped name. */
export function npmScopeOf(name: string): string | null {
  return name.startsWith("@") && name.includes("/") ? name.slice(0, name.indexOf("/")) : null;
}

/** The unscoped part of an npm name (`lib` for `@ops/lib`). */
export function npmBaseName(name: string): string {
  const i = name.indexOf("/");
  return name.startsWith("@") && i > 0 ? name.slice(i + 1) : name;
}

/** Throw 403 `out_of_scope` unless the npm name sits in the estate's scope. */
export function assertNpmScope(core: Core, name: string): void {
  if (npmScopeOf(name) !== core.config.npmScope) {
    throw new OpsError("out_of_scope", `npm names here must be in the ${core.config.npmScope} scope (like ${core.config.npmScope}/name); "${name}" is out of scope.`, {
      scope: core.config.npmScope,
    });
  }
}

/** True when `name` is a well-formed scoped npm name. */
export function isValidNpmName(name: string): boolean {
  if (name.length > 214) return false;
  const scope = npmScopeOf(name);
  if (!scope) return false;
  const base = npmBaseName(name);
  return NPM_PART.test(scope.slice(1)) && NPM_PART.test(base) && !base.startsWith(".") && !base.startsWith("_") && !base.includes("/");
}

export function isValidCargoName(name: string): boolean {
  return CARGO_NAME.test(name);
}

/** `<project>/<service>` with both halves in the distribution-spec name grammar. */
export function isValidOciName(name: string): boolean {
  const parts = name.split("/");
  return parts.length === 2 && parts.every((p) => OCI_COMPONENT.test(p)) && name.length <= 255;
}

/** The uniqueness key of a name within its registry. */
export function nameKey(registry: Registry, name: string): string {
  return registry === "cargo" ? name.toLowerCase().replace(/-/g, "_") : name;
}

/** How protocol paths find a package. */
export function lookupKey(name: string): string {
  return name.toLowerCase();
}

/**
 * Validate a name for claiming: 403 out of scope (npm), 422 malformed. Returns the name as it will
 * be stored.
 */
export function validateClaimName(core: Core, registry: ClaimRegistry, name: string): string {
  if (registry === "npm") {
    assertNpmScope(core, name);
    if (!isValidNpmName(name)) throw invalid("name", "is not a valid npm package name (lower case letters, digits, '-', '.', '_' and '~')");
    return name;
  }
  if (!isValidCargoName(name)) throw invalid("name", "is not a valid crate name (ASCII letters, digits, '-' and '_', starting with a letter, at most 64)");
  return name;
}
