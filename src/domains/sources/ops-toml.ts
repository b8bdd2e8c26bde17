/**
 * `ops.toml`, the file at a repository's root by which it declares itself (DESIGN §5): services
 * with their build keys, release steps, hooks, domains per environment and operational settings
 * per environment and service. Parsed with Bun's TOML parser and checked key by key: an unknown
 * key, a wrong type or a name that refers to nothing is an error naming the key
 * (`services.web.bulid`), so a typo never passes silently. The builds domain reads a service's
 * build keys from the typed declaration exported here.
 */
import { BASE_IMAGE_PATTERN, HOST_PATTERN, PLACEMENT_PATTERN } from "../resources/service";
import type { DeclaredNames } from "./model";
import { badRepoPath } from "./studio";

export const OPS_TOML = "ops.toml";
/** Largest ops.toml read. */
export const OPS_TOML_MAX_BYTES = 256 * 1024;

const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;
const HOST_RE = new RegExp(HOST_PATTERN);
const BASE_RE = new RegExp(BASE_IMAGE_PATTERN);
export const HOOK_EVENTS = ["pre-deploy", "post-deploy"] as const;
export const OPERATIONAL_KEYS = ["replicas", "limits", "env_group", "address"] as const;

/** A service as the file declares it, with the defaults filled in. */
export interface ServiceDeclaration {
  name: string;
  /** Native builder: commands run in order in the context directory. */
  build: string[];
  /** The `checks` step's commands (empty = none). */
  check: string[];
  /** The image's command (native builds); null with a dockerfile. */
  start: string | null;
  /** Port the ingress routes to (default 8080). */
  port: number;
  /** HTTP path probed for health; null = none. */
  health: string | null;
  /** Build context, relative to the repository root (default "."). */
  context: string;
  /** Directory under the context packed into the image (default "."). */
  output: string;
  /** Container build file (relative to the repository root); null = native builder. */
  dockerfile: string | null;
  /** The image a native build's image is based on, in ops's registry (decision 0620); null = none. */
  base: string | null;
  /** `[services.<name>.placement] constraints`: where its replicas may run on a Swarm (null = anywhere). */
  placement: { constraints: string[] } | null;
  /** The keys the file itself set (the rest are defaults). */
  keys: string[];
}

export interface StepDeclaration {
  name: string;
  service: string;
  command: string;
}

export interface OperationalSettings {
  replicas?: number;
  limits?: { memory_mb?: number; cpu?: number };
  env_group?: string;
  address?: string;
}

/** The whole declaration. Maps keep the file's order. */
export interface OpsDeclaration {
  services: ServiceDeclaration[];
  steps: StepDeclaration[];
  /** Event (`pre-deploy`, `post-deploy`) → steps it fires. */
  hooks: Record<string, string[]>;
  /** Environment → host names. */
  domains: Record<string, string[]>;
  /** Environment ("" = every environment without its own block) → service → settings. */
  operational: Record<string, Record<string, OperationalSettings>>;
}

/** A declaration the file cannot make; the message names the key. */
export class OpsTomlError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${OPS_TOML}: ${key ? `${key}: ` : ""}${message}`);
    this.name = "OpsTomlError";
  }
}

type Table = Record<string, unknown>;

function isTable(v: unknown): v is Table {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function table(v: unknown, key: string): Table {
  if (!isTable(v)) throw new OpsTomlError(key, "must be a table");
  return v;
}

function onlyKeys(t: Table, allowed: readonly string[], at: string): void {
  for (const k of Object.keys(t)) {
    if (!allowed.includes(k)) throw new OpsTomlError(at ? `${at}.${k}` : k, `unknown key (allowed: ${allowed.join(", ")})`);
  }
}

function str(v: unknown, key: string): string {
  if (typeof v !== "string" || v.trim() === "") throw new OpsTomlError(key, "must be a non-empty string");
  return v;
}

function commands(v: unknown, key: string): string[] {
  if (typeof v === "string") return [str(v, key)];
  if (!Array.isArray(v) || v.length > 100) throw new OpsTomlError(key, "must be a string or an array of at most 100 strings");
  return v.map((c, i) => str(c, `${key}[${i}]`));
}

function int(v: unknown, key: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw new OpsTomlError(key, `must be an integer from ${min} to ${max}`);
  return v;
}

function relPath(v: unknown, key: string): string {
  const s = str(v, key);
  if (s === ".") return s;
  const why = badRepoPath(s.replace(/\/+$/, ""));
  if (why) throw new OpsTomlError(key, `must be a path relative to the repository root: ${why}`);
  return s.replace(/\/+$/, "");
}

/** A base image reference: a repository with a tag or a digest (which registry it is in is the build's check). */
function baseImage(v: unknown, key: string): string {
  if (typeof v !== "string" || !BASE_RE.test(v)) throw new OpsTomlError(key, `must be an image of ops's registry with a tag or a digest, like "shop/base-node:20" or "shop/base-node@sha256:<64 hex>"`);
  return v;
}

