/**
 * Registering a package bundle's version: the publish that ships a package's locale files calls
 * this once per locale (over HTTP, or in-process through service.ts). The source locale's tree
 * defines the keys the version ships; every locale's tree fills values that are not there yet —
 * a translation already stored (perhaps improved in ops since the file was written) is never
 * rewritten by an older file.
 *
 * A tree is a locale file as shipped: namespaces at the top, nested keys below; a text at the
 * top level belongs to the namespace `translation` (i18next's default). Leaves that are not
 * non-empty strings are counted as skipped.
 */
import { and, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuditActor } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError, invalid } from "../../core/errors";
import { packageDetail, type ClaimRegistry } from "../registries/service";
import { DEFAULT_NAMESPACE, MAX_KEY_DEPTH, assertValueText, isKey, isNamespace, localeOf } from "./shapes";
import { checkMessage, placeholderMismatch } from "./icu";
import { assertWritable, auditWrite, bundleChanged, findKey, resolveHomeBundle, type KeyRow } from "./store";
import { valueOf, writeValue } from "./entries";
import { tmsKeys, tmsVersions } from "./tables";
import type { RegisterVersionResponse } from "./model";

export interface RegisterVersionInput {
  locale: string;
  tree: unknown;
  version: string;
}

/** Most leaves one locale file may carry. */
export const MAX_TREE_LEAVES = 100_000;

