/**
 * Which telemetry a reader may see: the projects where it holds `obs.read`, minus the environments
 * where an environment policy takes `obs.read` away. The read routes are evaluated "anywhere" by
 * the authorization macro (obs.read in at least one project); this narrows every answer, so an
 * absent `project` means "all of mine", and a named project the caller may not read (or that does
 * not exist) simply shows nothing — telemetry of another project is invisible, never an error that
 * confirms it exists.
 */
import type { Core, ProjectRef } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import { evaluate } from "../../core/authz/effective";

export interface VisibleProject {
  /** The project's number in telemetry.db. */
  pid: number;
  ref: ProjectRef;
  /** Environments the caller may not read in this project. */
  denied: ReadonlySet<string>;
}

export interface Scope {
  projects: VisibleProject[];
  /** Only this environment (the `environment` parameter), or every one. */
  environment: string | null;
}

/** The telemetry projects (number → ops id), read fresh: the table is tiny. */
function telemetryProjects(core: Core): Array<{ id: number; project_id: string }> {
  return core.telemetrySqlite.query("SELECT id, project_id FROM obs_projects").all() as Array<{ id: number; project_id: string }>;
}

/** What `principal` may read, narrowed by the `project` and `environment` parameters. */
export function readScope(core: Core, principal: Principal, filter: { project?: string; environment?: string }): Scope {
  const grants = core.access.grants(principal);
  const projects: VisibleProject[] = [];
  const environment = filter.environment || null;
  for (const row of telemetryProjects(core)) {
    const ref = core.access.findProjectById(row.project_id);
    if (!ref) continue;
    if (filter.project && ref.slug !== filter.project) continue;
    if (!evaluate(principal, grants, { kind: "project", projectId: ref.id, environment: null }).permissions.has("obs.read")) continue;
    const denied = new Set<string>();
    for (const env of ref.environments) {
      if (!evaluate(principal, grants, { kind: "project", projectId: ref.id, environment: env }).permissions.has("obs.read")) denied.add(env);
    }
    if (environment !== null && denied.has(environment)) continue;
    projects.push({ pid: row.id, ref, denied });
  }
  return { projects, environment };
}

/**
 * The scope as a SQL condition on a table's `project` and `environment` columns (with `alias.`
 * prefix when given), and its parameters. An empty scope is `0` (matches nothing).
 */
export function scopeSql(scope: Scope, alias = ""): { sql: string; params: Array<string | number> } {
  const p = alias ? `${alias}.` : "";
  if (scope.projects.length === 0) return { sql: "0", params: [] };
  const params: Array<string | number> = [];
  const whole = scope.projects.filter((v) => v.denied.size === 0).map((v) => v.pid);
  const parts: string[] = [];
  if (whole.length > 0) parts.push(`${p}project IN (${whole.join(", ")})`);
  for (const v of scope.projects.filter((x) => x.denied.size > 0)) {
    parts.push(`(${p}project = ${v.pid} AND ${p}environment NOT IN (${[...v.denied].map(() => "?").join(", ")}))`);
    params.push(...v.denied);
  }
  let sql = parts.length === 1 ? parts[0] : `(${parts.join(" OR ")})`;
  if (scope.environment !== null) {
    sql = `${sql} AND ${p}environment = ?`;
    params.push(scope.environment);
  }
  return { sql, params };
}

/** The project slug of a telemetry project number within the scope. */
export function slugOf(scope: Scope, pid: number): string {
  return scope.projects.find((v) => v.pid === pid)?.ref.slug ?? "";
}
