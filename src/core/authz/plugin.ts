/**
 * Authentication once, leniently; authorization per route, strictly (PocketBase's split).
 *
 * `authzPlugin(core)` adds to every request:
 * - `meta` (request id, client address, user agent) and `principal` (or null) — resolved once,
 *   never throwing for a bad credential;
 * - the `permission` and `public` macros. Every route declares exactly one. `permission` records
 *   the key in the route's OpenAPI `detail` (`x-permission`), and before the body is validated it
 *   turns a missing principal into 401 and a missing permission into 403, writing a `denied`
 *   audit row for every 403. Handlers receive `auth` (principal, project, environment, set).
 *
 * The scope of the check: an Estate key is evaluated estate-wide; a route with a `:slug` (or a
 * custom `project` resolver) in that project and environment; any other route "anywhere" (held
 * in at least one project; the service narrows per project).
 * Decisions: docs/decisions/0400-authorization.md.
 */
import { Elysia } from "elysia";
import type { Core, ProjectRef, Credentials } from "../core";
import type { Principal, RequestMeta } from "./principal";
import { actorOf } from "./principal";
import { AUTHENTICATED, ESTATE_KEYS, isPermissionKey, type PermissionKey } from "./catalog";
import { evaluate, denyReason, type Scope, type Grants, type Evaluation } from "./effective";
import { OpsError } from "../errors";
import { writeAudit } from "../audit";
import { cookieValue, parseAuthorization, sessionCookieName } from "./credentials";

/** Per-request context handed to a custom project or environment resolver. */
export interface ResolveContext {
  params: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
  request: Request;
  principal: Principal;
  /** The project, once resolved (environment resolvers see it). */
  project?: ProjectRef;
}

export interface PermissionOptions {
  key: PermissionKey | typeof AUTHENTICATED;
  /**
   * Where the project comes from. Default: the `:slug` path parameter when the route has one.
   * A function returns the project's slug (or throws its own not-found). Annotate its parameter
   * (`(ctx: ResolveContext) => …`): an unannotated arrow makes TypeScript lose the handler's `auth`.
   */
  project?: (ctx: ResolveContext) => string | Promise<string>;
  /**
   * The environment: default `params.environment ?? query.environment ?? "production"`;
   * `"none"` evaluates without environment policies (project-level routes). A resolver may return
   * several environments for a route acting on something that lives in each of them: the caller
   * then needs the permission in every one (the handler sees the permissions they share, and
   * `environment` null).
   */
  environment?: "none" | ((ctx: ResolveContext) => string | null | readonly string[]);
}

export type PermissionSpec = PermissionKey | typeof AUTHENTICATED | PermissionOptions;

/** What an authorized handler receives as `auth`. */
export interface AuthContext {
  principal: Principal;
  project: ProjectRef | null;
  environment: string | null;
  /** Effective permissions in the evaluated scope. */
  permissions: ReadonlySet<string>;
  meta: RequestMeta;
}

/** The key a spec names (for the inventory test and OpenAPI). */
export function specKey(spec: PermissionSpec): string {
  return typeof spec === "string" ? spec : spec.key;
}

/** Pull every credential form out of a request (Bearer, bare cargo token, Basic, the session cookie `cookieName`). */
export function extractCredentials(request: Request, meta: RequestMeta, cookieName: string): Credentials {
  const { bearer, basicUser, basicPassword } = parseAuthorization(request.headers.get("authorization"));
  return { bearer, basicUser, basicPassword, cookie: cookieValue(request.headers.get("cookie"), cookieName), meta };
}

const metaByRequest = new WeakMap<Request, RequestMeta>();

// Request ids: a random per-process prefix and a counter. Unique, short, and cheap on the hot path
// (a UUID per request cost several percent of a small request's time).
const ID_PREFIX = crypto.getRandomValues(new Uint32Array(2)).reduce((s, n) => s + n.toString(36).padStart(7, "0"), "").slice(0, 10);
let idCounter = 0;

type IpSource = { requestIP(r: Request): { address: string } | null } | null;

/** A request's meta; the client address is asked of the server only when read. */
class LazyMeta implements RequestMeta {
  private address: string | undefined = undefined;
  constructor(
    readonly requestId: string,
    readonly userAgent: string,
    private source: IpSource,
    private readonly request: Request,
  ) {}
  get ip(): string {
    if (this.address === undefined) this.address = this.source?.requestIP(this.request)?.address ?? "";
    return this.address;
  }
  set ip(value: string) {
    this.address = value;
    this.source = null;
  }
}

/**
 * The request's meta, set as early as `onRequest` by the app (so errors can log the id). The
 * client address is looked up only when something reads `ip` (audit rows, rate limits). A class
 * rather than an object literal with accessors: the literal cost several percent of a small
 * request's time (docs/decisions/0641).
 */
