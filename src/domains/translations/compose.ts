/**
 * Composition and export of one locale for a project, built on one of its own bundles.
 *
 * Layers, first wins: the base bundle's own text, then the project's overrides of the shared
 * bundles it uses, then the estate-shared bundles (by name) and the attached package bundles (by
 * name) at their attached versions. A key the locale has no text for in any layer falls back to
 * the source locale, per key (each layer's own source locale), in the same layer order. When two
 * layers disagree on the shape of the tree (`a.b` a text in one, a group in another), the earlier
 * layer wins and the later key is left out.
 *
 * Exports are computed once per change, not per request: a request reads the estate-wide change
 * counter (one row); when it moved since the cached composition was checked, the composition's
 * signature (the generations of the bundles and the project state it depends on) is compared, and
 * only a real change recomputes it. Each rendered format carries a strong ETag of its bytes.
 */
import { createHash } from "node:crypto";
import { coreLocal, type Core, type ProjectRef } from "../../core/core";
import { OpsError } from "../../core/errors";
import { canonicalLocale } from "./shapes";
import { resolveHomeBundle, type BundleRow } from "./store";
import { shippedCondition, usagesOf } from "./bundles";
import { CONTENT_TYPES, entryId, render, type ComposedEntry, type ExportFormat } from "./formats";

interface Text {
  namespace: string;
  key: string;
  locale: string;
  value: string;
  status: "translated" | "review" | null;
}

interface Composition {
  signature: string;
  /** The estate-wide counter when the signature was last found current. */
  seen: number;
  entries: ComposedEntry[];
  /** Rendered formats, encoded once: a cached export only copies bytes. */
  renders: Map<string, { body: Uint8Array<ArrayBuffer>; etag: string }>;
}

const CACHE_LIMIT = 64;

function cacheOf(core: Core): Map<string, Composition> {
  return coreLocal<Map<string, Composition>>(core, "translations.exports", () => new Map());
}

function estateGeneration(core: Core): number {
  return core.sqlite.query<{ generation: number }, []>("SELECT generation FROM tms_state WHERE id = 1").get()?.generation ?? 0;
}

/** What a composition depends on: the base bundle, every shared bundle the project uses, its own state. */
function signatureOf(core: Core, projectId: string, baseId: number): string {
  const rows = core.sqlite
    .query<{ id: number; generation: number; version_id: number | null }, [number, string]>(
      `SELECT id, generation, NULL AS version_id FROM tms_bundles WHERE kind = 'estate' OR id = ?1
       UNION ALL SELECT a.bundle_id, b.generation, a.version_id FROM tms_attachments a JOIN tms_bundles b ON b.id = a.bundle_id WHERE a.project_id = ?2
       ORDER BY 1, 3`,
    )
    .all(baseId, projectId);
  const own = core.sqlite.query<{ generation: number }, [string]>("SELECT generation FROM tms_project_state WHERE project_id = ?").get(projectId)?.generation ?? 0;
  return `${own}|${rows.map((r) => `${r.id}:${r.generation}:${r.version_id ?? ""}`).join(",")}`;
}

function bundleTexts(core: Core, bundleId: number, cond: { sql: string; params: number[] }, locales: string[]): Text[] {
  return core.sqlite
    .query<Text, Array<string | number>>(
      `SELECT k.namespace, k.key, v.locale, v.value, v.status FROM tms_keys k JOIN tms_values v ON v.key_id = k.id
       WHERE k.bundle_id = ? AND ${cond.sql} AND v.locale IN (${locales.map(() => "?").join(", ")})`,
    )
    .all(bundleId, ...cond.params, ...locales);
}

function overrideTexts(core: Core, projectId: string, bundleId: number, cond: { sql: string; params: number[] }, locales: string[]): Text[] {
  return core.sqlite
    .query<Text, Array<string | number>>(
      `SELECT k.namespace, k.key, o.locale, o.value, NULL AS status FROM tms_overrides o JOIN tms_keys k ON k.id = o.key_id
       WHERE o.project_id = ? AND o.bundle_id = ? AND ${cond.sql} AND o.locale IN (${locales.map(() => "?").join(", ")})`,
    )
    .all(projectId, bundleId, ...cond.params, ...locales);
}

