/**
 * The route inventory (STYLE.md rule 2): every route declares exactly one of `permission:` or
 * `public: true`, names a permission from the catalog (or `authenticated`), answers 401 to a
 * request without credentials, and 403 to a caller who lacks its permission.
 *
 * Domains keep using these from their own tests: `checkRouteInventory(app)` is static (it reads
 * `app.routes`); `probeUnauthenticated` and `probeForbidden` send real requests. The 403 probe
 * needs real principals, which only the access domain can make: it takes a `DenialCaller`
 * factory that returns, for one route, the credentials of a caller who lacks the route's
 * permission there (and path parameters naming things that exist, such as a real project slug).
 */
import type { AnyElysia } from "elysia";
import { isDeclarableKey } from "../src/core/authz/plugin";
import { AUTHENTICATED } from "../src/core/authz/catalog";

/** The swagger plugin's own routes: hidden from OpenAPI, served to everyone. */
export const INVENTORY_EXCLUDED = new Set(["GET /api/docs", "GET /api/docs/json", "GET /api/docs/viewer.js"]);

export interface RouteInfo {
  method: string;
  path: string;
  /** The declared key (`x-permission`), or null. */
  permission: string | null;
  public: boolean;
}

/** Every route of `app` except the swagger routes, with what it declares. */
export function listRoutes(app: AnyElysia): RouteInfo[] {
  return app.routes
    .filter((r) => !INVENTORY_EXCLUDED.has(`${r.method} ${r.path}`))
    .map((r) => {
      const detail = ((r.hooks as { detail?: Record<string, unknown> } | undefined)?.detail ?? {}) as Record<string, unknown>;
      const permission = detail["x-permission"];
      return {
        method: r.method,
        path: r.path,
        permission: typeof permission === "string" ? permission : null,
        public: detail["x-public"] === true,
      };
    });
}

/** Problems with the routes' declarations; empty when every route is in order. */
export function checkRouteInventory(app: AnyElysia): string[] {
  const problems: string[] = [];
  for (const r of listRoutes(app)) {
    const name = `${r.method} ${r.path}`;
    if (r.permission === null && !r.public) problems.push(`${name} declares neither permission: nor public: true`);
    if (r.permission !== null && r.public) problems.push(`${name} declares both permission: and public: true`);
    if (r.permission !== null && !isDeclarableKey(r.permission)) problems.push(`${name} names "${r.permission}", which is not in the permission catalog`);
  }
  return problems;
}

/** A concrete path for a route pattern: `:name` becomes `params[name]` or a placeholder; `*` becomes `x`. */
export function examplePath(pattern: string, params: Record<string, string> = {}): string {
  return pattern.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => encodeURIComponent(params[name] ?? `placeholder-${name}`)).replace(/\*/g, "x");
}

export type Send = (method: string, path: string, headers: Record<string, string>) => Promise<Response>;

/** Request every permission-guarded route without credentials; each must answer 401. */
export async function probeUnauthenticated(app: AnyElysia, send: Send): Promise<string[]> {
  const problems: string[] = [];
  for (const r of listRoutes(app)) {
    if (r.permission === null || r.method === "WS") continue;
    const res = await send(r.method, examplePath(r.path), {});
    await res.arrayBuffer();
    if (res.status !== 401) problems.push(`${r.method} ${r.path} answered ${res.status} without credentials, not 401`);
  }
  return problems;
}

/**
 * For one route, a caller who lacks its permission where it acts: request headers carrying the
 * credential, and path parameters that name existing things (so the answer is not a 404).
 * Return `{ skip: reason }` to leave a route out; the reason is reported in `skipped`.
 */
export type DenialCaller = (route: RouteInfo) => Promise<{ headers: Record<string, string>; params?: Record<string, string> } | { skip: string }>;

/**
 * Request every route guarded by a catalog permission as a caller who lacks it; each must answer
 * 403. Routes guarded by `authenticated` are left out: every signed-in caller may use them.
 */
export async function probeForbidden(app: AnyElysia, send: Send, caller: DenialCaller): Promise<{ problems: string[]; skipped: string[] }> {
  const problems: string[] = [];
  const skipped: string[] = [];
  for (const r of listRoutes(app)) {
    if (r.permission === null || r.permission === AUTHENTICATED || r.method === "WS") continue;
    const c = await caller(r);
    if ("skip" in c) {
      skipped.push(`${r.method} ${r.path}: ${c.skip}`);
      continue;
    }
    const res = await send(r.method, examplePath(r.path, c.params), c.headers);
    await res.arrayBuffer();
    if (res.status !== 403) problems.push(`${r.method} ${r.path} answered ${res.status} to a caller without ${r.permission}, not 403`);
  }
  return { problems, skipped };
}
