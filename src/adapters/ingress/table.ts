/**
 * The ingress's route table: for each service, the hosts and path prefixes it answers and the
 * replicas (upstreams) currently serving it. The deployments domain writes it; the proxy reads
 * it once per request. A table is compiled into an immutable lookup structure and swapped in
 * whole, so a request sees either the old table or the new one, never half of each: requests that
 * already picked an old upstream finish there, new ones go to the new upstreams.
 *
 * Matching: the request's host (lower case, without port or trailing dot) exactly, else the
 * longest `*.` wildcard suffix that matches (`*.example.com` matches `a.example.com` and
 * `a.b.example.com`, not `example.com`); within the host, the longest path prefix on a segment
 * boundary (`/api` matches `/api` and `/api/x`, not `/apix`). Every service also answers its
 * default host `<service>.<environment>.<project>.localhost`.
 *
 * Ownership (DESIGN §6): a host belongs to one project, and the table never settles a clash by
 * order. Every name under `.<project>.localhost` belongs to that project: another project's route
 * there (exact or wildcard, `*.localhost` included) is left out. Two services routing the same
 * host and prefix (which the resources domain refuses to store) get neither: the route answers
 * 404 and the clash is reported, rather than one of them winning by its name.
 */

export interface ServiceRef {
  project: string;
  environment: string;
  service: string;
}

export interface Upstream {
  host: string;
  port: number;
  /**
   * The replica's network namespace, when the ingress may connect inside it (a root ops,
   * decision 0601): it then connects to 127.0.0.1:`port` there instead of `host`:`port`.
   */
  netns?: { path: string; ident: string } | null;
  /** False while the rollout or a probe says it should get no traffic (default true). */
  healthy?: boolean;
}

export interface ServiceRoute {
  /** Exact hosts and `*.` wildcards, lower case. */
  hosts: string[];
  /** Default `/`. */
  pathPrefix?: string;
  /** Plain HTTP to these hosts gets a 308 to HTTPS while the TLS listener runs (a domain's `redirect_http`). */
  redirectHttp?: boolean;
}

export interface ServiceEntry {
  service: ServiceRef;
  /** Extra routes (the domain resources'); the default host is always added. */
  routes: ServiceRoute[];
  /** The replicas now serving the service; empty = 502 with the service's name. */
  upstreams: Upstream[];
}

/** An upstream in a compiled table, with its `host:port` key. */
export interface TargetUpstream extends Upstream {
  key: string;
}

export interface Target {
  key: string;
  service: ServiceRef;
  upstreams: TargetUpstream[];
  /** Round-robin position, shared by every rule of the service. */
  next: number;
}

interface Rule {
  prefix: string;
  target: Target;
}

export interface RouteConflict {
  host: string;
  pathPrefix: string;
  /** The service that keeps the route (the host's owner), or null when no one does. */
  kept: string | null;
  ignored: string;
}

export interface CompiledTable {
  readonly entries: readonly ServiceEntry[];
  readonly exact: ReadonlyMap<string, readonly Rule[]>;
  /** Wildcard suffixes (".example.com"), longest first. */
  readonly wildcards: ReadonlyArray<{ suffix: string; rules: readonly Rule[] }>;
  readonly conflicts: readonly RouteConflict[];
}

export function serviceKey(s: ServiceRef): string {
  return `${s.project}/${s.environment}/${s.service}`;
}

/** `<service>.<environment>.<project>.localhost`, which browsers and curl resolve to loopback. */
export function defaultHost(s: ServiceRef): string {
  return `${s.service}.${s.environment}.${s.project}.localhost`.toLowerCase();
}

/** A Host header as the table keys it: lower case, no port, no trailing dot; IPv6 literals kept bracketed. */
export function normaliseHost(raw: string | null): string {
  if (!raw) return "";
  let h = raw.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end > 0 ? h.slice(0, end + 1) : h;
  }
  const colon = h.indexOf(":");
  if (colon >= 0) h = h.slice(0, colon);
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