/** Compose `locale` for `project` on `base` (see the file comment). Sorted by namespace, then key. */
export function compose(core: Core, project: ProjectRef, base: BundleRow, locale: string): ComposedEntry[] {
  const live = { sql: "k.deleted_at IS NULL", params: [] as number[] };
  const usages = usagesOf(core, project.id);
  // Each layer: its texts in the locale and in its source locale.
  const layers: Array<{ source: string; texts: Text[] }> = [{ source: base.sourceLocale, texts: bundleTexts(core, base.id, live, [locale, base.sourceLocale]) }];
  for (const u of usages) layers.push({ source: u.bundle.sourceLocale, texts: overrideTexts(core, project.id, u.bundle.id, shippedCondition(u), [locale, u.bundle.sourceLocale]) });
  for (const u of usages) layers.push({ source: u.bundle.sourceLocale, texts: bundleTexts(core, u.bundle.id, shippedCondition(u), [locale, u.bundle.sourceLocale]) });

  const chosen = new Map<string, ComposedEntry>();
  const leaves = new Set<string>();
  const groups = new Set<string>();
  const take = (t: Text, fallback: boolean) => {
    const id = entryId(t.namespace, t.key);
    if (chosen.has(id) || groups.has(id)) return;
    // Every proper prefix of the key (`a`, `a.b` of `a.b.c`) must not be a text of its own.
    const prefixes: string[] = [];
    for (let i = t.key.indexOf("."); i > 0; i = t.key.indexOf(".", i + 1)) {
      const prefix = id.slice(0, t.namespace.length + 1 + i);
      if (leaves.has(prefix)) return;
      prefixes.push(prefix);
    }
    for (const prefix of prefixes) groups.add(prefix);
    leaves.add(id);
    chosen.set(id, { namespace: t.namespace, key: t.key, value: t.value, status: t.status, fallback });
  };
  for (const layer of layers) for (const t of layer.texts) if (t.locale === locale) take(t, false);
  for (const layer of layers) for (const t of layer.texts) if (t.locale === layer.source && t.locale !== locale) take(t, true);
  // `namespace\0key` orders by namespace, then key.
  const ids = [...chosen.keys()].sort();
  return ids.map((id) => chosen.get(id) as ComposedEntry);
}

/** The cached composition of (project, base, locale), recomputed only when something it depends on changed. */
function composition(core: Core, project: ProjectRef, base: BundleRow, locale: string): Composition {
  const cache = cacheOf(core);
  const id = `${project.id}|${base.id}|${locale}`;
  const gen = estateGeneration(core);
  let c = cache.get(id);
  if (c && c.seen === gen) return c;
  const signature = signatureOf(core, project.id, base.id);
  if (c && c.signature === signature) {
    c.seen = gen;
    return c;
  }
  c = { signature, seen: gen, entries: compose(core, project, base, locale), renders: new Map() };
  cache.delete(id);
  cache.set(id, c);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  return c;
}

export interface ExportQuery {
  locale: string;
  bundle?: string;
  format?: ExportFormat;
  namespace?: string;
}

export interface ExportResult {
  /** UTF-8 bytes of the document. */
  body: Uint8Array<ArrayBuffer>;
  etag: string;
  contentType: string;
  filename: string;
}

/**
 * `GET …/export/{locale}`: the composed locale in a format. 404 for a malformed locale tag, a
 * namespace the export does not have, or no such base bundle (default: the project's bundle named like the project; it must be an own or
 * estate-shared bundle of the project).
 */
export function exportLocale(core: Core, project: ProjectRef, q: ExportQuery): ExportResult {
  const locale = canonicalLocale(q.locale);
  if (locale === null) throw new OpsError("not_found", `"${q.locale.slice(0, 40)}" is not a locale (a BCP 47 tag like en, fr or pt-BR).`);
  const base = resolveHomeBundle(core, project, q.bundle ?? project.slug);
  if (base.kind === "package") throw new OpsError("not_found", `"${base.name}" is a package bundle; an export is built on one of the project's own bundles.`);
  const format = q.format ?? "json";
  const ns = q.namespace ?? null;
  const c = composition(core, project, base, locale);
  // Only namespaces the export has: the rendered formats cached per composition stay bounded.
  if (ns !== null && !c.entries.some((e) => e.namespace === ns)) throw new OpsError("not_found", `The export of ${base.name} has no namespace "${ns.slice(0, 64)}".`);
  const renderKey = `${format}|${ns ?? ""}`;
  let r = c.renders.get(renderKey);
  if (!r) {
    const needsSource = format === "xliff" || format === "po";
    const sourceEntries = needsSource ? (base.sourceLocale === locale ? c.entries : composition(core, project, base, base.sourceLocale).entries) : [];
    const source = new Map(sourceEntries.map((e) => [entryId(e.namespace, e.key), e.value]));
    const body = render(format, { entries: c.entries, sourceLocale: base.sourceLocale, source, locale, namespace: ns, title: `${project.slug} ${base.name}` });
    const bytes = new TextEncoder().encode(body);
    r = { body: bytes, etag: `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 32)}"` };
    c.renders.set(renderKey, r);
  }
  const ext = format === "xliff" ? "xlf" : format === "po" ? "po" : "json";
  return { body: r.body, etag: r.etag, contentType: CONTENT_TYPES[format], filename: `${base.name}${ns ? `.${ns}` : ""}.${locale}.${ext}` };
}
