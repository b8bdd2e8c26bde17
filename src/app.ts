/**
 * Composition: `createCore(config)` opens the data dir (databases migrated, blob store, secrets
 * store, scheduler) and installs the domains; `createHttpApp(core)` builds the Elysia app with the
 * kernel's request plumbing (request ids, body limits, errors, OpenAPI, health) and every domain's
 * routes. `src/serve.ts` runs it as a server.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { Elysia, t } from "elysia";
import { swagger } from "@elysiajs/swagger";
import type { Config } from "./core/config";
import type { Core, DomainModule, AccessHooks, ErrorStyle } from "./core/core";
import { systemClock, type Clock } from "./core/clock";
import { createLogger, stdoutSink, type LogSink } from "./core/log";
import { openDatabase, closeDatabase } from "./core/db/client";
import { runMigrations } from "./core/db/migrate";
import { FsBlobStore } from "./core/blobs/store";
import { SecretsStore } from "./core/secrets";
import { Scheduler } from "./core/scheduler";
import { EventBus } from "./core/events";
import { NO_GRANTS } from "./core/authz/effective";
import { authzPlugin, requestMeta, pathOf } from "./core/authz/plugin";
import { sessionCookieName } from "./core/authz/credentials";
import { normaliseError, toErrorBody, OpsError, invalid } from "./core/errors";
import { bodyTooLarge, readBodyWithLimit, rememberJsonBody } from "./core/body";
import { uuidv7 } from "./core/ids";
import { securityHeaders, securityHeaderEntries } from "./core/security-headers";
import { VIEWER_CONFIG, VIEWER_PATH, viewerResponse } from "./core/api-docs";
import { VERSION } from "./version";
import { DOMAINS } from "./domains";

export interface CoreOptions {
  clock?: Clock;
  logSink?: LogSink;
  /** Domain modules to install; default: all of src/domains/index.ts. */
  modules?: readonly DomainModule[];
  /** Entries for `core.locals` before the domains install (`ops serve`'s data plane runtime and ingress). */
  locals?: ReadonlyArray<readonly [string, unknown]>;
}

/** Access hooks that know nobody: every request is anonymous until the access domain installs its own. */
export const ANONYMOUS_ACCESS: AccessHooks = {
  authenticate: () => null,
  findProject: () => null,
  findProjectById: () => null,
  grants: () => NO_GRANTS,
};

const modulesByCore = new WeakMap<Core, readonly DomainModule[]>();

/** Open the data dir and build the Core. Migrations run here; the scheduler is not started. */
export function createCore(config: Config, opts: CoreOptions = {}): Core {
  const clock = opts.clock ?? systemClock;
  const log = createLogger(config.logLevel, opts.logSink ?? stdoutSink);
  mkdirSync(config.dataDir, { recursive: true });
  for (const dir of ["keys", "git", "run"]) mkdirSync(path.join(config.dataDir, dir), { recursive: true, mode: dir === "keys" ? 0o700 : 0o755 });

  const state = openDatabase(path.join(config.dataDir, "ops.db"), "state");
  const telemetry = openDatabase(path.join(config.dataDir, "telemetry.db"), "telemetry");
  const appliedOps = runMigrations(state.sqlite, "ops", clock.now());
  const appliedTelemetry = runMigrations(telemetry.sqlite, "telemetry", clock.now());
  if (appliedOps.length + appliedTelemetry.length > 0) {
    log.info("migrations applied", { ops: appliedOps, telemetry: appliedTelemetry });
  }

  const secrets = new SecretsStore(state.db, clock, config);
  const core: Core = {
    id: uuidv7(),
    config,
    clock,
    log,
    db: state.db,
    sqlite: state.sqlite,
    telemetry: telemetry.db,
    telemetrySqlite: telemetry.sqlite,
    blobs: new FsBlobStore(path.join(config.dataDir, "blobs")),
    secrets,
    // Build steps hold a slot for as long as they run: they get their own slots beside the 4 every
    // other kind of work shares, so OPS_BUILD_CONCURRENCY is reachable and never starves the rest.
    scheduler: new Scheduler(state.db, clock, log, { tickMs: config.schedulerTickMs, concurrency: 4 + config.buildConcurrency }),
    events: new EventBus(log),
    access: ANONYMOUS_ACCESS,
    state: { ready: false, draining: false, startedAt: clock.now() },
    version: VERSION,
    onClose: [],
    locals: new Map(),
  };
  const status = secrets.open();
  if (status.sealed) log.warn("secrets store is sealed", { reason: status.reason });

  for (const [k, v] of opts.locals ?? []) core.locals.set(k, v);
  const modules = opts.modules ?? DOMAINS;
  modulesByCore.set(core, modules);
  for (const m of modules) m.install?.(core);
  return core;
}