export function requestMeta(request: Request, server: IpSource): RequestMeta {
  let meta = metaByRequest.get(request);
  if (!meta) {
    const incoming = request.headers.get("x-request-id");
    meta = new LazyMeta(
      incoming && /^[A-Za-z0-9._-]{8,64}$/.test(incoming) ? incoming : `${ID_PREFIX}-${(++idCounter).toString(36)}`,
      (request.headers.get("user-agent") ?? "").slice(0, 300),
      server,
      request,
    );
    metaByRequest.set(request, meta);
  }
  return meta;
}

/** The path of a request URL without parsing the whole URL. */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const q = url.indexOf("?", start);
  return q < 0 ? url.slice(start) : url.slice(start, q);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** True when the request's `Origin` is this server (its public URL, or the Host it was sent to). */
export function sameOrigin(core: Core, request: Request): boolean {
  const origin = request.headers.get("origin");
  if (!origin) return false;
  if (origin === new URL(core.config.publicUrl).origin) return true;
  const host = request.headers.get("host");
  return host !== null && (origin === `http://${host}` || origin === `https://${host}`);
}

/** What `authorize` reads: the caller, and the request (method, URL) with its route parameters. */
export interface AuthorizeInput {
  principal: Principal | null;
  meta: RequestMeta;
  request: Request;
  params?: unknown;
  query?: unknown;
  headers?: unknown;
}

/**
 * Authorize a request: the `permission` macro's whole decision (401, cookie Origin, project and
 * environment scope, 403 with its `denied` audit row, audited reads). Exported so a caller that
 * is not an HTTP route acts under the same rule: an MCP tool passes the API request it stands for
 * (method and path) with that route's parameters and spec. Synchronous unless the spec's `project`
 * resolver is asynchronous, so the common case costs no promise.
 */
export function authorize(core: Core, ctx: AuthorizeInput, spec: PermissionSpec): AuthContext | Promise<AuthContext> {
  const principal = ctx.principal as Principal | null;
  const meta = ctx.meta as RequestMeta;
  const request = ctx.request as Request;
  if (!principal) throw new OpsError("unauthorized", "Sign in or send a valid token.");
  const opts: PermissionOptions = typeof spec === "string" ? { key: spec } : spec;
  const params = (ctx.params ?? {}) as Record<string, string | undefined>;
  const query = (ctx.query ?? {}) as Record<string, string | undefined>;
  const path = pathOf(request.url);

  if (principal.viaCookie && !SAFE_METHODS.has(request.method) && !sameOrigin(core, request)) {
    deny(core, principal, meta, opts.key, path, null, null, "cookie request without a matching Origin");
    throw new OpsError("forbidden", "Cross-site request refused: the Origin header does not match this server.");
  }

  const rctx: ResolveContext = { params, query, headers: (ctx.headers ?? {}) as Record<string, string | undefined>, request, principal };
  if (opts.project) {
    const slug = opts.project(rctx);
    if (slug instanceof Promise) return slug.then((s) => decide(core, opts, rctx, meta, path, s));
    return decide(core, opts, rctx, meta, path, slug);
  }
  return decide(core, opts, rctx, meta, path, params.slug);
}

function decide(core: Core, opts: PermissionOptions, rctx: ResolveContext, meta: RequestMeta, path: string, slug: string | undefined): AuthContext {
  const { params, query, principal, request } = rctx;
  let project: ProjectRef | null = null;
  if (slug !== undefined) {
    project = core.access.findProject(slug);
    if (!project) throw new OpsError("not_found", "No such project.");
  }
  let environments: readonly (string | null)[] = [null];
  if (project) {
    if (opts.environment === "none") environments = [null];
    else if (typeof opts.environment === "function") {
      const chosen = opts.environment({ ...rctx, project });
      environments = chosen === null ? [null] : typeof chosen === "string" ? [chosen] : chosen.length === 0 ? [null] : chosen;
    } else {
      const explicit = params.environment ?? query.environment;
      if (explicit !== undefined && explicit !== "" && !project.environments.includes(explicit)) {
        throw new OpsError("not_found", `No such environment "${explicit}" in this project.`);
      }
      environments = [explicit || "production"];
    }
  }

  const grants = core.access.grants(principal);
  let permissions = null as ReadonlySet<string> | null;
  for (const environment of environments) {
    let scope: Scope;
    if (opts.key !== AUTHENTICATED && ESTATE_KEYS.has(opts.key as PermissionKey)) scope = { kind: "estate" };
    else if (project) scope = { kind: "project", projectId: project.id, environment };
    else scope = { kind: "any" };
    const ev = cachedEvaluate(principal, grants, scope);

    // `authenticated` needs no permission, but it does need an operator who is not suspended.
    const refused = opts.key === AUTHENTICATED ? principal.suspended : !ev.permissions.has(opts.key);
    if (refused) {
      // Say where: the project (and environment), the project a project-less read named in
      // `?project=` (observability), any project for such a read naming none, or the estate.
      const named = typeof query.project === "string" && query.project !== "" ? JSON.stringify(query.project.slice(0, 64)) : null;
      const where = project
        ? `in ${project.slug}${environments.length > 1 && environment ? ` (${environment})` : ""}`
        : scope.kind === "any"
          ? named !== null
            ? `in ${named}`
            : "in any project"
          : "estate-wide";
      deny(core, principal, meta, opts.key, path, project?.slug ?? null, environment, denyReason(opts.key, ev, where));
      const message = principal.suspended ? "Your account is suspended." : `Your access does not include ${opts.key} ${where}.`;
      throw new OpsError("forbidden", message, { permission: opts.key });
    }
    permissions = permissions === null ? ev.permissions : new Set<string>([...permissions].filter((k: string) => ev.permissions.has(k)));
  }
  const environment = environments.length === 1 ? environments[0] : null;
  if (core.config.auditReads && SAFE_METHODS.has(request.method)) {
    writeAudit(core, core.db, {
      ...actorOf(principal, meta),
      action: opts.key,
      target: path,
      outcome: "allowed",
      project: project?.slug ?? null,
      environment,
    });
  }
  return { principal, project, environment, permissions: permissions ?? new Set(), meta };
}

