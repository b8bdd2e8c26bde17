/**
 * The generic resource life cycle: create, get, list, put (create or replace), delete, observe.
 * Every write bumps `version` and commits with its audit row; type rules come from kinds.ts.
 *
 * Optimistic concurrency on PUT: a `version` in the body must equal the current version (409
 * otherwise, with the current one in `details`); `0` means "only if it does not exist yet";
 * absent or null writes unconditionally.
 */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { assertNotArchived } from "../access/service";
import { resources } from "./tables";
import { assertType, checkSpec, type ResourceType } from "./specs";
import { hooksOf, type Prepared, type WriteContext } from "./kinds";
import { auditTarget, findResource, getResourceRow, listOfType, placeFor, resourceById, scopeOf, toResponse, writeStatus, UNOBSERVED_SUMMARY, type ResourceRow } from "./rows";
import type { ResourceResponse } from "./model";

export interface ResourceAddress {
  project: ProjectRef;
  type: string;
  name: string;
  /** The `environment` parameter as given (default production; ignored by project-level types). */
  environment?: string | null;
}

function principalActor(auth: AuthContext) {
  return actorOf(auth.principal, auth.meta);
}

/** One resource. 422 unknown type; 404 unknown resource or environment. */
export function getResource(core: Core, addr: ResourceAddress): ResourceResponse {
  const type = assertType(addr.type);
  const place = placeFor(addr.project, type, addr.environment);
  return toResponse(getResourceRow(core.db, place, type, addr.name), addr.project.slug);
}

/** Every resource of one type (one environment, or project-level), by name. */
export function listResourcesOfType(core: Core, project: ProjectRef, typeText: string, environment?: string | null): ResourceResponse[] {
  const type = assertType(typeText);
  const place = placeFor(project, type, environment);
  return listOfType(core.db, place, type).map((r) => toResponse(r, project.slug));
}

/** Every resource of one environment plus the project-level ones, by type then name. */
export function listResources(core: Core, project: ProjectRef, environment: string): ResourceResponse[] {
  placeFor(project, "service", environment);
  const rows = core.db
    .select()
    .from(resources)
    .where(and(eq(resources.projectId, project.id), inArray(resources.scope, [environment, ""])))
    .orderBy(asc(resources.type), asc(resources.name))
    .all();
  return rows.map((r) => toResponse(r, project.slug));
}

async function prepareAll(core: Core, ctx: WriteContext): Promise<Prepared[]> {
  const done: Prepared[] = [];
  try {
    for (const h of hooksOf(core, ctx.type)) {
      const p = await h.prepare?.(core, ctx);
      if (p) done.push(p);
    }
  } catch (e) {
    await undoAll(core, done);
    throw e;
  }
  return done;
}

async function undoAll(core: Core, prepared: Prepared[]): Promise<void> {
  for (const p of prepared.reverse()) {
    try {
      await p.undo();
    } catch (e) {
      core.log.error("undoing a resource's outside work failed", { err: (e as Error).message });
    }
  }
}

function validateAll(core: Core, q: Parameters<NonNullable<import("./kinds").KindHooks["validate"]>>[1], ctx: WriteContext): void {
  for (const h of hooksOf(core, ctx.type)) h.validate?.(core, q, ctx);
}

/**
 * Write a resource (create when `prev` is null, else replace), with the type's outside work
 * first and its audit row in the same transaction.
 */
async function writeResource(core: Core, ctx: WriteContext, expectedVersion: number | null): Promise<ResourceRow> {
  validateAll(core, core.db, ctx);
  const prepared = await prepareAll(core, ctx);
  try {
    return tx(core.db, (t) => {
      const place = { project: ctx.project, environment: ctx.environment };
      const current = findResource(t, place, ctx.type, ctx.name);
      if (current && !ctx.prev) throw new OpsError("already_exists", `A ${ctx.type} named "${ctx.name}" already exists.`);
      if ((current?.id ?? null) !== (ctx.prev?.id ?? null) || (current && ctx.prev && current.version !== ctx.prev.version)) {
        throw new OpsError("conflict", `The ${ctx.type} "${ctx.name}" changed while this write was prepared; read it again.`, { current_version: current?.version ?? 0 });
      }
      if (expectedVersion !== null && (current?.version ?? 0) !== expectedVersion) {
        throw new OpsError("conflict", `Version ${expectedVersion} is not the current version of ${ctx.type} "${ctx.name}".`, { current_version: current?.version ?? 0 });
      }
      validateAll(core, t, ctx);
      const now = core.clock.now();
      let row: ResourceRow;
      if (current === null) {
        row = t
          .insert(resources)
          .values({
            id: uuidv7(now),
            projectId: ctx.project.id,
            environment: ctx.environment,
            scope: scopeOf(ctx.environment),
            type: ctx.type,
            name: ctx.name,
            spec: JSON.stringify(ctx.spec),
            version: 1,
            statusState: "pending",
            statusSummary: UNOBSERVED_SUMMARY,
            statusDetail: "{}",
            statusAt: now,
            observedAt: null,
            createdAt: now,
            updatedAt: now,
            updatedBy: ctx.actor.actor,
          })
          .returning()
          .get();
      } else {
        row = t
          .update(resources)
          .set({ spec: JSON.stringify(ctx.spec), version: current.version + 1, updatedAt: now, updatedBy: ctx.actor.actor })
          .where(eq(resources.id, current.id))
          .returning()
          .get();
      }
      for (const h of hooksOf(core, ctx.type)) h.afterWrite?.(core, t, row, ctx);
      for (const p of prepared) p.apply(t, row);
      auditAllowed(core, t, ctx.actor, "resources.write", auditTarget(ctx.type, ctx.name), { project: ctx.project.slug, environment: ctx.environment }, { op: current ? "replace" : "create", version: row.version });
      return resourceById(t, row.id) as ResourceRow;
    });
  } catch (e) {
    await undoAll(core, prepared);
    throw e;
  }
}

