/**
 * Sharing across projects: attaching a package bundle at the version a project installs (and
 * moving it with the same call), a project's view of a shared bundle, and its overrides.
 *
 * Overrides outlive the keys they override: when the version in use no longer ships a key (or an
 * estate-shared key is deleted), the override is kept and the key shows as `removed`, so the
 * project sees what it customised went away. Detaching keeps the overrides too; attaching again
 * brings them back. Only keys the version in use ships are composed.
 */
import type { Core, ProjectRef } from "../../core/core";
import type { AuditActor } from "../../core/audit";
import type { Tx } from "../../core/db/client";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { assertKey, assertNamespace, assertValueText, canonicalLocale, localeOf } from "./shapes";
import { assertMessage } from "./icu";
import { assertWritable, auditWrite, findBundleById, findKey, projectChanged, type BundleRow } from "./store";
import { shippedCondition, sharedSummary, usageOf, type Usage } from "./bundles";
import { nextVersion, valueOf } from "./entries";
import type { SetOverrideRequest, SharedBundleResponse, SharedBundleSummary, SharedKeyRow } from "./model";

function noSuchBundle(id: number): OpsError {
  return new OpsError("not_found", `No translation bundle ${id}.`);
}

/**
 * `POST …/attachments`: compose package bundle `bundleId` at `version`, or move an attachment to
 * it (audited). 404 for no such bundle or a version never registered; 422 for a bundle that is
 * not a package bundle.
 */
export function attachBundle(core: Core, project: ProjectRef, input: { bundle: number; version: string }, actor: AuditActor): SharedBundleSummary {
  assertWritable(project);
  const bundle = findBundleById(core, input.bundle);
  if (!bundle || (bundle.kind === "own" && bundle.projectId !== project.id)) throw noSuchBundle(input.bundle);
  if (bundle.kind === "estate") throw new OpsError("refused", `"${bundle.name}" is estate-shared: every project composes it already; only package bundles are attached.`);
  if (bundle.kind !== "package") throw new OpsError("refused", `"${bundle.name}" is one of this project's own bundles, not a package bundle; only package bundles are attached.`);
  const version = core.sqlite.query<{ id: number }, [number, string]>("SELECT id FROM tms_versions WHERE bundle_id = ? AND version = ?").get(bundle.id, input.version);
  if (!version) throw new OpsError("not_found", `Version ${input.version} of ${bundle.name} was never registered (its publish ships the locale files).`);
  tx(core.db, (t) => {
    const current = core.sqlite.query<{ version_id: number; version: string }, [string, number]>(
      "SELECT a.version_id, v.version FROM tms_attachments a JOIN tms_versions v ON v.id = a.version_id WHERE a.project_id = ? AND a.bundle_id = ?",
    ).get(project.id, bundle.id);
    if (current?.version_id === version.id) return;
    core.sqlite
      .query(
        `INSERT INTO tms_attachments (project_id, bundle_id, version_id, attached_at, attached_by) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(project_id, bundle_id) DO UPDATE SET version_id = ?3, attached_at = ?4, attached_by = ?5`,
      )
      .run(project.id, bundle.id, version.id, core.clock.now(), actor.actor);
    projectChanged(core, t, project.id);
    auditWrite(core, t, actor, project, `tms-bundle:${bundle.id}`, current ? "attachment.move" : "attachment.create", { version: input.version, from: current?.version ?? null });
  });
  return sharedSummary(core, project.id, usageOf(core, project.id, bundle.id) as Usage);
}

/** `DELETE …/attachments/{bundle}` (audited); the project's overrides of it are kept. 404 when not attached. */
export function detachBundle(core: Core, project: ProjectRef, bundleId: number, actor: AuditActor): void {
  assertWritable(project);
  tx(core.db, (t) => {
    const gone = core.sqlite.query("DELETE FROM tms_attachments WHERE project_id = ? AND bundle_id = ?").run(project.id, bundleId).changes;
    if (gone === 0) throw new OpsError("not_found", `Bundle ${bundleId} is not attached to project "${project.slug}".`);
    projectChanged(core, t, project.id);
    auditWrite(core, t, actor, project, `tms-bundle:${bundleId}`, "attachment.delete");
  });
}

