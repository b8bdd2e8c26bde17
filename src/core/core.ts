/**
 * The `Core`: the one explicit object every service, job and command receives. No module-level
 * singletons, so many test apps run in one process. `createCore` (src/app.ts) builds it.
 *
 * The kernel knows no domain. Domains plug in through `DomainModule` (routes, jobs, start-up work,
 * body limits, error styles) and the access domain fills the `access` hooks (authentication,
 * project lookup, grants) that the authorization macro calls.
 * Decisions: docs/decisions/0401-kernel.md.
 */
import type { Database } from "bun:sqlite";
import type { AnyElysia } from "elysia";
import type { Config } from "./config";
import type { Clock } from "./clock";
import type { Logger } from "./log";
import type { Db } from "./db/client";
import type { BlobStore } from "./blobs/store";
import type { SecretsStore } from "./secrets";
import type { Scheduler } from "./scheduler";
import type { EventBus } from "./events";
import type { Grants } from "./authz/effective";
import type { Principal, RequestMeta } from "./authz/principal";
import type { NormalisedError } from "./errors";

/** A project as the authorization layer sees it. */
export interface ProjectRef {
  id: string;
  slug: string;
  name: string;
  archived: boolean;
  environments: readonly string[];
}

/** The credential forms a request may carry; the authenticator decides what they mean. */
export interface Credentials {
  /** `Authorization: Bearer X` → X; a bare `Authorization: X` (cargo) → X. */
  bearer: string | null;
  /** The password of `Authorization: Basic …`. */
  basicPassword: string | null;
  basicUser: string | null;
  /** The `ops_session` cookie. */
  cookie: string | null;
  meta: RequestMeta;
}

/** Hooks the access domain installs; the defaults know nobody. */
export interface AccessHooks {
  /**
   * Turn credentials into a principal, or null. Lenient: never throws for a bad credential.
   * Synchronous: it runs on every request, and SQLite reads are synchronous anyway.
   */
  authenticate(creds: Credentials): Principal | null;
  findProject(slug: string): ProjectRef | null;
  findProjectById(id: string): ProjectRef | null;
  grants(principal: Principal): Grants;
}

export interface CoreState {
  /** Migrations ran and (under `serve`) the scheduler started. */
  ready: boolean;
  /** Shutting down: /readyz answers 503. */
  draining: boolean;
  /**
   * Why the Core closes, when `ops serve` says: `restart` (SIGHUP: the apps keep running for the
   * next image) or `stop`. Unset (tests, commands): treated as a stop.
   */
  closing?: "stop" | "restart";
  readonly startedAt: number;
}

export interface Core {
  /** Unique per Core instance (plugins dedupe by it). */
  readonly id: string;
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Logger;
  /** ops.db (state). */
  readonly db: Db;
  readonly sqlite: Database;
  /** telemetry.db (logs, spans, samples). */
  readonly telemetry: Db;
  readonly telemetrySqlite: Database;
  readonly blobs: BlobStore;
  readonly secrets: SecretsStore;
  readonly scheduler: Scheduler;
  /** In-process domain events (a push landed, an image was signed …). */
  readonly events: EventBus;
  access: AccessHooks;
  readonly state: CoreState;
  /** The binary's version string. */
  readonly version: string;
  /** Work to do before the databases close (flush batched writes …), in registration order. */
  readonly onClose: Array<() => void | Promise<void>>;
  /** Per-domain scratch space for in-memory caches and batches, keyed by domain name. */
  readonly locals: Map<string, unknown>;
}

/**
 * The value a domain keeps in `core.locals` under `key` (`<domain>.<what>`), made by `make` on
 * first use: one per Core, so apps side by side (tests) never share a cache, batch or guard.
 */
export function coreLocal<T>(core: Core, key: string, make: () => T): T {
  let value = core.locals.get(key) as T | undefined;
  if (value === undefined) {
    value = make();
    core.locals.set(key, value);
  }
  return value;
}

/** Renders an error for routes under a prefix whose protocol defines its own error format. */
export interface ErrorStyle {
  prefix: string;
  render(err: NormalisedError, request: Request): Response;
}

/**
 * A request-body limit for paths under `prefix` (longest prefix wins). `pattern`, when given,
 * narrows the entry to paths it matches (a route with parameters before its tail, such as
 * `/api/v1/projects/<slug>/sources/<id>/saves`).
 */
export interface BodyLimit {
  prefix: string;
  bytes: number;
  raw?: boolean;
  pattern?: RegExp;
}

/** What a domain contributes. Listed in src/domains/index.ts; composed by src/app.ts. */
export interface DomainModule {
  name: string;
  /** Install hooks, define scheduler items and tasks. Runs in every process (serve, tests, admin). */
  install?(core: Core): void;
  /** Work for `ops serve` only, after migrations (bootstrap, key generation …). */
  onServe?(core: Core): void | Promise<void>;
  /** The domain's routes. */
  routes?(core: Core): AnyElysia;
  /**
   * Request-body limits for route prefixes (longest prefix wins; default `OPS_MAX_BODY_BYTES`).
   * `raw: true` leaves bodies under the prefix unread by the kernel's JSON parser: the domain
   * streams them itself (exact bytes, e.g. OCI manifests and layers) and enforces the limit.
   */
  bodyLimits?(core: Core): Array<BodyLimit>;
  /** Error renderers for protocol prefixes. */
  errorStyles?(core: Core): ErrorStyle[];
  /**
   * Called once the HTTP app holds every domain's routes, with the composed app: a domain that
   * serves the routes in another form (the MCP tools) reads their schemas from `app.routes`.
   */
  onHttpApp?(core: Core, app: AnyElysia): void;
}