/** The domain modules a core was created with. */
export function modulesOf(core: Core): readonly DomainModule[] {
  return modulesByCore.get(core) ?? [];
}

/** Run the close hooks, then close both databases. Safe to call twice. */
export async function closeCore(core: Core): Promise<void> {
  if (core.locals.get("core.closed")) return;
  core.locals.set("core.closed", true);
  for (const fn of core.onClose) {
    try {
      await fn();
    } catch (e) {
      core.log.error("close hook failed", { err: e });
    }
  }
  closeDatabase(core.sqlite);
  closeDatabase(core.telemetrySqlite);
}

/** Longest-prefix body limit. */
function limitFor(limits: Array<{ prefix: string; bytes: number; pattern?: RegExp }>, pathname: string, fallback: number): number {
  let best = -1;
  let bytes = fallback;
  for (const l of limits) {
    if (pathname.startsWith(l.prefix) && l.prefix.length > best && (!l.pattern || l.pattern.test(pathname))) {
      best = l.prefix.length;
      bytes = l.bytes;
    }
  }
  return bytes;
}

/** Read a JSON body without ever holding more than `limit` bytes; 413 past it, 400 if not JSON. */
async function readJsonWithLimit(request: Request, limit: number): Promise<unknown> {
  const bytes = await readBodyWithLimit(request, limit);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new OpsError("malformed_json", "The request body is not valid JSON.");
  }
}

