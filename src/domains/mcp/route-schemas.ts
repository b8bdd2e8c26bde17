/**
 * Tool arguments from the routes' own TypeBox schemas. A tool names the API route it stands for;
 * its arguments are that route's path parameters (renamed where the path's name says little:
 * `slug` → `project`), query fields and body fields, flattened into one object. Validation runs
 * on the route's schemas themselves, so a tool accepts exactly what the route accepts; the copy
 * listed to clients is plain JSON Schema, where the query's numbers-as-strings are plain numbers.
 *
 * The schemas are read from the composed app (`app.routes`, `onHttpApp`), so a change to a route's
 * schema changes its tool with it, and a tool naming a route that does not exist fails at start.
 */
import type { AnyElysia } from "elysia";
import { Type, OptionalKind, Kind, TransformKind, type TObject, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";

/** How a tool offers its route's fields as arguments. */
export interface ArgOptions {
  /** Route field → argument name (path parameters such as `slug` → `project`, `id` → `build_id`). */
  rename?: Record<string, string>;
  /** Route fields the tool fixes (list_services: `type` = `service`): not offered, always this value. */
  fixed?: Record<string, string>;
  /** Route fields the tool leaves out (accepted-and-ignored query fields, typed confirmations …); `query.kind` names one place only. */
  omit?: readonly string[];
  /** Descriptions of arguments (by argument name), where the route's schema has none. */
  describe?: Record<string, string>;
}

type Origin = "params" | "query" | "body";

/** One argument: where it goes in the route call. */
interface ArgField {
  origin: Origin;
  /** The route's own name for it. */
  field: string;
  /** The route reads it as URL text and decodes it (an integer id or limit): a JSON number is passed as its digits. */
  text: boolean;
}

/** What a request to the route looks like, from one tool call's arguments. */
export interface RouteCall {
  /** Path parameters as the route sees them in the URL (strings), fixed ones included. */
  rawParams: Record<string, string>;
  /** Query fields as the URL would carry them (strings). */
  rawQuery: Record<string, string>;
}

export interface DecodedCall {
  params: Record<string, any>;
  query: Record<string, any>;
  /** Undefined when the route takes no body, or an optional body got no field. */
  body: Record<string, any> | undefined;
}

export interface ToolArgs {
  method: string;
  /** The route's path pattern (`/api/v1/projects/:slug/builds/:id`). */
  path: string;
  /** Plain JSON Schema for `tools/list`. */
  json: Record<string, unknown>;
  /** The route call's URL parts; 422 when a path parameter is missing or not a string or number. */
  address(args: Record<string, unknown>): RouteCall;
  /** Check every argument against the route's schemas and decode them (422 with the fields). */
  decode(args: Record<string, unknown>): DecodedCall;
}

interface RouteEntry {
  method: string;
  path: string;
  hooks: { params?: unknown; query?: unknown; body?: unknown };
}

interface RouteTable {
  routes: Map<string, RouteEntry>;
  models: Record<string, TSchema>;
}

const KEY = "mcp.routes";

/** Keep the composed app's routes and models (called from the module's `onHttpApp`). */
export function rememberRoutes(core: Core, app: AnyElysia): void {
  const routes = new Map<string, RouteEntry>();
  for (const r of app.routes) routes.set(`${r.method} ${r.path}`, r as unknown as RouteEntry);
  const models = ((app as unknown as { definitions?: { type?: Record<string, TSchema> } }).definitions?.type ?? {}) as Record<string, TSchema>;
  core.locals.set(KEY, { routes, models } satisfies RouteTable);
}

/** True when the composed app has `route` (a Core built without a domain has none of its routes). */
export function hasRoute(core: Core, route: string): boolean {
  return tableOf(core).routes.has(route);
}

function tableOf(core: Core): RouteTable {
  const table = core.locals.get(KEY) as RouteTable | undefined;
  if (!table) throw new Error("the MCP tools need the HTTP app's routes: createHttpApp has not run for this core");
  return table;
}

// TypeBox keeps a schema's kind and optionality under symbols: read them untyped.
const kindOf = (s: unknown): unknown => (s as any)?.[Kind];
const isOptional = (s: unknown): boolean => (s as any)?.[OptionalKind] === "Optional";
const modelName = (ref: string) => ref.replace(/^#\/components\/schemas\//, "");

/** A model name, a `$ref`, or an optional/nullable union around one → the object schema, and whether it may be absent. */
function resolveObject(models: Record<string, TSchema>, schema: unknown, where: string): { object: TObject | null; optional: boolean } {
  if (schema === undefined) return { object: null, optional: true };
  let s: any = schema;
  let optional = false;
  for (let depth = 0; depth < 4; depth++) {
    if (typeof s === "string") s = models[s];
    else if (typeof s?.$ref === "string") s = models[modelName(s.$ref)];
    else if (kindOf(s) === "Union") {
      optional ||= isOptional(s);
      const members = (s.anyOf as unknown[]).filter((m) => kindOf(m) !== "Null");
      if (members.length !== s.anyOf.length) optional = true;
      if (members.length !== 1) break;
      s = members[0];
    } else break;
    if (s === undefined) throw new Error(`${where}: a model it names is not registered`);
  }
  optional ||= isOptional(s);
  if (kindOf(s) !== "Object") throw new Error(`${where}: not an object schema, so it cannot become tool arguments`);
  return { object: s as TObject, optional };
}

/** A path or query field the route takes as text and decodes to a number (`IntParam`, `IdParam`). */
function numberAsText(schema: unknown): boolean {
  const transform = (schema as any)?.[TransformKind];
  if (kindOf(schema) !== "String" || typeof transform?.Decode !== "function") return false;
  try {
    return typeof transform.Decode("1") === "number";
  } catch {
    return false;
  }
}

/** How `tools/list` shows a number-as-text field: an integer (the route still checks the digits and bounds). */
function integerListing(schema: TSchema): TSchema {
  return Type.Unsafe({ type: "integer", ...(schema.description ? { description: schema.description } : {}) }) as TSchema;
}

function withDescription(schema: TSchema, description: string | undefined): TSchema {
  return description && !schema.description ? ({ ...schema, description } as TSchema) : schema;
}

function required(schema: TSchema): TSchema {
  if (!isOptional(schema)) return schema;
  const { [OptionalKind]: _dropped, ...rest } = schema as any;
  return rest as TSchema;
}

/** Elysia's "a number, boolean or integer, or the same written as a string" (what a URL carries). */
const STRING_FORMS = new Set(["numeric", "integer", "boolean"]);

/**
 * Plain JSON Schema from a TypeBox schema: symbols dropped, `$ref`s inlined, and Elysia's numeric
 * fields (a number or boolean, or the same as a string) offered as the plain type a JSON caller sends.
 */
export function plainSchema(schema: TSchema, models: Record<string, TSchema> = {}): Record<string, unknown> {
  const walk = (node: unknown, depth: number): unknown => {
    if (depth > 32) throw new Error("schema nests too deeply");
    if (Array.isArray(node)) return node.map((n) => walk(n, depth + 1));
    if (!node || typeof node !== "object") return node;
    const o = node as Record<string, unknown>;
    if (typeof o.$ref === "string") {
      const target = models[modelName(o.$ref)];
      if (!target) throw new Error(`unresolved $ref ${o.$ref}`);
      return walk(target, depth + 1);
    }
    if (Array.isArray(o.anyOf)) {
      const branches = o.anyOf as Array<Record<string, unknown>>;
      const numeric = branches.findIndex((b) => b.type === "string" && STRING_FORMS.has(b.format as string));
      if (numeric >= 0 && branches.length === 2) {
        const { anyOf: _a, ...outer } = o;
        return walk({ ...branches[1 - numeric], ...outer }, depth + 1);
      }
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) out[k] = walk(v, depth + 1);
    return out;
  };
  return walk(JSON.parse(JSON.stringify(schema)), 0) as Record<string, unknown>;
}

/** The tool arguments of `route` (`"POST /api/v1/projects/:slug/builds"`). Throws when the route or a field is unknown, or two fields collide. */
export function argsOf(core: Core, route: string, opts: ArgOptions = {}): ToolArgs {
  const { routes, models } = tableOf(core);
  const entry = routes.get(route);
  if (!entry) throw new Error(`no route ${route}`);
  const rename = opts.rename ?? {};
  const fixed = opts.fixed ?? {};
  const omit = new Set(opts.omit ?? []);
  const describe = opts.describe ?? {};
  const props: Record<string, TSchema> = {};
  /** What clients are shown: the same, but number-as-text fields as integers. */
  const listed: Record<string, TSchema> = {};
  const fields = new Map<string, ArgField>();
  const seen = new Set<string>();
  const known = new Set<string>();

  const add = (origin: Origin, object: TObject | null, optional: boolean) => {
    if (!object) return;
    for (const [field, schema] of Object.entries(object.properties)) {
      known.add(field).add(`${origin}.${field}`);
      if (omit.has(field) || omit.has(`${origin}.${field}`) || field in fixed) continue;
      if (seen.has(field)) throw new Error(`${route}: the field "${field}" is in two places; omit one`);
      const name = rename[field] ?? field;
      if (props[name]) throw new Error(`${route}: two fields become the argument "${name}"`);
      let s = origin === "params" ? required(schema) : schema;
      if (optional && !isOptional(s)) s = Type.Optional(s);
      const text = origin !== "body" && numberAsText(s);
      props[name] = withDescription(s, describe[name]);
      listed[name] = withDescription(text ? (isOptional(s) ? Type.Optional(integerListing(s)) : integerListing(s)) : s, describe[name]);
      fields.set(name, { origin, field, text });
      seen.add(field);
    }
  };
  const params = resolveObject(models, entry.hooks.params, `${route} params`);
  const query = resolveObject(models, entry.hooks.query, `${route} query`);
  const body = resolveObject(models, entry.hooks.body, `${route} body`);
  add("params", params.object, false);
  add("query", query.object, false);
  add("body", body.object, body.optional);
  const pathParams = [...entry.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
  for (const p of pathParams) if (!(p in fixed) && ![...fields.values()].some((f) => f.origin === "params" && f.field === p)) throw new Error(`${route}: path parameter ${p} has no schema`);
  for (const f of [...Object.keys(fixed), ...omit]) if (!known.has(f)) throw new Error(`${route}: no field "${f}" to fix or omit`);

  const schema = Type.Object(props, { additionalProperties: false });
  const json = plainSchema(Type.Object(listed, { additionalProperties: false }), models);
  /** The arguments as the route would see them: number-as-text fields sent as numbers become their digits. */
  const asRouteSees = (args: Record<string, unknown>) => {
    const out = { ...args };
    for (const [name, f] of fields) if (f.text && typeof out[name] === "number") out[name] = String(out[name]);
    return out;
  };

  return {
    method: entry.method,
    path: entry.path,
    json,
    address(args) {
      const rawParams: Record<string, string> = { ...fixed };
      const rawQuery: Record<string, string> = {};
      for (const [name, f] of fields) {
        const v = args[name];
        if (f.origin === "params") {
          if (typeof v !== "string" && typeof v !== "number") throw new OpsError("validation_failed", `${name}: required, a string.`, { fields: [{ path: name, message: "required" }] });
          rawParams[f.field] = String(v);
        } else if (f.origin === "query" && v !== undefined && v !== null && typeof v !== "object") rawQuery[f.field] = String(v);
      }
      return { rawParams, rawQuery };
    },
    decode(given) {
      const args = asRouteSees(given);
      if (!Value.Check(schema, args)) {
        const problems = [...Value.Errors(schema, args)].slice(0, 8).map((e) => ({ path: e.path.replace(/^\//, "").replace(/\//g, ".") || "(arguments)", message: e.message }));
        const first = problems[0];
        throw new OpsError("validation_failed", `${first.path}: ${first.message}.`, { fields: problems });
      }
      const decoded = Value.Decode(schema, args) as Record<string, unknown>;
      const out: DecodedCall = { params: { ...fixed }, query: {}, body: body.object ? {} : undefined };
      for (const [name, f] of fields) {
        if (decoded[name] === undefined) continue;
        (out[f.origin] as Record<string, unknown>)[f.field] = decoded[name];
      }
      if (out.body && body.optional && Object.keys(out.body).length === 0) out.body = undefined;
      return out;
    },
  };
}
