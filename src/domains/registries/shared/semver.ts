/**
 * SemVer 2.0 as both npm and cargo use it for published versions (no `v` prefix, no ranges).
 */
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export function isSemver(v: string): boolean {
  return v.length <= 256 && SEMVER.test(v);
}

/** The version without its `+build` metadata (cargo treats `1.0.0+a` and `1.0.0+b` as one version). */
export function withoutBuild(v: string): string {
  const i = v.indexOf("+");
  return i < 0 ? v : v.slice(0, i);
}

/** True for a pre-release (`1.0.0-rc.1`). */
export function isPrerelease(v: string): boolean {
  return withoutBuild(v).includes("-");
}
