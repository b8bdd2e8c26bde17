/**
 * Ref names every code host implementation accepts before handing one to git or to a host's API.
 */

/**
 * A ref name ops will pass on: letters, digits and `._/-`, no `..` or empty segment, no leading
 * `-` or `/`, no `@{`, `^`, `~`, `:` or spaces (so no revision syntax sneaks in), and none of
 * git's reserved endings.
 */
export function isSafeRefName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 255 &&
    /^[A-Za-z0-9._/-]+$/.test(name) &&
    !name.includes("..") &&
    !name.includes("//") &&
    !name.startsWith("-") &&
    !name.startsWith("/") &&
    !name.endsWith("/") &&
    !name.endsWith(".") &&
    !name.endsWith(".lock")
  );
}