function usageOr404(core: Core, project: ProjectRef, bundleId: number): Usage {
  const u = usageOf(core, project.id, bundleId);
  if (!u) throw new OpsError("not_found", `Project "${project.slug}" does not share bundle ${bundleId} (estate-shared bundles and attached package bundles are shared).`);
  return u;
}

/** `GET …/shared/{bundle}`: the keys the project uses (and overridden ones no longer shipped), one locale's overrides. */
export function sharedBundle(core: Core, project: ProjectRef, bundleId: number, localeParam: string | undefined): SharedBundleResponse {
  const u = usageOr404(core, project, bundleId);
  const locale = localeParam === undefined || localeParam === "" ? u.bundle.sourceLocale : localeOf(localeParam);
  const cond = shippedCondition(u);
  const keys = core.sqlite
    .query<{ id: number; namespace: string; key: string; shipped: number }, Array<string | number>>(
      `SELECT k.id, k.namespace, k.key, (${cond.sql}) AS shipped FROM tms_keys k
       WHERE k.bundle_id = ? AND ((${cond.sql}) OR k.id IN (SELECT key_id FROM tms_overrides WHERE project_id = ? AND bundle_id = ?))
       ORDER BY k.namespace, k.key`,
    )
    .all(...cond.params, u.bundle.id, ...cond.params, project.id, u.bundle.id);
  const values = new Map<number, Record<string, string>>();
  for (const v of core.sqlite
    .query<{ key_id: number; locale: string; value: string }, [number]>("SELECT v.key_id, v.locale, v.value FROM tms_values v JOIN tms_keys k ON k.id = v.key_id WHERE k.bundle_id = ? ORDER BY v.locale")
    .all(u.bundle.id)) {
    const m = values.get(v.key_id) ?? {};
    m[v.locale] = v.value;
    values.set(v.key_id, m);
  }
  const overrides = new Map(
    core.sqlite
      .query<{ key_id: number; value: string }, [string, number, string]>("SELECT key_id, value FROM tms_overrides WHERE project_id = ? AND bundle_id = ? AND locale = ?")
      .all(project.id, u.bundle.id, locale)
      .map((o) => [o.key_id, o.value]),
  );
  const rows: SharedKeyRow[] = keys.map((k) => ({
    key: k.key,
    namespace: k.namespace,
    override_value: overrides.get(k.id) ?? null,
    removed: k.shipped === 0,
    values: values.get(k.id) ?? {},
  }));
  const s = sharedSummary(core, project.id, u);
  return { id: u.bundle.id, locale, name: u.bundle.name, owner: u.bundle.owner, project: s.project, rows, version: u.version, source_locale: u.bundle.sourceLocale };
}

function shippedKey(core: Core, u: Usage, namespace: string, key: string): number | null {
  const cond = shippedCondition(u);
  return core.sqlite.query<{ id: number }, Array<string | number>>(`SELECT k.id FROM tms_keys k WHERE k.bundle_id = ? AND k.namespace = ? AND k.key = ? AND ${cond.sql}`).get(u.bundle.id, namespace, key, ...cond.params)?.id ?? null;
}

interface OverrideRow {
  value: string;
  version: number;
  updated_at: number;
  updated_by: string;
}

function archiveOverride(core: Core, _t: Tx, project: ProjectRef, bundle: BundleRow, keyId: number, locale: string, old: OverrideRow, actor: AuditActor, reason: "replaced" | "deleted"): void {
  core.sqlite
    .query(
      `INSERT INTO tms_history (bundle_id, key_id, project_id, locale, value, status, version, written_at, written_by, ended_at, ended_by, reason)
       VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)`,
    )
    .run(bundle.id, keyId, project.id, locale, old.value, old.version, old.updated_at, old.updated_by, core.clock.now(), actor.actor, reason);
}

