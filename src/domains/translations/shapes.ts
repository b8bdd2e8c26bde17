/**
 * The documented shapes of what a translation is addressed by (docs/decisions/0413-translations.md):
 *
 * - namespace: a letter or digit, then letters, digits, `_` and `-`, at most 64 characters
 *   (i18next's namespaces; it names an XLIFF `<file>` and leads a PO `msgctxt`).
 * - key: one to 16 segments joined by `.`, each letters, digits, `_` and `-`, at most 200
 *   characters in all (i18next's nested keys; every key is an XLIFF NMTOKEN).
 * - locale: a BCP 47 tag as `Intl` accepts it, stored in its canonical form (`pt-br` → `pt-BR`).
 * - value: a non-empty ICU message of at most 20 000 characters without control characters other
 *   than tab and line breaks (so every export format can carry it).
 * - own and estate bundle names: project-slug shaped.
 */
import { OpsError, invalid } from "../../core/errors";

export const NAMESPACE_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$";
export const KEY_SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;
export const BUNDLE_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const MAX_KEY_LENGTH = 200;
export const MAX_KEY_DEPTH = 16;
export const MAX_VALUE_LENGTH = 20_000;
/** The default namespace of a tree's top-level texts (i18next's own default). */
export const DEFAULT_NAMESPACE = "translation";
const NAMESPACE = new RegExp(NAMESPACE_PATTERN);
// C0 controls except tab, line feed and carriage return; DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

export function isNamespace(ns: string): boolean {
  return NAMESPACE.test(ns);
}

export function isKey(key: string): boolean {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) return false;
  const parts = key.split(".");
  return parts.length <= MAX_KEY_DEPTH && parts.every((p) => KEY_SEGMENT.test(p));
}

/** 422 unless `ns` is a namespace. */
export function assertNamespace(ns: string, field = "namespace"): void {
  if (!isNamespace(ns)) throw invalid(field, "must be a letter or digit, then letters, digits, '_' and '-' (up to 64 characters)");
}

/** 422 unless `key` is a key. */
export function assertKey(key: string, field = "key"): void {
  if (!isKey(key)) throw invalid(field, `must be segments of letters, digits, '_' and '-' joined by '.' (up to ${MAX_KEY_DEPTH} segments, ${MAX_KEY_LENGTH} characters)`);
}

/** The canonical form of a BCP 47 tag, or null when `Intl` does not accept it. */
export function canonicalLocale(tag: string): string | null {
  if (tag.length === 0 || tag.length > 35 || !/^[A-Za-z0-9-]+$/.test(tag)) return null;
  try {
    const [c] = Intl.getCanonicalLocales(tag);
    return c ?? null;
  } catch {
    return null;
  }
}

/** The canonical locale, or 422 naming the field. */
export function localeOf(tag: string, field = "locale"): string {
  const c = canonicalLocale(tag);
  if (c === null) throw invalid(field, `"${tag.slice(0, 40)}" is not a BCP 47 language tag (like en, fr or pt-BR)`);
  return c;
}

/** 422 for an empty value, one past the length limit, or one with control characters. */
export function assertValueText(value: string, field = "value"): void {
  if (value.trim() === "") throw new OpsError("validation_failed", `${field}: must not be empty`, { fields: [{ path: field, message: "must not be empty" }] });
  if (value.length > MAX_VALUE_LENGTH) throw invalid(field, `is longer than ${MAX_VALUE_LENGTH} characters`);
  if (CONTROL.test(value)) throw invalid(field, "contains control characters (only tab and line breaks are allowed)");
}

/** 422 unless `name` is slug-shaped (own and estate bundles). */
export function assertBundleName(name: string): void {
  if (!BUNDLE_NAME_PATTERN.test(name)) throw invalid("name", "must be lower-case letters, digits and dashes, starting with a letter or digit (up to 63)");
}
