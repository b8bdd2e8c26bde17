/**
 * Export formats of a composed locale, the ones a team's tools load:
 *
 * - `json` (default): the locale tree `{namespace: {nested keys}}`, i18next's resources for one
 *   language (with `namespace`: that namespace's tree alone, i18next's per-namespace file).
 * - `flat`: one object of `"<namespace>.<key>": text` (FormatJS/react-intl message maps; with
 *   `namespace`: bare keys).
 * - `xliff`: XLIFF 2.0, one `<file>` per namespace (`xml:space="preserve"`: line breaks and spaces
 *   are part of a message) and one `<unit>` per key, the source locale's text as `<source>`; a key
 *   the locale has no text for has no `<target>` (state `initial`), one awaiting review is
 *   `translated`, an approved one `final`.
 * - `po`: gettext PO, `msgctxt` = `<namespace>.<key>` (unique), `msgid` = the source text,
 *   `msgstr` = the translation ("" when missing, so gettext falls back to the source), `#, fuzzy`
 *   for a text awaiting review.
 */
export type ExportFormat = "json" | "flat" | "xliff" | "po";
export const EXPORT_FORMATS: readonly ExportFormat[] = ["json", "flat", "xliff", "po"];

/** One composed text: the winner for (namespace, key) in the locale, or the source fallback. */
export interface ComposedEntry {
  namespace: string;
  key: string;
  value: string;
  /** The bundle value's status; null for an override. */
  status: "translated" | "review" | null;
  /** True when the locale had no text and this is the source locale's. */
  fallback: boolean;
}

export interface RenderInput {
  entries: readonly ComposedEntry[];
  /** The base bundle's source locale and its composed texts by `namespace\0key` (XLIFF and PO). */
  sourceLocale: string;
  source: ReadonlyMap<string, string>;
  locale: string;
  /** Only this namespace (and without it in keys), or null for all. */
  namespace: string | null;
  /** For the PO header. */
  title: string;
}

export const entryId = (namespace: string, key: string) => `${namespace}\u0000${key}`;

function nest(entries: readonly ComposedEntry[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const e of entries) {
    const parts = e.key.split(".");
    let node = root;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]] = e.value;
  }
  return root;
}

function selected(input: RenderInput): ComposedEntry[] {
  return input.namespace === null ? [...input.entries] : input.entries.filter((e) => e.namespace === input.namespace);
}

export function renderJson(input: RenderInput): string {
  const entries = selected(input);
  if (input.namespace !== null) return JSON.stringify(nest(entries));
  const byNs = new Map<string, ComposedEntry[]>();
  for (const e of entries) {
    const list = byNs.get(e.namespace);
    if (list) list.push(e);
    else byNs.set(e.namespace, [e]);
  }
  const tree: Record<string, unknown> = {};
  for (const [ns, list] of byNs) tree[ns] = nest(list);
  return JSON.stringify(tree);
}

export function renderFlat(input: RenderInput): string {
  const out: Record<string, string> = {};
  for (const e of selected(input)) out[input.namespace === null ? `${e.namespace}.${e.key}` : e.key] = e.value;
  return JSON.stringify(out);
}

const XML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const xml = (s: string) => s.replace(/[&<>"']/g, (c) => XML_ESCAPES[c] as string);

export function renderXliff(input: RenderInput): string {
  const same = input.locale === input.sourceLocale;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="${xml(input.sourceLocale)}"${same ? "" : ` trgLang="${xml(input.locale)}"`}>`,
  ];
  let ns: string | null = null;
  for (const e of selected(input)) {
    if (e.namespace !== ns) {
      if (ns !== null) lines.push("  </file>");
      ns = e.namespace;
      lines.push(`  <file id="${xml(ns)}" xml:space="preserve">`);
    }
    const source = input.source.get(entryId(e.namespace, e.key)) ?? e.value;
    const translated = !same && !e.fallback;
    const state = !translated ? "initial" : e.status === "review" ? "translated" : "final";
    lines.push(`    <unit id="${xml(e.key)}">`);
    lines.push(`      <segment state="${same ? "final" : state}">`);
    lines.push(`        <source>${xml(source)}</source>`);
    if (translated) lines.push(`        <target>${xml(e.value)}</target>`);
    lines.push("      </segment>");
    lines.push("    </unit>");
  }
  if (ns !== null) lines.push("  </file>");
  lines.push("</xliff>", "");
  return lines.join("\n");
}

/** A PO string literal: escapes, and one line per source line so long texts stay readable. */
function poString(s: string): string {
  const esc = s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\t/g, "\\t").replace(/\r/g, "\\r").replace(/\n/g, "\\n\n");
  const parts = esc.split("\n").filter((p, i, all) => p !== "" || i < all.length - 1);
  if (parts.length <= 1) return `"${parts[0] ?? ""}"`;
  return `""\n${parts.map((p) => `"${p}"`).join("\n")}`;
}

export function renderPo(input: RenderInput): string {
  const header = [
    `Project-Id-Version: ${input.title}`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=UTF-8",
    "Content-Transfer-Encoding: 8bit",
    `Language: ${input.locale.replace(/-/g, "_")}`,
    "X-Generator: ops",
  ];
  const out = ['msgid ""', 'msgstr ""', ...header.map((h) => `"${h.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}\\n"`), ""];
  for (const e of selected(input)) {
    const source = input.source.get(entryId(e.namespace, e.key)) ?? e.value;
    const translated = !e.fallback || input.locale === input.sourceLocale;
    if (translated && e.status === "review") out.push("#, fuzzy");
    out.push(`msgctxt ${poString(`${e.namespace}.${e.key}`)}`);
    out.push(`msgid ${poString(source)}`);
    out.push(`msgstr ${translated ? poString(e.value) : '""'}`);
    out.push("");
  }
  return out.join("\n");
}

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  json: "application/json; charset=utf-8",
  flat: "application/json; charset=utf-8",
  xliff: "application/xliff+xml; charset=utf-8",
  po: "text/x-gettext-translation; charset=utf-8",
};

export function render(format: ExportFormat, input: RenderInput): string {
  switch (format) {
    case "json":
      return renderJson(input);
    case "flat":
      return renderFlat(input);
    case "xliff":
      return renderXliff(input);
    case "po":
      return renderPo(input);
  }
}
