/**
 * Entries of a bundle whose home is the project: list (search, missing-only), set one value,
 * delete a key in every locale. A replaced or deleted value goes to `tms_history`; versions count
 * per key and locale and never repeat, even after a delete.
 */
import type { Core, ProjectRef } from "../../core/core";
import type { Tx } from "../../core/db/client";
import type { AuditActor } from "../../core/audit";
import { tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { tmsKeys } from "./tables";
import { assertKey, assertNamespace, assertValueText, localeOf } from "./shapes";
import { assertMessage } from "./icu";
import { assertWritable, auditWrite, bundleChanged, findKey, resolveHomeBundle, type BundleRow, type KeyRow } from "./store";
import type { EntryResponse, SetOwnEntryRequest } from "./model";

export interface ListEntriesQuery {
  bundle: string;
  namespace?: string;
  q?: string;
  missing_only?: boolean;
}

interface EntryRow {
  key_id: number;
  namespace: string;
  key: string;
  created_at: number;
  locale: string | null;
  value: string | null;
  status: string | null;
  version: number | null;
  updated_at: number | null;
}

/** The bundle's live keys with every locale's value, by namespace then key. */
export function listEntries(core: Core, project: ProjectRef, query: ListEntriesQuery): EntryResponse[] {
  const bundle = resolveHomeBundle(core, project, query.bundle);
  const rows = core.sqlite
    .query<EntryRow, [number, string | null]>(
      `SELECT k.id AS key_id, k.namespace, k.key, k.created_at, v.locale, v.value, v.status, v.version, v.updated_at
       FROM tms_keys k LEFT JOIN tms_values v ON v.key_id = k.id
       WHERE k.bundle_id = ?1 AND k.deleted_at IS NULL AND (?2 IS NULL OR k.namespace = ?2)
       ORDER BY k.namespace, k.key, v.locale`,
    )
    .all(bundle.id, query.namespace ?? null);
  const entries: Array<EntryResponse & { at: number }> = [];
  let cur: (EntryResponse & { at: number; id: number }) | null = null;
  for (const r of rows) {
    if (!cur || cur.id !== r.key_id) {
      cur = { id: r.key_id, key: r.key, namespace: r.namespace, updated_at: "", values: {}, version: 0, review: [], at: r.created_at };
      entries.push(cur);
    }
    if (r.locale !== null && r.value !== null) {
      cur.values[r.locale] = r.value;
      cur.version = Math.max(cur.version, r.version ?? 0);
      cur.at = Math.max(cur.at, r.updated_at ?? 0);
      if (r.status === "review") cur.review!.push(r.locale);
    }
  }
  const locales = new Set<string>([bundle.sourceLocale]);
  for (const e of entries) for (const l of Object.keys(e.values)) locales.add(l);
  const needle = query.q?.toLowerCase() ?? "";
  return entries
    .filter((e) => !query.missing_only || Object.keys(e.values).length < locales.size)
    .filter((e) => needle === "" || e.key.toLowerCase().includes(needle) || Object.values(e.values).some((v) => v.toLowerCase().includes(needle)))
    .map((e) => ({ key: e.key, namespace: e.namespace, updated_at: iso(e.at), values: e.values, version: e.version, review: e.review }));
}

/** The next version of (key, locale): one past the current value and every value in history. */
export function nextVersion(core: Core, keyId: number, locale: string, projectId: string | null): number {
  const current =
    projectId === null
      ? core.sqlite.query<{ v: number | null }, [number, string]>("SELECT max(version) AS v FROM tms_values WHERE key_id = ? AND locale = ?").get(keyId, locale)?.v
      : core.sqlite.query<{ v: number | null }, [string, number, string]>("SELECT max(version) AS v FROM tms_overrides WHERE project_id = ? AND key_id = ? AND locale = ?").get(projectId, keyId, locale)?.v;
  const past = core.sqlite
    .query<{ v: number | null }, [number, string, string | null]>("SELECT max(version) AS v FROM tms_history WHERE key_id = ?1 AND locale = ?2 AND project_id IS ?3")
    .get(keyId, locale, projectId)?.v;
  return Math.max(current ?? 0, past ?? 0) + 1;
}

interface ValueRow {
  value: string;
  status: string;
  version: number;
  updated_at: number;
  updated_by: string;
}

export function valueOf(core: Core, keyId: number, locale: string): ValueRow | null {
  return core.sqlite.query<ValueRow, [number, string]>("SELECT value, status, version, updated_at, updated_by FROM tms_values WHERE key_id = ? AND locale = ?").get(keyId, locale);
}

/** Move the bundle's value of (key, locale) to history (in `t`). */
function archiveValue(core: Core, _t: Tx, bundleId: number, keyId: number, locale: string, old: ValueRow, actor: AuditActor, reason: "replaced" | "deleted"): void {
  core.sqlite
    .query(
      `INSERT INTO tms_history (bundle_id, key_id, project_id, locale, value, status, version, written_at, written_by, ended_at, ended_by, reason)
       VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(bundleId, keyId, locale, old.value, old.status, old.version, old.updated_at, old.updated_by, core.clock.now(), actor.actor, reason);
}

/**
 * Write the bundle's value of (key, locale) in `t` unless it is already exactly that; the old
 * value goes to history. Returns the value's version and whether anything was written.
 */
export function writeValue(core: Core, t: Tx, bundle: BundleRow, key: KeyRow, locale: string, value: string, status: "translated" | "review", actor: AuditActor): { version: number; written: boolean } {
  const old = valueOf(core, key.id, locale);
  if (old && old.value === value && old.status === status) return { version: old.version, written: false };
  if (old) archiveValue(core, t, bundle.id, key.id, locale, old, actor, "replaced");
  const version = nextVersion(core, key.id, locale, null);
  core.sqlite
    .query(
      `INSERT INTO tms_values (key_id, locale, value, status, version, updated_at, updated_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
       ON CONFLICT(key_id, locale) DO UPDATE SET value = ?3, status = ?4, version = ?5, updated_at = ?6, updated_by = ?7`,
    )
    .run(key.id, locale, value, status, version, core.clock.now(), actor.actor);
  return { version, written: true };
}

/**
 * 422 when `key` would be both a text and a group of texts in its namespace: `a.b` beside a live
 * `a.b.c`, or `a.b.c` beside a live `a.b` (the JSON tree cannot hold both).
 */
export function assertNoTreeClash(core: Core, bundleId: number, namespace: string, key: string, field = "key"): void {
  const parts = key.split(".");
  const prefixes = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("."));
  const clash = core.sqlite
    .query<{ key: string }, Array<string | number>>(
      `SELECT key FROM tms_keys WHERE bundle_id = ? AND namespace = ? AND deleted_at IS NULL
       AND (substr(key, 1, ?) = ? ${prefixes.length > 0 ? `OR key IN (${prefixes.map(() => "?").join(", ")})` : ""}) LIMIT 1`,
    )
    .get(bundleId, namespace, key.length + 1, `${key}.`, ...prefixes);
  if (clash) {
    const reason = clash.key.startsWith(`${key}.`) ? `"${key}" groups the existing key "${clash.key}"; a key cannot be both a text and a group` : `the existing key "${clash.key}" is a text; it cannot also group "${key}"`;
    throw new OpsError("validation_failed", `${field}: ${reason}`, { fields: [{ path: field, message: reason }] });
  }
}

/**
 * A live key of the bundle for writing: created (own and estate bundles) or brought back after a
 * delete. The source locale defines the key set, so a new key starts with its source text.
 */
function keyForWrite(core: Core, t: Tx, bundle: BundleRow, namespace: string, key: string, locale: string): KeyRow {
  const existing = findKey(core, bundle.id, namespace, key);
  if (existing && existing.deletedAt === null) return existing;
  if (bundle.kind === "package" && !existing) {
    throw new OpsError("refused", `The keys of a package bundle come from its registered versions; no version of ${bundle.name} ships "${namespace}:${key}".`);
  }
  if (bundle.kind !== "package" && locale !== bundle.sourceLocale) {
    throw new OpsError("refused", `"${namespace}:${key}" is not a key of ${bundle.name}: a new key starts with its text in the source locale (${bundle.sourceLocale}).`);
  }
  if (bundle.kind !== "package") assertNoTreeClash(core, bundle.id, namespace, key);
  if (existing) {
    core.sqlite.query("UPDATE tms_keys SET deleted_at = NULL WHERE id = ?").run(existing.id);
    return { ...existing, deletedAt: null };
  }
  return t.insert(tmsKeys).values({ bundleId: bundle.id, namespace, key, createdAt: core.clock.now() }).returning().get();
}

/** The source locale's text of a key, for placeholder agreement (null when there is none). */
export function sourceOf(core: Core, bundle: BundleRow, keyId: number | null, locale: string): { value: string; locale: string } | null {
  if (keyId === null || locale === bundle.sourceLocale) return null;
  const v = valueOf(core, keyId, bundle.sourceLocale);
  return v ? { value: v.value, locale: bundle.sourceLocale } : null;
}

/**
 * `PUT …/entries`: create or edit one value in a bundle whose home is the project (audited). A
 * value equal to the stored one (same status) changes nothing and keeps its version. 404 for no
 * such bundle; 422 for an empty or malformed value, a malformed namespace or key, or placeholders
 * that differ from the source locale's text.
 */
export function setEntry(core: Core, project: ProjectRef, body: SetOwnEntryRequest, actor: AuditActor): { version: number } {
  assertWritable(project);
  assertNamespace(body.namespace);
  assertKey(body.key);
  const locale = localeOf(body.locale);
  assertValueText(body.value);
  const status = body.status ?? "translated";
  return tx(core.db, (t) => {
    const bundle = resolveHomeBundle(core, project, body.bundle);
    const found = findKey(core, bundle.id, body.namespace, body.key);
    assertMessage(body.value, sourceOf(core, bundle, found?.id ?? null, locale));
    const key = keyForWrite(core, t, bundle, body.namespace, body.key, locale);
    const res = writeValue(core, t, bundle, key, locale, body.value, status, actor);
    if (res.written) {
      bundleChanged(core, t, bundle.id);
      auditWrite(core, t, actor, project, `tms-bundle:${bundle.id}/${body.namespace}:${body.key}`, "entry.set", { locale, status, version: res.version });
    }
    return { version: res.version };
  });
}

/** `DELETE …/entries`: remove a key in every locale (audited); its values go to history. 404 for no such bundle or key. */
export function deleteEntry(core: Core, project: ProjectRef, query: { bundle: string; namespace: string; key: string }, actor: AuditActor): void {
  assertWritable(project);
  tx(core.db, (t) => {
    const bundle = resolveHomeBundle(core, project, query.bundle);
    const key = findKey(core, bundle.id, query.namespace, query.key);
    if (!key || key.deletedAt !== null) throw new OpsError("not_found", `Bundle "${bundle.name}" has no key "${query.namespace}:${query.key}".`);
    const values = core.sqlite.query<ValueRow & { locale: string }, [number]>("SELECT locale, value, status, version, updated_at, updated_by FROM tms_values WHERE key_id = ?").all(key.id);
    for (const v of values) archiveValue(core, t, bundle.id, key.id, v.locale, v, actor, "deleted");
    core.sqlite.query("DELETE FROM tms_values WHERE key_id = ?").run(key.id);
    core.sqlite.query("UPDATE tms_keys SET deleted_at = ? WHERE id = ?").run(core.clock.now(), key.id);
    bundleChanged(core, t, bundle.id);
    auditWrite(core, t, actor, project, `tms-bundle:${bundle.id}/${query.namespace}:${query.key}`, "entry.delete", { locales: values.length });
  });
}
