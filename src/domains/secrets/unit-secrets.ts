/**
 * Secrets per deploy unit: values keyed by (project, unit, name), where a unit is a service (of
 * any environment) or a bucket of the project. Metadata is listed; values leave only through the
 * dotenv export (`secrets.reveal`, audited). Setting an existing name rotates it (version + 1).
 */
import { and, asc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed } from "../../core/audit";
import { tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { assertNotArchived } from "../access/service";
import { listOfTypeInProject } from "../resources/service";
import { unitSecrets } from "./tables";
import { assertEnvVarName } from "./groups";
import { renderDotenv } from "./dotenv";
import type { SecretMetaResponse } from "./model";

const UNIT_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

function target(unit: string, name?: string): string {
  return name ? `secrets:${unit}/${name}` : `secrets:${unit}`;
}

/**
 * The environments a unit's secrets reach: every environment with a service of that name (a
 * bucket is project-level: none). The routes need their permission in each of them, so an
 * environment policy that takes `secrets.write` away in production also guards the secrets of a
 * service that runs there.
 */
export function unitEnvironments(q: Queryable, project: ProjectRef, unit: string): string[] {
  const envs = new Set(listOfTypeInProject(q, project.id, "service").filter((r) => r.name === unit && r.environment !== null).map((r) => r.environment as string));
  return project.environments.filter((e) => envs.has(e));
}

/** 404 unless `unit` is a service or bucket of this project. */
function assertUnit(q: Queryable, project: ProjectRef, unit: string): void {
  const known = [...listOfTypeInProject(q, project.id, "service"), ...listOfTypeInProject(q, project.id, "bucket")].some((r) => r.name === unit);
  if (!known) throw new OpsError("not_found", `No service or bucket "${unit}" in project ${project.slug}.`);
}

/** GET /projects/{slug}/secrets: names and versions, never values; by unit then name. */
export function listSecrets(core: Core, project: ProjectRef): SecretMetaResponse[] {
  // Metadata only: answered while the store is sealed (decision 0545).
  return core.db
    .select()
    .from(unitSecrets)
    .where(eq(unitSecrets.projectId, project.id))
    .orderBy(asc(unitSecrets.unit), asc(unitSecrets.name))
    .all()
    .map((r) => ({ name: r.name, service: r.unit, updated_at: iso(r.updatedAt), version: r.version }));
}

/** GET /projects/{slug}/secrets/{unit}/env: the unit's secrets as a dotenv document (audited). */
export function exportEnv(core: Core, project: ProjectRef, unit: string, auth: AuthContext): string {
  core.secrets.assertUnsealed();
  const rows = core.db
    .select()
    .from(unitSecrets)
    .where(and(eq(unitSecrets.projectId, project.id), eq(unitSecrets.unit, unit)))
    .orderBy(asc(unitSecrets.name))
    .all();
  if (rows.length === 0) throw new OpsError("not_found", `"${unit}" has no secrets in project ${project.slug}.`);
  const text = renderDotenv(rows.map((r) => [r.name, core.secrets.get(core.db, r.valueId)]));
  tx(core.db, (t) => {
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "secrets.reveal", target(unit), { project: project.slug }, { op: "dotenv.export", names: rows.map((r) => r.name).join(",") });
  });
  return text;
}

/** PUT /projects/{slug}/secrets/{unit}/{name}: create, or rotate (version + 1). */
export function setSecret(core: Core, project: ProjectRef, unit: string, name: string, value: string, auth: AuthContext): void {
  core.secrets.assertUnsealed();
  if (!UNIT_RE.test(unit)) throw new OpsError("validation_failed", `"${unit}" is not a service name.`, { fields: [{ path: "service", message: "not a service name" }] });
  assertEnvVarName(name, "name");
  assertNotArchived(project);
  assertUnit(core.db, project, unit);
  const actor = actorOf(auth.principal, auth.meta);
  tx(core.db, (t) => {
    const now = core.clock.now();
    const existing = t.select().from(unitSecrets).where(and(eq(unitSecrets.projectId, project.id), eq(unitSecrets.unit, unit), eq(unitSecrets.name, name))).get();
    let version = 1;
    if (existing) {
      core.secrets.replace(t, existing.valueId, value);
      version = existing.version + 1;
      t.update(unitSecrets).set({ version, updatedAt: now, updatedBy: actor.actor }).where(and(eq(unitSecrets.projectId, project.id), eq(unitSecrets.unit, unit), eq(unitSecrets.name, name))).run();
    } else {
      const valueId = core.secrets.put(t, `unit-secret:${project.id}:${unit}:${name}`, value);
      t.insert(unitSecrets).values({ projectId: project.id, unit, name, valueId, version, createdAt: now, updatedAt: now, updatedBy: actor.actor }).run();
    }
    auditAllowed(core, t, actor, "secrets.write", target(unit, name), { project: project.slug }, { op: existing ? "rotate" : "create", version });
  });
}

/** DELETE /projects/{slug}/secrets/{unit}/{name}. 404 no such secret; needs no key, so works while sealed (decision 0545). */
export function deleteSecret(core: Core, project: ProjectRef, unit: string, name: string, auth: AuthContext): void {
  assertNotArchived(project);
  const actor = actorOf(auth.principal, auth.meta);
  tx(core.db, (t) => {
    const existing = t.select().from(unitSecrets).where(and(eq(unitSecrets.projectId, project.id), eq(unitSecrets.unit, unit), eq(unitSecrets.name, name))).get();
    if (!existing) throw new OpsError("not_found", `No secret ${name} for "${unit}".`);
    core.secrets.delete(t, existing.valueId);
    t.delete(unitSecrets).where(and(eq(unitSecrets.projectId, project.id), eq(unitSecrets.unit, unit), eq(unitSecrets.name, name))).run();
    auditAllowed(core, t, actor, "secrets.write", target(unit, name), { project: project.slug }, { op: "delete" });
  });
}

/** One unit secret's value, or null. */
export function unitSecret(core: Core, q: Queryable, projectId: string, unit: string, name: string): string | null {
  const row = q.select().from(unitSecrets).where(and(eq(unitSecrets.projectId, projectId), eq(unitSecrets.unit, unit), eq(unitSecrets.name, name))).get();
  return row ? core.secrets.get(q, row.valueId) : null;
}

/** Every unit secret row of a project (for rewriting connection strings). */
export function unitSecretsOf(q: Queryable, projectId: string) {
  return q.select().from(unitSecrets).where(eq(unitSecrets.projectId, projectId)).all();
}
