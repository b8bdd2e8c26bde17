/**
 * What a tool is, and how one call runs. A tool is the MCP face of one API route: it names the
 * route, takes that route's fields as arguments (route-schemas.ts), is authorized by the same
 * `authorize` the route's `permission` macro runs — with the route's permission spec, its
 * method and the path the call stands for, so the scope, the environment policies, the `denied`
 * audit row and the audited reads are the route's own — and then calls the service function the
 * route's handler calls. No rule lives here: a refusal is the service's or the macro's.
 *
 * A call's result is a short sentence, the structured result, and (as the MCP specification asks
 * for clients that read only text) the same result as JSON text. A refusal or any other error is
 * a tool error (`isError: true`) with the reason; an internal failure is logged and never shown.
 */
import type { Core, ProjectRef } from "../../core/core";
import { authorize, type AuthContext, type PermissionSpec } from "../../core/authz/plugin";
import type { Principal, RequestMeta } from "../../core/authz/principal";
import { normaliseError, toErrorBody } from "../../core/errors";
import { argsOf, type ArgOptions, type DecodedCall, type ToolArgs } from "./route-schemas";

/** MCP tool annotations (hints for the client's confirmations; never trusted for security). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A read: changes nothing. */
export const READS: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
/** A change of state; `destructive` when it replaces or stops something, `idempotent` when repeating it changes nothing more. */
export const changes = (destructive: boolean, idempotent: boolean): ToolAnnotations => ({ readOnlyHint: false, destructiveHint: destructive, idempotentHint: idempotent, openWorldHint: false });

/** One call, after authorization and validation. */
export interface ToolCall extends DecodedCall {
  core: Core;
  auth: AuthContext;
  /** The project the route acts in (routes with a `:slug`). */
  project: ProjectRef;
}

export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  /** The API route this tool stands for, as the app registers it: `"POST /api/v1/projects/:slug/builds"`. */
  route: string;
  args?: ArgOptions;
  /** The route's permission spec (its key is held equal to the route's by a test; resolvers are the route's own functions). */
  permission: PermissionSpec | ((core: Core) => PermissionSpec);
  annotations: ToolAnnotations;
  run(call: ToolCall): unknown | Promise<unknown>;
  /** One short sentence about the result, for a person reading the conversation. */
  text(result: any, call: ToolCall): string;
}

/** The caller of one MCP request: who, and the HTTP request's meta (address, request id). */
export interface Caller {
  principal: Principal;
  meta: RequestMeta;
}

export interface CompiledTool {
  spec: ToolSpec;
  args: ToolArgs;
  permission: PermissionSpec;
  /** As `tools/list` shows it. */
  listing: { name: string; title: string; description: string; inputSchema: Record<string, unknown>; annotations: ToolAnnotations };
}

export function compileTool(core: Core, spec: ToolSpec): CompiledTool {
  const args = argsOf(core, spec.route, spec.args);
  return {
    spec,
    args,
    permission: typeof spec.permission === "function" ? spec.permission(core) : spec.permission,
    listing: { name: spec.name, title: spec.title, description: spec.description, inputSchema: args.json, annotations: { title: spec.title, ...spec.annotations } },
  };
}

/** The API path a call stands for (the audit target of its refusal, as the route's would be). */
export function pathFor(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => encodeURIComponent(params[name] ?? ""));
}

/** Authorize a call as the route would be: the route's method, the path and query it stands for, its spec. */
export async function authorizeAs(core: Core, tool: Pick<CompiledTool, "args" | "permission">, raw: { rawParams: Record<string, string>; rawQuery: Record<string, string> }, caller: Caller): Promise<AuthContext> {
  const search = new URLSearchParams(raw.rawQuery).toString();
  const url = `${core.config.publicUrl}${pathFor(tool.args.path, raw.rawParams)}${search ? `?${search}` : ""}`;
  const request = new Request(url, { method: tool.args.method });
  return await authorize(core, { principal: caller.principal, meta: caller.meta, request, params: raw.rawParams, query: raw.rawQuery }, tool.permission);
}

export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: "text"; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A tool error from anything thrown: the public message (an internal cause is logged, never shown). */
export function errorResult(core: Core, err: unknown, context: Record<string, unknown>): ToolResult {
  const n = normaliseError(err);
  if (n.internal) core.log.error("mcp tool failed", { ...context, err });
  const body = toErrorBody(n);
  return { isError: true, content: [{ type: "text", text: n.message }], structuredContent: { ...body, status: n.status } };
}

/**
 * Call a tool's service for `caller` as its route would: authorize (the route's 401/403/404 and
 * audit), validate the arguments, run. Throws what the route would answer with; resources read
 * through this too.
 */
export async function invoke(core: Core, tool: CompiledTool, args: Record<string, unknown>, caller: Caller): Promise<{ result: unknown; call: ToolCall }> {
  const raw = tool.args.address(args);
  const auth = await authorizeAs(core, tool, raw, caller);
  const decoded = tool.args.decode(args);
  const call: ToolCall = { ...decoded, core, auth, project: auth.project as ProjectRef };
  return { result: await tool.spec.run(call), call };
}

/** Run one tool call for `caller`: the result as a tool result, a refusal or failure as a tool error. */
export async function runTool(core: Core, tool: CompiledTool, args: Record<string, unknown>, caller: Caller): Promise<ToolResult> {
  try {
    const { result, call } = await invoke(core, tool, args, caller);
    const structured = structure(result);
    return {
      content: [
        { type: "text", text: tool.spec.text(result, call) },
        { type: "text", text: JSON.stringify(structured) },
      ],
      structuredContent: structured,
    };
  } catch (e) {
    return errorResult(core, e, { tool: tool.spec.name, req: caller.meta.requestId });
  }
}

/** Structured content is an object: a list becomes `{items}`, nothing becomes `{ok: true}`. */
function structure(result: unknown): Record<string, unknown> {
  if (result === undefined || result === null) return { ok: true };
  if (Array.isArray(result)) return { items: result };
  if (typeof result === "object") return result as Record<string, unknown>;
  return { value: result };
}

/** "3 builds", "1 build". */
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
/** `environment` of a call, as the route defaults it. */
export const envOf = (call: ToolCall) => call.auth.environment ?? (call.query.environment as string | undefined) ?? "production";
