/**
 * Components and their state. `setComponentState` is the one way a state changes: it stores the
 * transition and the new state together, and does nothing when the state is unchanged, so
 * probes may report every minute without inventing incidents.
 */
import { asc, eq, max } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuditActor } from "../../core/audit";
import { auditAllowed } from "../../core/audit";
import { tx, type Tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { OpsError, invalid } from "../../core/errors";
import { statusComponents, statusTransitions, type StatusComponentRow, type StatusTransitionRow } from "./tables";
import type { ComponentState, StatusComponentResponse, StatusTransitionResponse, WriteStatusComponentBody } from "./model";

/** The platform's own components, in the order the status page lists them. */
export const PLATFORM_COMPONENTS = [
  { slug: "api", name: "API" },
  { slug: "database", name: "Database" },
  { slug: "scheduler", name: "Scheduler" },
  { slug: "registry", name: "Package registry" },
  { slug: "builds", name: "Builds" },
  { slug: "ingest", name: "Telemetry ingest" },
] as const;

export const COMPONENT_SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;
const RANK: Record<ComponentState, number> = { operational: 0, degraded: 1, down: 2 };

const VERSION_KEY = "status.version";

/** A counter every state or component change bumps, so readers know a cached document is stale. */
export function statusVersion(core: Core): number {
  return (core.locals.get(VERSION_KEY) as number | undefined) ?? 0;
}

function bump(core: Core): void {
  core.locals.set(VERSION_KEY, statusVersion(core) + 1);
}

export function worst(states: Iterable<ComponentState>): ComponentState {
  let w: ComponentState = "operational";
  for (const s of states) if (RANK[s] > RANK[w]) w = s;
  return w;
}

export function stateRank(s: ComponentState): number {
  return RANK[s];
}

/** Create the platform components that are missing (operational from now). Idempotent. */
export function ensurePlatformComponents(core: Core): void {
  const now = core.clock.now();
  tx(core.db, (t) => {
    PLATFORM_COMPONENTS.forEach((c, i) => {
      t.insert(statusComponents).values({ slug: c.slug, name: c.name, state: "operational", since: now, platform: true, position: i, createdAt: now }).onConflictDoNothing().run();
    });
  });
}

export function toComponentResponse(r: StatusComponentRow): StatusComponentResponse {
  return { slug: r.slug, name: r.name, state: r.state, since: iso(r.since), platform: r.platform };
}

export function toTransitionResponse(r: StatusTransitionRow): StatusTransitionResponse {
  return { id: r.id, component: r.component, from: r.fromState as ComponentState, to: r.toState as ComponentState, at: iso(r.at), reason: r.reason, source: r.source };
}

export function listComponents(q: Core["db"] | Tx): StatusComponentRow[] {
  return q.select().from(statusComponents).orderBy(asc(statusComponents.position), asc(statusComponents.slug)).all();
}

function changeIn(core: Core, t: Tx, row: StatusComponentRow, state: ComponentState, reason: string, source: string): StatusTransitionRow {
  const now = core.clock.now();
  const tr = t
    .insert(statusTransitions)
    .values({ component: row.slug, fromState: row.state, toState: state, at: now, reason: reason.slice(0, 500), source })
    .returning()
    .get();
  t.update(statusComponents).set({ state, since: now }).where(eq(statusComponents.slug, row.slug)).run();
  bump(core);
  return tr;
}

/**
 * Report a component's state (probes and other domains call this). Stores a transition only when
 * the state changes; returns it, or null when nothing changed or the component does not exist.
 */
export function setComponentState(core: Core, slug: string, state: ComponentState, reason = "", source = "probe"): StatusTransitionRow | null {
  return tx(core.db, (t) => {
    const row = t.select().from(statusComponents).where(eq(statusComponents.slug, slug)).get();
    if (!row || row.state === state) return null;
    return changeIn(core, t, row, state, reason, source);
  });
}

/** Add a component (estate.manage). 409 when the slug is taken. */
export function addComponent(core: Core, body: WriteStatusComponentBody, actor: AuditActor): StatusComponentRow {
  if (!COMPONENT_SLUG.test(body.slug)) throw invalid("slug", "must be lower-case letters, digits and dashes (up to 63)");
  const name = body.name.trim();
  if (name === "") throw invalid("name", "must not be blank");
  const now = core.clock.now();
  return tx(core.db, (t) => {
    if (t.select({ slug: statusComponents.slug }).from(statusComponents).where(eq(statusComponents.slug, body.slug)).get()) {
      throw new OpsError("already_exists", `A status component "${body.slug}" already exists.`);
    }
    const position = (t.select({ m: max(statusComponents.position) }).from(statusComponents).get()?.m ?? 0) + 1;
    const row = t
      .insert(statusComponents)
      .values({ slug: body.slug, name, state: body.state ?? "operational", since: now, platform: false, position, createdAt: now })
      .returning()
      .get();
    auditAllowed(core, t, actor, "estate.manage", `status-component:${body.slug}`, {}, { op: "status.component.add" });
    bump(core);
    return row;
  });
}

/** Remove a component and its history (estate.manage). 404 unknown; 409 for a platform component. */
export function removeComponent(core: Core, slug: string, actor: AuditActor): void {
  tx(core.db, (t) => {
    const row = t.select().from(statusComponents).where(eq(statusComponents.slug, slug)).get();
    if (!row) throw new OpsError("not_found", "No such status component.");
    if (row.platform) throw new OpsError("conflict", `"${slug}" is one of the platform's own components; it cannot be removed.`);
    t.delete(statusComponents).where(eq(statusComponents.slug, slug)).run();
    auditAllowed(core, t, actor, "estate.manage", `status-component:${slug}`, {}, { op: "status.component.remove" });
    bump(core);
  });
}

/** Record a state change by hand (estate.manage). 404 unknown; 409 when already in that state. */
export function recordTransition(core: Core, slug: string, state: ComponentState, reason: string, actor: AuditActor): StatusTransitionRow {
  return tx(core.db, (t) => {
    const row = t.select().from(statusComponents).where(eq(statusComponents.slug, slug)).get();
    if (!row) throw new OpsError("not_found", "No such status component.");
    if (row.state === state) throw new OpsError("conflict", `"${slug}" is already ${state}.`, { state });
    const tr = changeIn(core, t, row, state, reason, "manual");
    auditAllowed(core, t, actor, "estate.manage", `status-component:${slug}`, {}, { op: "status.transition", to: state });
    return tr;
  });
}
