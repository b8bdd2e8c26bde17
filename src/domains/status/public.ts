/**
 * The public status document: each component's state and since, the worst state overall, and
 * incidents folded from the last 30 days of transitions. An incident is a run of a component's
 * transitions from leaving `operational` to returning to it; its state is the worst reached.
 * Shallow on purpose: states and timestamps, never reasons.
 */
import { and, desc, eq, gte, lt } from "drizzle-orm";
import type { Core } from "../../core/core";
import { iso } from "../../core/clock";
import { statusTransitions, type StatusComponentRow, type StatusTransitionRow } from "./tables";
import { listComponents, stateRank, statusVersion, worst } from "./components";
import type { ComponentState, PublicIncident, PublicStatusResponse } from "./model";

export const INCIDENT_WINDOW_MS = 30 * 86_400_000;

interface Open {
  startedAt: number;
  state: ComponentState;
}

/** Fold one component's transitions (oldest first) into incidents. */
export function foldIncidents(component: Pick<StatusComponentRow, "slug" | "name">, initial: Open | null, transitions: StatusTransitionRow[]): PublicIncident[] {
  const out: PublicIncident[] = [];
  let open = initial;
  for (const tr of transitions) {
    const to = tr.toState as ComponentState;
    if (to === "operational") {
      if (open) out.push({ name: component.name, slug: component.slug, started_at: iso(open.startedAt), resolved_at: iso(tr.at), state: open.state });
      open = null;
    } else if (!open) {
      open = { startedAt: tr.at, state: to };
    } else if (stateRank(to) > stateRank(open.state)) {
      open.state = to;
    }
  }
  if (open) out.push({ name: component.name, slug: component.slug, started_at: iso(open.startedAt), resolved_at: null, state: open.state });
  return out;
}

/** An incident already running when the window opens: when it began and its worst state so far. */
function openAtWindowStart(core: Core, slug: string, windowStart: number): Open | null {
  const before = core.db
    .select()
    .from(statusTransitions)
    .where(and(eq(statusTransitions.component, slug), lt(statusTransitions.at, windowStart)))
    .orderBy(desc(statusTransitions.at), desc(statusTransitions.id))
    .limit(1)
    .get();
  if (!before || before.toState === "operational") return null;
  const began = core.db
    .select()
    .from(statusTransitions)
    .where(and(eq(statusTransitions.component, slug), lt(statusTransitions.at, windowStart), eq(statusTransitions.fromState, "operational")))
    .orderBy(desc(statusTransitions.at), desc(statusTransitions.id))
    .limit(1)
    .get();
  return { startedAt: began?.at ?? before.at, state: before.toState as ComponentState };
}

export function publicStatus(core: Core): PublicStatusResponse {
  const now = core.clock.now();
  const windowStart = now - INCIDENT_WINDOW_MS;
  const components = listComponents(core.db);
  const recent = core.db.select().from(statusTransitions).where(gte(statusTransitions.at, windowStart)).orderBy(statusTransitions.at, statusTransitions.id).all();
  const byComponent = new Map<string, StatusTransitionRow[]>();
  for (const tr of recent) {
    const list = byComponent.get(tr.component) ?? [];
    list.push(tr);
    byComponent.set(tr.component, list);
  }
  const incidents: PublicIncident[] = [];
  for (const c of components) {
    const initial = c.state !== "operational" || (byComponent.get(c.slug)?.[0]?.fromState ?? "operational") !== "operational" ? openAtWindowStart(core, c.slug, windowStart) : null;
    incidents.push(...foldIncidents(c, initial, byComponent.get(c.slug) ?? []));
  }
  incidents.sort((a, b) => (a.started_at < b.started_at ? 1 : a.started_at > b.started_at ? -1 : a.slug.localeCompare(b.slug)));
  return {
    components: components.map((c) => ({ name: c.name, since: iso(c.since), slug: c.slug, state: c.state })),
    generated_at: iso(now),
    incidents,
    state: worst(components.map((c) => c.state)),
  };
}

/** How long one folded document serves readers while nothing changes. */
export const PUBLIC_CACHE_MS = 5_000;

interface Cached {
  at: number;
  version: number;
  doc: PublicStatusResponse;
}

/**
 * The public document, folded at most once per 5 s while no state or component changes (any
 * change invalidates it at once). The route is unauthenticated, so a flood of readers must not
 * refold 30 days of transitions per request.
 */
export function cachedPublicStatus(core: Core): PublicStatusResponse {
  const now = core.clock.now();
  const version = statusVersion(core);
  const hit = core.locals.get("status.public") as Cached | undefined;
  if (hit && hit.version === version && now - hit.at >= 0 && now - hit.at < PUBLIC_CACHE_MS) return hit.doc;
  const doc = publicStatus(core);
  core.locals.set("status.public", { at: now, version, doc } satisfies Cached);
  return doc;
}