interface Leaf {
  namespace: string;
  key: string;
  value: string;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The tree's texts as (namespace, key, value), the number of skipped leaves, and the malformed paths. */
export function flattenTree(tree: unknown): { leaves: Leaf[]; skipped: number; malformed: string[] } {
  if (!isPlainObject(tree)) throw invalid("tree", "must be an object: namespaces at the top, nested keys below");
  const leaves: Leaf[] = [];
  const malformed: string[] = [];
  let skipped = 0;
  const walk = (namespace: string, node: Record<string, unknown>, prefix: string[]) => {
    for (const [name, v] of Object.entries(node)) {
      const path = [...prefix, name];
      if (typeof v === "string") {
        if (v.trim() === "") skipped++;
        else leaves.push({ namespace, key: path.join("."), value: v });
      } else if (isPlainObject(v) && path.length < MAX_KEY_DEPTH) {
        walk(namespace, v, path);
      } else if (isPlainObject(v)) {
        malformed.push(`${namespace}:${path.join(".")}… (deeper than ${MAX_KEY_DEPTH} levels)`);
      } else {
        skipped++;
      }
      if (leaves.length > MAX_TREE_LEAVES) throw invalid("tree", `has more than ${MAX_TREE_LEAVES} texts`);
    }
  };
  for (const [top, v] of Object.entries(tree)) {
    if (typeof v === "string") {
      if (v.trim() === "") skipped++;
      else leaves.push({ namespace: DEFAULT_NAMESPACE, key: top, value: v });
    } else if (isPlainObject(v)) {
      if (isNamespace(top)) walk(top, v, []);
      else malformed.push(`${top} (not a namespace)`);
    } else {
      skipped++;
    }
  }
  for (const l of leaves) if (!isKey(l.key)) malformed.push(`${l.namespace}:${l.key}`);
  return { leaves: leaves.filter((l) => isKey(l.key)), skipped, malformed };
}

function refuseTree(problems: string[], what: string): OpsError {
  const shown = problems.slice(0, 20);
  const more = problems.length > shown.length ? ` (and ${problems.length - shown.length} more)` : "";
  return new OpsError("validation_failed", `tree: ${what}: ${shown.join("; ")}${more}`, { fields: shown.map((p) => ({ path: "tree", message: p })) });
}

/**
 * Register `version` of a package bundle whose home is `project`, for one locale (audited).
 * 404 when there is no such bundle here or the package never published that version; 422 when
 * the bundle is not a package bundle, or the tree is malformed or holds a value that would be
 * written and is not a valid message (or disagrees with the source text's placeholders).
 */
export function registerVersion(core: Core, project: ProjectRef, bundleRef: string, input: RegisterVersionInput, actor: AuditActor): RegisterVersionResponse {
  assertWritable(project);
  const locale = localeOf(input.locale);
  const bundle = resolveHomeBundle(core, project, bundleRef);
  if (bundle.kind !== "package" || !bundle.packageRegistry || !bundle.packageName) {
    throw new OpsError("refused", `"${bundle.name}" is not a package bundle; versions are registered for bundles that follow a package.`);
  }
  if (input.version.trim() === "" || input.version.length > 256) throw invalid("version", "must be a published version of the package");
  const published = packageDetail(core, project, bundle.packageRegistry as ClaimRegistry, bundle.packageName).versions.some((v) => v.version === input.version);
  if (!published) throw new OpsError("not_found", `${bundle.packageRegistry}:${bundle.packageName} never published version ${input.version}; publish it first.`);
  const { leaves, skipped, malformed } = flattenTree(input.tree);
  if (malformed.length > 0) throw refuseTree(malformed, "malformed namespaces or keys");
  const isSource = locale === bundle.sourceLocale;

  return tx(core.db, (t) => {
    // Values that would be written must be valid messages agreeing with the source text.
    const problems: string[] = [];
    const toWrite: Leaf[] = [];
    for (const l of leaves) {
      const k = findKey(core, bundle.id, l.namespace, l.key);
      if (k && valueOf(core, k.id, locale)) continue;
      try {
        assertValueText(l.value, `${l.namespace}:${l.key}`);
      } catch (e) {
        problems.push((e as Error).message);
        continue;
      }
      const mine = checkMessage(l.value);
      if (!mine.ok) {
        problems.push(`${l.namespace}:${l.key} ${mine.reason}`);
        continue;
      }
      const src = !isSource && k ? valueOf(core, k.id, bundle.sourceLocale) : null;
      const theirs = src ? checkMessage(src.value) : null;
      const mismatch = theirs?.ok ? placeholderMismatch(mine.args, theirs.args, bundle.sourceLocale) : null;
      if (mismatch) problems.push(`${l.namespace}:${l.key}: ${mismatch}`);
      else toWrite.push(l);
    }
    if (problems.length > 0) throw refuseTree(problems, "values that are not valid messages");

    const now = core.clock.now();
    let versionRow = t.select().from(tmsVersions).where(and(eq(tmsVersions.bundleId, bundle.id), eq(tmsVersions.version, input.version))).get();
    const newVersion = !versionRow;
    if (!versionRow) versionRow = t.insert(tmsVersions).values({ bundleId: bundle.id, version: input.version, registeredAt: now, registeredBy: actor.actor }).returning().get();
    const writing = new Set(toWrite);
    let written = 0;
    let shippedNew = 0;
    for (const l of leaves) {
      let key: KeyRow | null = findKey(core, bundle.id, l.namespace, l.key);
      if (!key) key = t.insert(tmsKeys).values({ bundleId: bundle.id, namespace: l.namespace, key: l.key, createdAt: now }).returning().get();
      else if (key.deletedAt !== null && isSource) core.sqlite.query("UPDATE tms_keys SET deleted_at = NULL WHERE id = ?").run(key.id);
      if (isSource) shippedNew += core.sqlite.query("INSERT OR IGNORE INTO tms_version_keys (version_id, key_id) VALUES (?, ?)").run(versionRow.id, key.id).changes;
      if (writing.has(l) && writeValue(core, t, bundle, key, locale, l.value, "translated", actor).written) written++;
    }
    if (newVersion || written > 0 || shippedNew > 0) {
      bundleChanged(core, t, bundle.id);
      auditWrite(core, t, actor, project, `tms-bundle:${bundle.id}@${input.version}`, "version.register", { version: input.version, locale, keys: leaves.length, written, skipped });
    }
    return { keys: leaves.length, skipped, written };
  });
}