/** Build the HTTP app: kernel plumbing plus every installed domain's routes. */
export function createHttpApp(core: Core) {
  const modules = modulesOf(core);
  const limits = modules.flatMap((m) => m.bodyLimits?.(core) ?? []);
  const rawPrefixes = limits.filter((l) => l.raw).map((l) => l.prefix);
  const styles: ErrorStyle[] = modules.flatMap((m) => m.errorStyles?.(core) ?? []).sort((a, b) => b.prefix.length - a.prefix.length);
  // Per-request timing and error status for the access log, keyed by the request object.
  const started = new WeakMap<Request, number>();
  const errorStatus = new WeakMap<Request, number>();
  const logRequests = core.log.enabled("info");

  let app = new Elysia({ name: "ops" })
    .onRequest(({ request, server, set }) => {
      const meta = requestMeta(request, server);
      if (logRequests) started.set(request, performance.now());
      set.headers["x-request-id"] = meta.requestId;
      for (const [k, v] of securityHeaderEntries(pathOf(request.url))) set.headers[k] = v;
      const len = request.headers.get("content-length");
      if (len !== null && len !== "0") {
        const limit = limitFor(limits, pathOf(request.url), core.config.maxBodyBytes);
        if (Number(len) > limit) throw bodyTooLarge(limit);
      }
    })
    .onParse({ as: "global" }, async ({ request }, contentType) => {
      if (!contentType.startsWith("application/json") && !contentType.endsWith("+json")) return;
      const pathname = pathOf(request.url);
      if (rawPrefixes.some((p) => pathname.startsWith(p))) return;
      const limit = limitFor(limits, pathname, core.config.maxBodyBytes);
      const value = await readJsonWithLimit(request, limit);
      // Every API body is a JSON object: one that is not never reads as "no body" (docs/decisions/0290).
      if (pathname.startsWith("/api/v1/") && value !== undefined && value !== null && (typeof value !== "object" || Array.isArray(value))) {
        throw invalid("(body)", "must be a JSON object, or no body at all");
      }
      rememberJsonBody(request, value);
      return value;
    })
    .onError({ as: "global" }, ({ code, error, request, set }) => {
      const n = normaliseError(error, code);
      const meta = requestMeta(request, null);
      errorStatus.set(request, n.status);
      const pathname = pathOf(request.url);
      if (n.internal) core.log.error("request failed", { req: meta.requestId, method: request.method, path: pathname, err: error });
      const style = styles.find((s) => pathname.startsWith(s.prefix));
      if (style) {
        const res = style.render(n, request);
        res.headers.set("x-request-id", meta.requestId);
        for (const [k, v] of Object.entries(securityHeaders(pathname))) if (!res.headers.has(k)) res.headers.set(k, v);
        return res;
      }
      const headers: Record<string, string> = { "content-type": "application/json", "x-request-id": meta.requestId, ...n.headers };
      for (const [k, v] of Object.entries(set.headers)) if (typeof v === "string" && !(k in headers)) headers[k] = v;
      return new Response(request.method === "HEAD" ? null : JSON.stringify(toErrorBody(n)), { status: n.status, headers });
    })
    .onAfterResponse({ as: "global" }, ({ request, set, responseValue }) => {
      if (!logRequests) return;
      const t0 = started.get(request);
      const meta = requestMeta(request, null);
      core.log.info("request", {
        req: meta.requestId,
        method: request.method,
        path: pathOf(request.url),
        status: errorStatus.get(request) ?? (responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200),
        ms: t0 === undefined ? undefined : Math.round((performance.now() - t0) * 100) / 100,
      });
    })
    .use(
      swagger({
        path: "/api/docs",
        specPath: "/api/docs/json",
        exclude: ["/api/docs", "/api/docs/json", VIEWER_PATH],
        // The viewer comes from ops itself, never a CDN (docs/decisions/0363).
        scalarCDN: VIEWER_PATH,
        scalarConfig: VIEWER_CONFIG as never,
        // Routes with a dot (GET /api/v1/cli/install.sh, GET /cargo/config.json) are API routes too;
        // static files hide themselves.
        excludeStaticFile: false,
        documentation: {
          info: { title: "ops", version: core.version, description: "The ops API: access, resources, delivery, observability, translations and packages." },
          components: {
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer", description: "A session bearer (opss_) or a minted token (opst_)." },
              cookie: { type: "apiKey", in: "cookie", name: sessionCookieName(core.config.publicUrl), description: "The console's session cookie (`__Host-ops_session` when ops is served over HTTPS)." },
            },
          },
        },
      }),
    )
    // Like the two swagger routes: a public static asset of the docs page, outside the API.
    .get(VIEWER_PATH, () => viewerResponse(), { detail: { hide: true } })
    .use(authzPlugin(core))
    .get("/health", () => ({ status: "ok" as const, version: core.version }), {
      public: true,
      detail: { summary: "Liveness probe", tags: ["status"] },
      response: { 200: t.Object({ status: t.Literal("ok"), version: t.String() }) },
    })
    .get(
      "/readyz",
      ({ set }) => {
        const ready = core.state.ready && !core.state.draining;
        set.status = ready ? 200 : 503;
        return { ready, draining: core.state.draining };
      },
      {
        public: true,
        detail: { summary: "Readiness probe: 503 until migrations ran and the scheduler started, and while draining", tags: ["status"] },
        response: { 200: t.Object({ ready: t.Boolean(), draining: t.Boolean() }), 503: t.Object({ ready: t.Boolean(), draining: t.Boolean() }) },
      },
    );

  for (const m of modules) {
    const routes = m.routes?.(core);
    if (routes) app = app.use(routes) as unknown as typeof app;
  }
  for (const m of modules) m.onHttpApp?.(core, app);
  return app;
}

export type HttpApp = ReturnType<typeof createHttpApp>;

/** The largest body limit any route accepts (Bun's own cap for chunked bodies). */
export function maxBodyLimit(core: Core): number {
  const limits = modulesOf(core).flatMap((m) => m.bodyLimits?.(core) ?? []);
  return Math.max(core.config.maxBodyBytes, ...limits.map((l) => l.bytes));
}
