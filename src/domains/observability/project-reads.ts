/**
 * Reads ops makes on a project's behalf, with no caller: alert rules evaluated by the scheduler
 * (docs/decisions/0650-alerts-and-outbound-channels.md). The scope is the whole project (every
 * environment, or the one named); the callers' own reads stay in reads.ts, narrowed by principal.
 */
import type { Core } from "../../core/core";
import { metricSeries } from "./metrics";
import { parseLevels, searchLogs } from "./search";
import type { Scope } from "./visibility";
import type { SeriesResponse } from "./model";

/** The telemetry scope of one project (and environment), or an empty scope when it sent nothing yet. */
export function projectScope(core: Core, projectId: string, environment: string | null): Scope {
  const ref = core.access.findProjectById(projectId);
  const row = core.telemetrySqlite.query("SELECT id FROM obs_projects WHERE project_id = ?").get(projectId) as { id: number } | null;
  if (!ref || !row) return { projects: [], environment };
  return { projects: [{ pid: row.id, ref, denied: new Set() }], environment };
}

/** A metric's series in one project over [fromMs, toMs], bucketed like the Metrics page. */
export function projectSeries(core: Core, q: { projectId: string; environment: string | null; name: string; service: string | null; fromMs: number; toMs: number }): SeriesResponse {
  return metricSeries(core.telemetrySqlite, {
    scope: projectScope(core, q.projectId, q.environment),
    name: q.name,
    service: q.service,
    fromMs: q.fromMs,
    toMs: q.toMs,
    now: core.clock.now(),
    rawRetentionMs: core.config.logRetentionDays * 86_400_000,
  });
}

/**
 * How many of a project's log lines in [fromMs, toMs] match `q` (a substring) and `level`, counted
 * up to `limit` (the search stops there). Null `level` text that names no level counts nothing.
 */
export function countProjectLogs(core: Core, s: { projectId: string; environment: string | null; service: string | null; q: string | null; level: string | null; fromMs: number; toMs: number; limit: number }): number {
  const levels = parseLevels(s.level ?? undefined);
  if (levels === null) return 0;
  return searchLogs(core.telemetrySqlite, { scope: projectScope(core, s.projectId, s.environment), q: s.q, service: s.service, levels, fromMs: s.fromMs, toMs: s.toMs, limit: s.limit }).length;
}