function name(v: string, key: string): string {
  if (!NAME_RE.test(v)) throw new OpsTomlError(key, "must be a resource name: lower-case letters, digits and dashes, starting with a letter or digit, at most 63 characters");
  return v;
}

/** `[services.x.placement]`: `constraints`, Swarm's placement constraints, each checked. */
function placementOf(v: unknown, at: string): { constraints: string[] } {
  const t = table(v, at);
  onlyKeys(t, ["constraints"], at);
  const list = t.constraints === undefined ? [] : commands(t.constraints, `${at}.constraints`);
  if (list.length > 32) throw new OpsTomlError(`${at}.constraints`, "at most 32 constraints");
  const re = new RegExp(PLACEMENT_PATTERN);
  list.forEach((c, i) => {
    if (!re.test(c)) throw new OpsTomlError(`${at}.constraints[${i}]`, 'must be a Swarm constraint: node.labels.<key>, node.hostname, node.role, node.id, node.platform.os|arch or engine.labels.<key>, then == or !=, then a value (like "node.labels.zone==eu")');
  });
  return { constraints: list };
}

function parseService(n: string, v: unknown): ServiceDeclaration {
  const at = `services.${n}`;
  name(n, at);
  const t = table(v, at);
  onlyKeys(t, ["build", "check", "start", "port", "health", "context", "output", "dockerfile", "base", "placement"], at);
  const dockerfile = t.dockerfile === undefined ? null : relPath(t.dockerfile, `${at}.dockerfile`);
  const base = t.base === undefined ? null : baseImage(t.base, `${at}.base`);
  if (base !== null && dockerfile !== null) throw new OpsTomlError(`${at}.base`, "a Dockerfile names its base in FROM: give base with build/start, not with dockerfile");
  if (dockerfile !== null && (t.build !== undefined || t.start !== undefined)) throw new OpsTomlError(`${at}.dockerfile`, "give dockerfile or build/start, not both");
  if (dockerfile === null && t.start === undefined) throw new OpsTomlError(`${at}.start`, "is required (the image's command) unless the service has a dockerfile");
  const health = t.health === undefined ? null : str(t.health, `${at}.health`);
  if (health !== null && !health.startsWith("/")) throw new OpsTomlError(`${at}.health`, "must be an HTTP path starting with /");
  return {
    name: n,
    build: t.build === undefined ? [] : commands(t.build, `${at}.build`),
    check: t.check === undefined ? [] : commands(t.check, `${at}.check`),
    start: t.start === undefined ? null : str(t.start, `${at}.start`),
    port: t.port === undefined ? 8080 : int(t.port, `${at}.port`, 1, 65535),
    health,
    context: t.context === undefined ? "." : relPath(t.context, `${at}.context`),
    output: t.output === undefined ? "." : relPath(t.output, `${at}.output`),
    dockerfile,
    base,
    placement: t.placement === undefined ? null : placementOf(t.placement, `${at}.placement`),
    keys: Object.keys(t),
  };
}

function parseOperational(at: string, v: unknown, services: Set<string>): OperationalSettings {
  const t = table(v, at);
  onlyKeys(t, OPERATIONAL_KEYS, at);
  const out: OperationalSettings = {};
  if (t.replicas !== undefined) out.replicas = int(t.replicas, `${at}.replicas`, 0, 100);
  if (t.limits !== undefined) {
    const l = table(t.limits, `${at}.limits`);
    onlyKeys(l, ["memory_mb", "cpu"], `${at}.limits`);
    out.limits = {};
    if (l.memory_mb !== undefined) out.limits.memory_mb = int(l.memory_mb, `${at}.limits.memory_mb`, 16, 1048576);
    if (l.cpu !== undefined) {
      if (typeof l.cpu !== "number" || !(l.cpu > 0) || l.cpu > 256) throw new OpsTomlError(`${at}.limits.cpu`, "must be a number of cores above 0 and at most 256");
      out.limits.cpu = l.cpu;
    }
  }
  if (t.env_group !== undefined) out.env_group = name(str(t.env_group, `${at}.env_group`), `${at}.env_group`);
  if (t.address !== undefined) out.address = str(t.address, `${at}.address`);
  const svc = at.split(".").pop() as string;
  if (!services.has(svc)) throw new OpsTomlError(at, `names no service declared under [services]`);
  return out;
}