function normalisePrefix(p: string | undefined): string {
  if (!p || p === "/") return "/";
  return p.endsWith("/") ? p.slice(0, -1) : p;
}

function prefixMatches(prefix: string, path: string): boolean {
  if (prefix === "/") return true;
  if (!path.startsWith(prefix)) return false;
  const rest = path.charCodeAt(prefix.length);
  // End of path, a new segment, or the query string.
  return Number.isNaN(rest) || rest === 47 /* / */ || rest === 63 /* ? */;
}

/** The project a `.localhost` host or wildcard belongs to (`<…>.<project>.localhost`), "" for `localhost` itself, null outside `.localhost`. */
export function localhostOwner(host: string): string | null {
  const h = host.startsWith("*.") ? host.slice(2) : host;
  if (!h.endsWith(".localhost")) return h === "localhost" ? "" : null;
  const labels = h.slice(0, -".localhost".length).split(".");
  return labels[labels.length - 1];
}

/**
 * Compile entries into a table. A route on another project's `.localhost` names is left out; a
 * host and prefix two services claim goes to neither (both reported).
 */
export function compileTable(entries: readonly ServiceEntry[]): CompiledTable {
  const sorted = [...entries].sort((a, b) => serviceKey(a.service).localeCompare(serviceKey(b.service)));
  const byHost = new Map<string, Rule[]>();
  const conflicts: RouteConflict[] = [];
  const contested = new Set<string>();
  for (const e of sorted) {
    const target: Target = { key: serviceKey(e.service), service: { ...e.service }, upstreams: e.upstreams.map((u) => ({ ...u, key: `${u.host}:${u.port}` })), next: 0 };
    const routes: ServiceRoute[] = [{ hosts: [defaultHost(e.service)] }, ...e.routes];
    for (const r of routes) {
      const prefix = normalisePrefix(r.pathPrefix);
      for (const rawHost of r.hosts) {
        const host = rawHost.toLowerCase();
        const owner = localhostOwner(host);
        if (owner !== null && owner !== e.service.project.toLowerCase()) {
          conflicts.push({ host, pathPrefix: prefix, kept: owner === "" ? null : `project ${owner}`, ignored: target.key });
          continue;
        }
        const rules = byHost.get(host) ?? [];
        const clash = rules.find((x) => x.prefix === prefix);
        if (clash) {
          if (clash.target !== target) {
            conflicts.push({ host, pathPrefix: prefix, kept: null, ignored: target.key });
            if (!contested.has(`${host} ${prefix}`)) conflicts.push({ host, pathPrefix: prefix, kept: null, ignored: clash.target.key });
            contested.add(`${host} ${prefix}`);
          }
          continue;
        }
        rules.push({ prefix, target });
        byHost.set(host, rules);
      }
    }
  }
  const exact = new Map<string, Rule[]>();
  const wildcards: Array<{ suffix: string; rules: Rule[] }> = [];
  for (const [host, all] of byHost) {
    const rules = all.filter((r) => !contested.has(`${host} ${r.prefix}`));
    if (rules.length === 0) continue;
    rules.sort((a, b) => b.prefix.length - a.prefix.length);
    if (host.startsWith("*.")) wildcards.push({ suffix: host.slice(1), rules });
    else exact.set(host, rules);
  }
  wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
  return { entries: sorted, exact, wildcards, conflicts };
}

function pick(rules: readonly Rule[] | undefined, path: string): Target | null {
  if (!rules) return null;
  for (const r of rules) if (prefixMatches(r.prefix, path)) return r.target;
  return null;
}

/** The service a request goes to, or null (unknown host, or no prefix of it matches). */
export function lookup(table: CompiledTable, host: string, path: string): Target | null {
  const exact = pick(table.exact.get(host), path);
  if (exact) return exact;
  for (const w of table.wildcards) {
    if (host.length > w.suffix.length && host.endsWith(w.suffix)) {
      const t = pick(w.rules, path);
      if (t) return t;
    }
  }
  return null;
}