function overrideOf(core: Core, projectId: string, keyId: number, locale: string): OverrideRow | null {
  return core.sqlite.query<OverrideRow, [string, number, string]>("SELECT value, version, updated_at, updated_by FROM tms_overrides WHERE project_id = ? AND key_id = ? AND locale = ?").get(projectId, keyId, locale);
}

/**
 * `PUT …/shared/{bundle}/overrides`: the project's own text for a key of a shared bundle, in one
 * locale (audited). It must keep the arguments of the bundle's source text, since the code that
 * formats it passes those. 404 when the project does not share the bundle or the version in use
 * does not ship the key; 422 for an empty or malformed value, namespace or key.
 */
export function setOverride(core: Core, project: ProjectRef, bundleId: number, body: SetOverrideRequest, actor: AuditActor): { version: number } {
  assertWritable(project);
  assertNamespace(body.namespace);
  assertKey(body.key);
  const locale = localeOf(body.locale);
  assertValueText(body.value);
  const u = usageOr404(core, project, bundleId);
  return tx(core.db, (t) => {
    const keyId = shippedKey(core, u, body.namespace, body.key);
    if (keyId === null) throw new OpsError("not_found", `${u.bundle.name}${u.version ? `@${u.version}` : ""} has no key "${body.namespace}:${body.key}".`);
    const src = valueOf(core, keyId, u.bundle.sourceLocale);
    assertMessage(body.value, src ? { value: src.value, locale: u.bundle.sourceLocale } : null);
    const old = overrideOf(core, project.id, keyId, locale);
    if (old && old.value === body.value) return { version: old.version };
    if (old) archiveOverride(core, t, project, u.bundle, keyId, locale, old, actor, "replaced");
    const version = nextVersion(core, keyId, locale, project.id);
    core.sqlite
      .query(
        `INSERT INTO tms_overrides (project_id, bundle_id, key_id, locale, value, version, updated_at, updated_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(project_id, key_id, locale) DO UPDATE SET value = ?5, version = ?6, updated_at = ?7, updated_by = ?8`,
      )
      .run(project.id, u.bundle.id, keyId, locale, body.value, version, core.clock.now(), actor.actor);
    projectChanged(core, t, project.id);
    auditWrite(core, t, actor, project, `tms-bundle:${u.bundle.id}/${body.namespace}:${body.key}`, "override.set", { locale, version });
    return { version };
  });
}

/** `DELETE …/shared/{bundle}/overrides` (audited): the shared value composes again. 404 for no such override. */
export function deleteOverride(core: Core, project: ProjectRef, bundleId: number, query: { locale: string; namespace: string; key: string }, actor: AuditActor): void {
  assertWritable(project);
  const locale = canonicalLocale(query.locale);
  const bundle = findBundleById(core, bundleId);
  const missing = new OpsError("not_found", `Project "${project.slug}" has no override of "${query.namespace}:${query.key}" in ${query.locale} for bundle ${bundleId}.`);
  if (!bundle || locale === null) throw missing;
  tx(core.db, (t) => {
    const key = findKey(core, bundle.id, query.namespace, query.key);
    const old = key ? overrideOf(core, project.id, key.id, locale) : null;
    if (!key || !old) throw missing;
    archiveOverride(core, t, project, bundle, key.id, locale, old, actor, "deleted");
    core.sqlite.query("DELETE FROM tms_overrides WHERE project_id = ? AND key_id = ? AND locale = ?").run(project.id, key.id, locale);
    projectChanged(core, t, project.id);
    auditWrite(core, t, actor, project, `tms-bundle:${bundle.id}/${query.namespace}:${query.key}`, "override.delete", { locale });
  });
}