/** Parse and check an ops.toml; throws `OpsTomlError` naming the key at fault. */
export function parseOpsToml(text: string): OpsDeclaration {
  let doc: unknown;
  try {
    doc = Bun.TOML.parse(text);
  } catch (e) {
    throw new OpsTomlError("", `not valid TOML: ${(e as Error).message}`);
  }
  const root = table(doc, "");
  onlyKeys(root, ["services", "steps", "hooks", "domains", "operational"], "");
  const services = Object.entries(root.services === undefined ? {} : table(root.services, "services")).map(([n, v]) => parseService(n, v));
  const serviceNames = new Set(services.map((s) => s.name));

  const steps = Object.entries(root.steps === undefined ? {} : table(root.steps, "steps")).map(([n, v]) => {
    const at = `steps.${n}`;
    name(n, at);
    const t = table(v, at);
    onlyKeys(t, ["service", "command"], at);
    const service = str(t.service, `${at}.service`);
    if (!serviceNames.has(service)) throw new OpsTomlError(`${at}.service`, `names no service declared under [services] ("${service}")`);
    return { name: n, service, command: str(t.command, `${at}.command`) };
  });
  const stepNames = new Set(steps.map((s) => s.name));

  const hooks: Record<string, string[]> = {};
  const hooksT = root.hooks === undefined ? {} : table(root.hooks, "hooks");
  onlyKeys(hooksT, HOOK_EVENTS, "hooks");
  for (const [event, v] of Object.entries(hooksT)) {
    if (!Array.isArray(v)) throw new OpsTomlError(`hooks.${event}`, "must be an array of step names");
    hooks[event] = v.map((s, i) => {
      const step = str(s, `hooks.${event}[${i}]`);
      if (!stepNames.has(step)) throw new OpsTomlError(`hooks.${event}[${i}]`, `names no step declared under [steps] ("${step}")`);
      return step;
    });
  }

  const domains: Record<string, string[]> = {};
  for (const [env, v] of Object.entries(root.domains === undefined ? {} : table(root.domains, "domains"))) {
    name(env, `domains.${env}`);
    if (!Array.isArray(v) || v.length === 0 || v.length > 100) throw new OpsTomlError(`domains.${env}`, "must be an array of 1 to 100 host names");
    domains[env] = v.map((h, i) => {
      const host = str(h, `domains.${env}[${i}]`).toLowerCase();
      if (!HOST_RE.test(host)) throw new OpsTomlError(`domains.${env}[${i}]`, `"${host}" is not a host name`);
      return host;
    });
    if (services.length === 0) throw new OpsTomlError(`domains.${env}`, "routes to a service, but the file declares none");
  }

  const operational: Record<string, Record<string, OperationalSettings>> = {};
  for (const [env, v] of Object.entries(root.operational === undefined ? {} : table(root.operational, "operational"))) {
    if (env !== "") name(env, `operational.${env}`);
    const at = env === "" ? `operational.""` : `operational.${env}`;
    operational[env] = {};
    for (const [svc, sv] of Object.entries(table(v, at))) operational[env][svc] = parseOperational(`${at}.${svc}`, sv, serviceNames);
  }
  return { services, steps, hooks, domains, operational };
}

/** The names a declaration makes (SourceResponse.declared). */
export function declaredNamesOf(d: OpsDeclaration): DeclaredNames {
  const operational: Record<string, Record<string, string[]>> = {};
  for (const [env, svcs] of Object.entries(d.operational)) {
    operational[env] = {};
    for (const [svc, settings] of Object.entries(svcs)) operational[env][svc] = OPERATIONAL_KEYS.filter((k) => settings[k] !== undefined);
  }
  return { domains: d.domains, hooks: d.hooks, operational, services: d.services.map((s) => s.name), steps: d.steps.map((s) => s.name) };
}

/** The operational settings of a service in an environment: its own block, else the "" block. */
export function operationalFor(d: OpsDeclaration, environment: string, service: string): OperationalSettings {
  const own = d.operational[environment];
  if (own !== undefined) return own[service] ?? {};
  return d.operational[""]?.[service] ?? {};
}
