/**
 * Stored protocol documents. An npm packument or a cargo index file is rendered in the
 * transaction that changes its package (publish, yank, dist-tag) and stored with a strong ETag,
 * so a read is one primary-key lookup and never rebuilds anything. Documents embed absolute
 * URLs; when OPS_PUBLIC_URL changes they are re-rendered once, on their first read.
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import type { Queryable, Tx } from "../../../core/db/client";
import { tx } from "../../../core/db/client";
import { sha256Hex } from "../../../core/blobs/store";
import { packageDocuments } from "./tables";
import { statements } from "./statements";
import { registryReadCache, RegistryReadCache } from "./read-cache";
import type { PackageRow } from "./claims";

/** Render every document a package's protocol serves: kind → body. */
export type Renderer = (core: Core, q: Queryable, pkg: PackageRow) => Record<string, string>;

export interface StoredDocument {
  body: string;
  etag: string;
  updatedAt: number;
}

/** Render and store (replace) every document of `pkg` inside `t`. */
export function storeDocuments(core: Core, t: Tx, pkg: PackageRow, render: Renderer): void {
  const now = core.clock.now();
  for (const [kind, body] of Object.entries(render(core, t, pkg))) {
    const etag = `"${sha256Hex(body).slice(0, 40)}"`;
    t.insert(packageDocuments)
      .values({ packageId: pkg.id, kind, body, etag, baseUrl: core.config.publicUrl, updatedAt: now })
      .onConflictDoUpdate({ target: [packageDocuments.packageId, packageDocuments.kind], set: { body, etag, baseUrl: core.config.publicUrl, updatedAt: now } })
      .run();
  }
}

/**
 * The stored document `kind` of `pkg`, rendered first if it is missing or was rendered for another
 * public URL. Served from the registries' read cache while the database is unchanged (a publish,
 * yank or dist-tag change rewrites the document, and any write empties the cache; 0641).
 */
export function readDocument(core: Core, pkg: PackageRow, kind: string, render: Renderer, request?: Request): StoredDocument {
  const cache = registryReadCache(core);
  const docs = cache.sync(request) ? cache.map<StoredDocument>("documents") : new Map<string, StoredDocument>();
  const key = `${pkg.id}\u0000${kind}`;
  const hit = docs.get(key);
  if (hit) return hit;
  const row = statements(core).document.get(pkg.id, kind);
  if (row && row.base_url === core.config.publicUrl) {
    const doc = { body: row.body, etag: row.etag, updatedAt: row.updated_at };
    RegistryReadCache.put(docs, key, doc);
    return doc;
  }
  tx(core.db, (t) => storeDocuments(core, t, pkg, render));
  const fresh = core.db
    .select({ body: packageDocuments.body, etag: packageDocuments.etag, updatedAt: packageDocuments.updatedAt })
    .from(packageDocuments)
    .where(and(eq(packageDocuments.packageId, pkg.id), eq(packageDocuments.kind, kind)))
    .get();
  if (!fresh) throw new Error(`renderer produced no ${kind} document`);
  return fresh;
}

/** True when the request's conditional headers show the client already holds this document. */
export function notModified(request: Request, doc: StoredDocument): boolean {
  const inm = request.headers.get("if-none-match");
  if (inm !== null) return inm.split(",").some((v) => v.trim().replace(/^W\//, "") === doc.etag);
  const ims = request.headers.get("if-modified-since");
  if (ims !== null) {
    const t = Date.parse(ims);
    return !Number.isNaN(t) && Math.floor(doc.updatedAt / 1000) <= Math.floor(t / 1000);
  }
  return false;
}