function asSpecObject(spec: unknown): Record<string, unknown> {
  return spec as Record<string, unknown>;
}

/** POST: create. 409 when the name exists or the project is archived; 422 type, name or spec. */
export async function createResource(core: Core, addr: ResourceAddress, spec: unknown, auth: AuthContext): Promise<ResourceResponse> {
  assertNotArchived(addr.project);
  const type = assertType(addr.type);
  const place = placeFor(addr.project, type, addr.environment);
  checkSpec(type, spec);
  if (findResource(core.db, place, type, addr.name)) {
    throw new OpsError("already_exists", `A ${type} named "${addr.name}" already exists${place.environment ? ` in ${place.environment}` : ""}.`);
  }
  const ctx: WriteContext = { ...place, type, name: addr.name, spec: asSpecObject(spec), prev: null, actor: principalActor(auth) };
  return toResponse(await writeResource(core, ctx, null), addr.project.slug);
}

/** PUT: create (201) or replace (200); `version` bumps on every write. */
export async function putResource(
  core: Core,
  addr: ResourceAddress,
  body: { spec: unknown; version?: number | null },
  auth: AuthContext,
): Promise<{ created: boolean; resource: ResourceResponse }> {
  return putResourceAs(core, addr, body, principalActor(auth));
}

/**
 * PUT on behalf of `actor`: work queued by a person (a repository scan reconciling its ops.toml)
 * is written and audited as that person.
 */
export async function putResourceAs(
  core: Core,
  addr: ResourceAddress,
  body: { spec: unknown; version?: number | null },
  actor: AuditActor,
): Promise<{ created: boolean; resource: ResourceResponse }> {
  assertNotArchived(addr.project);
  const type = assertType(addr.type);
  const place = placeFor(addr.project, type, addr.environment);
  const prev = findResource(core.db, place, type, addr.name);
  const expected = body.version ?? null;
  if (expected !== null && (prev?.version ?? 0) !== expected) {
    throw new OpsError("conflict", prev ? `Version ${expected} is not the current version (${prev.version}) of ${type} "${addr.name}".` : `The ${type} "${addr.name}" does not exist, so version ${expected} cannot be current.`, { current_version: prev?.version ?? 0 });
  }
  checkSpec(type, body.spec);
  const ctx: WriteContext = { ...place, type, name: addr.name, spec: asSpecObject(body.spec), prev, actor };
  const row = await writeResource(core, ctx, expected);
  return { created: prev === null, resource: toResponse(row, addr.project.slug) };
}

/** DELETE: 404 unknown; 409 archived or refused by the type (confirm, something still running). */
export async function deleteResource(core: Core, addr: ResourceAddress, confirm: string | undefined, auth: AuthContext): Promise<void> {
  const type = assertType(addr.type);
  const place = placeFor(addr.project, type, addr.environment);
  assertNotArchived(addr.project);
  const row = getResourceRow(core.db, place, type, addr.name);
  const hooks = hooksOf(core, type);
  for (const h of hooks) {
    const why = h.refuseDelete?.(core, core.db, row, confirm);
    if (why) throw new OpsError("conflict", why);
  }
  for (const h of hooks) await h.beforeDelete?.(core, row);
  const actor = principalActor(auth);
  tx(core.db, (t) => {
    const current = resourceById(t, row.id);
    if (!current) throw new OpsError("not_found", `No ${type} "${addr.name}".`);
    for (const h of hooks) {
      const why = h.refuseDelete?.(core, t, current, confirm);
      if (why) throw new OpsError("conflict", why);
    }
    for (const h of hooks) h.onDelete?.(core, t, current);
    t.delete(resources).where(eq(resources.id, row.id)).run();
    auditAllowed(core, t, actor, "resources.destroy", auditTarget(type, addr.name), { project: addr.project.slug, environment: place.environment }, { op: "delete", version: current.version });
  });
}

/** Refresh the stored status from the real thing. 409 archived; 503 when it cannot be observed now. */
export async function observeResource(core: Core, addr: ResourceAddress): Promise<ResourceResponse> {
  const type = assertType(addr.type);
  const place = placeFor(addr.project, type, addr.environment);
  assertNotArchived(addr.project);
  const row = getResourceRow(core.db, place, type, addr.name);
  return toResponse(await observeRow(core, row), addr.project.slug);
}

/** Observe one row and store the result (used by observe, bucket check and the scheduler). */
export async function observeRow(core: Core, row: ResourceRow): Promise<ResourceRow> {
  const hook = hooksOf(core, row.type as ResourceType).find((h) => h.observe);
  const observed = hook?.observe ? await hook.observe(core, row) : { state: "ready" as const, summary: "recorded", detail: {} };
  writeStatus(core, core.db, row.id, observed);
  return resourceById(core.db, row.id) ?? row;
}

export type { ResourceType };

/**
 * Replace a resource's spec from inside another domain's transaction (a secret group gaining or
 * losing a declared variable). Bumps the version like every write; the caller audits.
 */
export function rewriteSpecIn(core: Core, t: Parameters<Parameters<typeof tx>[1]>[0], row: ResourceRow, spec: unknown, actorName: string): ResourceRow {
  checkSpec(row.type as ResourceType, spec);
  return t
    .update(resources)
    .set({ spec: JSON.stringify(spec), version: row.version + 1, updatedAt: core.clock.now(), updatedBy: actorName })
    .where(eq(resources.id, row.id))
    .returning()
    .get();
}