// Evaluations per grants object: the access hooks hand out one grants object per operator until
// access data changes, so a caller's repeated requests in the same scope evaluate once.
const evaluations = new WeakMap<Grants, Map<string, Evaluation>>();

function cachedEvaluate(principal: Principal, grants: Grants, scope: Scope): Evaluation {
  const where = scope.kind === "project" ? `${scope.projectId}/${scope.environment ?? ""}` : scope.kind;
  const key = `${principal.operatorId}|${principal.suspended ? 1 : 0}|${principal.tokenId ?? ""}|${principal.tokenProjectId ?? ""}|${where}`;
  let byKey = evaluations.get(grants);
  if (!byKey) {
    byKey = new Map();
    evaluations.set(grants, byKey);
  }
  let ev = byKey.get(key);
  if (!ev) {
    ev = evaluate(principal, grants, scope);
    if (byKey.size < 1000) byKey.set(key, ev);
  }
  return ev;
}

function deny(core: Core, principal: Principal, meta: RequestMeta, action: string, target: string, project: string | null, environment: string | null, reason: string): void {
  const a = actorOf(principal, meta);
  writeAudit(core, core.db, { ...a, action, target, outcome: "denied", reason, project, environment });
}

/** The authorization decided in `transform`, handed to the handler by `resolve`. */
const authByRequest = new WeakMap<Request, AuthContext>();

/**
 * The kernel's request plugin: meta, principal, and the `permission` / `public` macros.
 * Every domain's route builder `.use(authzPlugin(core))` for the types; Elysia dedupes it by name
 * and seed so it runs once per request.
 */
export function authzPlugin(core: Core) {
  const cookieName = sessionCookieName(core.config.publicUrl);
  return new Elysia({ name: "ops-authz", seed: core.id })
    .derive({ as: "global" }, ({ request, server }) => {
      const meta = requestMeta(request, server);
      let principal: Principal | null = null;
      try {
        principal = core.access.authenticate(extractCredentials(request, meta, cookieName));
      } catch (e) {
        core.log.error("authentication hook failed", { req: meta.requestId, err: e });
      }
      return { meta, principal };
    })
    .macro({
      // The hooks destructure exactly what they read: Elysia then skips the rest of the context
      // (parsing cookies, for one), which a whole-context parameter would force on every request.
      permission: (spec: PermissionSpec) => ({
        detail: { "x-permission": specKey(spec), security: [{ bearer: [] }, { cookie: [] }] } as Record<string, unknown>,
        transform:
          typeof spec === "object" && spec.project
            ? async ({ principal, meta, request, params, query, headers }: AuthorizeInput) => {
                authByRequest.set(request, await authorize(core, { principal, meta, request, params, query, headers }, spec));
              }
            : ({ principal, meta, request, params, query }: AuthorizeInput) => {
                authByRequest.set(request, authorize(core, { principal, meta, request, params, query }, spec) as AuthContext);
              },
        resolve({ request }: { request: Request }) {
          return { auth: authByRequest.get(request) as AuthContext };
        },
      }),
      public: (value: true) => ({
        detail: { "x-public": value, security: [] } as Record<string, unknown>,
      }),
    });
}

/** True when the key a route declares is in the catalog or is the self-service pseudo key. */
export function isDeclarableKey(key: string): boolean {
  return key === AUTHENTICATED || isPermissionKey(key);
}
