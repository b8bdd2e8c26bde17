/**
 * The cargo sparse index file of a crate, rendered once per change (publish, yank, unyank): one
 * JSON line per version in publish order, each the line stored at publish with the current
 * `yanked` flag. Index paths (`1/a`, `2/ab`, `3/f/foo`, `se/rd/serde`) use the lower-cased name.
 */
import { asc, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import type { Queryable } from "../../../core/db/client";
import { packageVersions } from "../shared/tables";
import type { PackageRow } from "../shared/claims";

export const INDEX = "cargo.index";

/** The index path segments cargo asks for `name` (without the file name itself). */
export function indexPrefix(name: string): string[] {
  const n = name.toLowerCase();
  if (n.length === 1) return ["1"];
  if (n.length === 2) return ["2"];
  if (n.length === 3) return ["3", n[0]];
  return [n.slice(0, 2), n.slice(2, 4)];
}

/** True when `segments` (e.g. `["se", "rd"]`) is where the index keeps `name`. */
export function isIndexPathOf(segments: readonly string[], name: string): boolean {
  const want = indexPrefix(name);
  return want.length === segments.length && want.every((w, i) => w === segments[i]);
}

export function renderCargo(_core: Core, q: Queryable, pkg: PackageRow): Record<string, string> {
  const versions = q.select().from(packageVersions).where(eq(packageVersions.packageId, pkg.id)).orderBy(asc(packageVersions.publishedAt), asc(packageVersions.id)).all();
  let body = "";
  for (const v of versions) {
    const line = JSON.parse(v.manifest) as Record<string, unknown>;
    line.yanked = v.yanked;
    body += JSON.stringify(line) + "\n";
  }
  return { [INDEX]: body };
}
